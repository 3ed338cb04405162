// Row reduction: out[r] = sum(x[r, :]). One program per row, vectors of 16
// with a masked tail.
func.func @row_sum(%x: memref<?x?xf32, strided<[?, 1], offset: ?>>,
                   %out: memref<?xf32>) attributes {maia.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  %vzero = vector.broadcast %zero : f32 to vector<16xf32>
  %row = maia.program_id 0
  %n = memref.dim %x, %c1 : memref<?x?xf32, strided<[?, 1], offset: ?>>
  %acc = scf.for %i = %c0 to %n step %c16 iter_args(%a = %vzero) -> vector<16xf32> {
    %v = vector.transfer_read %x[%row, %i], %zero : memref<?x?xf32, strided<[?, 1], offset: ?>>, vector<16xf32>
    %s = arith.addf %a, %v : vector<16xf32>
    scf.yield %s : vector<16xf32>
  }
  %sum = vector.reduction <add>, %acc : vector<16xf32> into f32
  memref.store %sum, %out[%row] : memref<?xf32>
  return
}
