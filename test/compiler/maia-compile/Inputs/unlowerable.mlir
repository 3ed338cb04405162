func.func @k(%x: memref<16xf32>) attributes {maia.kernel} {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %v = vector.transfer_read %x[%c0], %pad : memref<16xf32>, vector<16xf32>
  %init = vector.broadcast %pad : f32 to vector<f32>
  %s, %t = vector.scan <add>, %v, %init {inclusive = true, reduction_dim = 0} : vector<16xf32>, vector<f32>
  vector.transfer_write %s, %x[%c0] : vector<16xf32>, memref<16xf32>
  return
}
