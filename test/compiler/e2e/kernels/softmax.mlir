// Row softmax: y[r, :] = exp(x[r, :] - max) / sum(exp(x[r, :] - max)).
// One program per row; rows are contiguous (unit inner stride), the row
// stride is dynamic. Vectors of 16 f32 (one AVX-512 register); the tail of a
// row is handled by masked transfers.
func.func @softmax(%x: memref<?x?xf32, strided<[?, 1], offset: ?>>,
                   %y: memref<?x?xf32, strided<[?, 1], offset: ?>>)
    attributes {maia.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %vninf = vector.broadcast %ninf : f32 to vector<16xf32>
  %vzero = vector.broadcast %zero : f32 to vector<16xf32>
  %row = maia.program_id 0
  %n = memref.dim %x, %c1 : memref<?x?xf32, strided<[?, 1], offset: ?>>

  // Row maximum; compare+select (a maximumf reduction lowers to a slow
  // serial chain).
  %vmax = scf.for %i = %c0 to %n step %c16 iter_args(%acc = %vninf) -> vector<16xf32> {
    %v = vector.transfer_read %x[%row, %i], %ninf : memref<?x?xf32, strided<[?, 1], offset: ?>>, vector<16xf32>
    %gt = arith.cmpf ogt, %v, %acc : vector<16xf32>
    %m = arith.select %gt, %v, %acc : vector<16xi1>, vector<16xf32>
    scf.yield %m : vector<16xf32>
  }
  %max = vector.reduction <maxnumf>, %vmax : vector<16xf32> into f32
  %bmax = vector.broadcast %max : f32 to vector<16xf32>

  // e = exp(x - max), stored into y; their sum (lanes past the end count 0).
  %vsum = scf.for %i = %c0 to %n step %c16 iter_args(%acc = %vzero) -> vector<16xf32> {
    %v = vector.transfer_read %x[%row, %i], %ninf : memref<?x?xf32, strided<[?, 1], offset: ?>>, vector<16xf32>
    %d = arith.subf %v, %bmax : vector<16xf32>
    %e = math.exp %d : vector<16xf32>
    vector.transfer_write %e, %y[%row, %i] : vector<16xf32>, memref<?x?xf32, strided<[?, 1], offset: ?>>
    %left = arith.subi %n, %i : index
    %mask = vector.create_mask %left : vector<16xi1>
    %live = arith.select %mask, %e, %vzero : vector<16xi1>, vector<16xf32>
    %s = arith.addf %acc, %live : vector<16xf32>
    scf.yield %s : vector<16xf32>
  }
  %sum = vector.reduction <add>, %vsum : vector<16xf32> into f32
  %inv = arith.divf %one, %sum : f32
  %binv = vector.broadcast %inv : f32 to vector<16xf32>

  scf.for %i = %c0 to %n step %c16 {
    %e = vector.transfer_read %y[%row, %i], %zero : memref<?x?xf32, strided<[?, 1], offset: ?>>, vector<16xf32>
    %p = arith.mulf %e, %binv : vector<16xf32>
    vector.transfer_write %p, %y[%row, %i] : vector<16xf32>, memref<?x?xf32, strided<[?, 1], offset: ?>>
  }
  return
}
