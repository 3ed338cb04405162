func.func @k(%x: memref<?xf32>) attributes {maia.kernel} {
  %0 = arith.addf %x, : f32
