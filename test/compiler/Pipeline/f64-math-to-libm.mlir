// RUN: maia-opt %s -maia-lower-to-llvm | FileCheck %s

// float64 math has no polynomial approximation: the pipeline calls libm,
// lane by lane for vectors, instead of leaving an op LLVM cannot lower.
// CHECK-DAG: llvm.func @sinh(f64) -> f64
// CHECK-DAG: llvm.func @atan2(f64, f64) -> f64
// CHECK-LABEL: llvm.func @f64_math(
// CHECK-NOT: math.
// CHECK: llvm.call @sinh({{.*}}) : (f64) -> f64
// CHECK: llvm.call @atan2({{.*}}) : (f64, f64) -> f64
// CHECK: llvm.return
func.func @f64_math(%x: memref<?xf64>, %y: memref<?xf64>) attributes {maia.kernel} {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f64
  %v = vector.transfer_read %x[%c0], %zero : memref<?xf64>, vector<4xf64>
  %s = math.sinh %v : vector<4xf64>
  %a = math.atan2 %s, %v : vector<4xf64>
  vector.transfer_write %a, %y[%c0] : vector<4xf64>, memref<?xf64>
  return
}
