// A kernel calling the GEMM micro-kernel library (runtime/kernels/ukernels),
// which maia-compile links in: the shape of maia_inductor's GEMM template
// kernels, in small.
//
// @gemm_relu: C = relu(A @ B), A [M, K] row-major, B [K, N] with strides
// (b_rs, b_cs) (a transposed B: (1, K)), C [M, N] row-major. Each program
// takes a share of the rows: the micro-kernel writes it block by block,
// then the epilogue (relu) rewrites the share.
func.func private @maia_ukernel_gemm_f32(memref<?xf32>, index, index, index,
                                         memref<?xf32>, index, index, index,
                                         memref<?xf32>, index, index, index,
                                         index, index, index, index, index, index)

func.func @gemm_relu(%a: memref<?xf32>, %b: memref<?xf32>, %c: memref<?xf32>,
                     %m: index, %n: index, %k: index, %b_rs: index, %b_cs: index)
    attributes {maia.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %pid = maia.program_id 0
  %nprog = maia.num_programs 0
  %lo = arith.muli %pid, %m : index
  %row0 = arith.divsi %lo, %nprog : index
  %pid1 = arith.addi %pid, %c1 : index
  %hi = arith.muli %pid1, %m : index
  %row1 = arith.divsi %hi, %nprog : index
  // Blocks of 20 rows: after the first, the micro-kernel reuses its
  // packed panel of B (reuse_b = rb - row0, nonzero).
  %block = arith.constant 20 : index
  scf.for %rb = %row0 to %row1 step %block {
    %rb_next = arith.addi %rb, %block : index
    %rb_stop = arith.minsi %rb_next, %row1 : index
    %rb_rows = arith.subi %rb_stop, %rb : index
    %reuse = arith.subi %rb, %row0 : index
    func.call @maia_ukernel_gemm_f32(%a, %c0, %k, %c1, %b, %c0, %b_rs, %b_cs,
                                     %c, %c0, %n, %c1, %k, %rb, %rb_rows, %c0, %n, %reuse)
        : (memref<?xf32>, index, index, index, memref<?xf32>, index, index, index,
           memref<?xf32>, index, index, index, index, index, index, index, index, index) -> ()
  }
  scf.for %i = %row0 to %row1 step %c1 {
    scf.for %j = %c0 to %n step %c1 {
      %row_base = arith.muli %i, %n : index
      %at = arith.addi %row_base, %j : index
      %v = memref.load %c[%at] : memref<?xf32>
      %r = arith.maximumf %v, %zero : f32
      memref.store %r, %c[%at] : memref<?xf32>
    }
  }
  return
}
