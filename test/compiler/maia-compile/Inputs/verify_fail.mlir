func.func @k(%x: memref<?xf32>) attributes {maia.kernel} {
  %c0 = arith.constant 0 : index
  %v = memref.load %x[%c0] : memref<?xf32>
  %w = arith.addi %v, %v : f32
  return
}
