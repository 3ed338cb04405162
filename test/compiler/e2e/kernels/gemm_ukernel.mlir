// A kernel calling the GEMM micro-kernel library (runtime/kernels/ukernels),
// which maia-compile links in: the shape of maia_inductor's GEMM template
// kernels, in small.
//
// @gemm_relu: C = relu(A @ B), A [M, K] row-major, B [K, N] with strides
// (b_rs, b_cs) (a transposed B: (1, K)), C [M, N] row-major. Each program
// takes a block of rows: the micro-kernel writes its tile of C, then the
// epilogue (relu) rewrites the same tile.
func.func private @maia_ukernel_gemm_f32(memref<?xf32>, index, index, index,
                                         memref<?xf32>, index, index, index,
                                         memref<?xf32>, index, index, index,
                                         index, index, index, index, index)

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
  %rows = arith.subi %row1, %row0 : index
  func.call @maia_ukernel_gemm_f32(%a, %c0, %k, %c1, %b, %c0, %b_rs, %b_cs,
                                   %c, %c0, %n, %c1, %k, %row0, %rows, %c0, %n)
      : (memref<?xf32>, index, index, index, memref<?xf32>, index, index, index,
         memref<?xf32>, index, index, index, index, index, index, index, index) -> ()
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
