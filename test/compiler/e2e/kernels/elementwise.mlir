// Elementwise kernels.
//
// @tanh_exp_axpy: out = tanh(a) + s * exp(b), contiguous 1-D, blocks of 1024
// elements per program, vectors of 16 with masked tails.
func.func @tanh_exp_axpy(%a: memref<?xf32>, %b: memref<?xf32>,
                         %out: memref<?xf32>, %s: f32) attributes {maia.kernel} {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %block = arith.constant 1024 : index
  %zero = arith.constant 0.0 : f32
  %pid = maia.program_id 0
  %n = memref.dim %out, %c0 : memref<?xf32>
  %start = arith.muli %pid, %block : index
  %stop = arith.addi %start, %block : index
  %end = arith.minsi %stop, %n : index
  %vs = vector.broadcast %s : f32 to vector<16xf32>
  scf.for %i = %start to %end step %c16 {
    %va = vector.transfer_read %a[%i], %zero : memref<?xf32>, vector<16xf32>
    %vb = vector.transfer_read %b[%i], %zero : memref<?xf32>, vector<16xf32>
    %t = math.tanh %va : vector<16xf32>
    %e = math.exp %vb : vector<16xf32>
    %r = math.fma %vs, %e, %t : vector<16xf32>
    vector.transfer_write %r, %out[%i] : vector<16xf32>, memref<?xf32>
  }
  return
}

// @scale_shift_2d: out[r, c] = x[r, c] * alpha + beta for any strides of x
// (e.g. a transposed view), one program per row, scalar code.
func.func @scale_shift_2d(%x: memref<?x?xf32, strided<[?, ?], offset: ?>>,
                          %out: memref<?x?xf32>, %alpha: f32, %beta: f32)
    attributes {maia.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %row = maia.program_id 0
  %cols = memref.dim %out, %c1 : memref<?x?xf32>
  scf.for %c = %c0 to %cols step %c1 {
    %v = memref.load %x[%row, %c] : memref<?x?xf32, strided<[?, ?], offset: ?>>
    %r = math.fma %v, %alpha, %beta : f32
    memref.store %r, %out[%row, %c] : memref<?x?xf32>
  }
  return
}
