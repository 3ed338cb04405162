func.func @f(%out: memref<?xf32>) attributes {maia.kernel} {
  %n = memref.dim %out, %c0 : memref<?xf32>
  scf.for %i = %start to %end step %c16 {
  }
}
func.func @g() {
  %c0 = arith.constant 0 : index
