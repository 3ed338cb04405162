func.func private @helper(%x: f32) -> f32 {
  return %x : f32
}
