func.func @k(%x: memref<?xf32>) {
  return
}
