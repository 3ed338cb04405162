func.func @k(%x: f32) attributes {maia.kernel} {
  vector.print %x : f32
  return
}
