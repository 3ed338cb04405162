// RUN: maia-opt %s -maia-lower-to-llvm | FileCheck %s

// The whole pipeline: only the LLVM dialect remains, the entry point has the
// MAIA ABI, the row loop works on 16-wide vectors (masked at the tail) and
// no math function is called (exp computes in f32 vectors).
// CHECK-LABEL: llvm.func @softmax(
// CHECK-SAME: %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr)
// CHECK-NOT: llvm.call
// CHECK-NOT: math.
// CHECK-NOT: memref.
// CHECK-NOT: vector.
// CHECK-NOT: scf.
// CHECK-NOT: maia.
// CHECK: llvm.intr.masked.load {{.*}} -> vector<16xf32>
// CHECK: llvm.intr.fma({{.*}}) : (vector<16xf32>, vector<16xf32>, vector<16xf32>) -> vector<16xf32>
// CHECK: llvm.intr.masked.store
// CHECK-NOT: llvm.call
// CHECK: llvm.return
func.func @softmax(%x: memref<?x?xf32, strided<[?, 1], offset: ?>>,
                   %y: memref<?x?xf32, strided<[?, 1], offset: ?>>)
    attributes {maia.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %ninf = arith.constant 0xFF800000 : f32
  %row = maia.program_id 0
  %n = memref.dim %x, %c1 : memref<?x?xf32, strided<[?, 1], offset: ?>>
  scf.for %i = %c0 to %n step %c16 {
    %v = vector.transfer_read %x[%row, %i], %ninf : memref<?x?xf32, strided<[?, 1], offset: ?>>, vector<16xf32>
    %e = math.exp %v : vector<16xf32>
    vector.transfer_write %e, %y[%row, %i] : vector<16xf32>, memref<?x?xf32, strided<[?, 1], offset: ?>>
  }
  return
}
