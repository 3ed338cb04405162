// RUN: maia-opt %s -maia-lower-to-llvm | FileCheck %s

// f32 -> bf16 rounds in integer arithmetic (PyTorch's round-to-nearest-even,
// NaN kept quiet): LLVM's fptrunc to bfloat becomes AVX512-BF16's
// vcvtneps2bf16 on hosts that have it, which flushes subnormals to zero.
// CHECK-LABEL: llvm.func @to_bf16
// CHECK-NOT: llvm.fptrunc
// CHECK: llvm.bitcast %{{.*}} : vector<16xf32> to vector<16xi32>
// CHECK: llvm.lshr
// CHECK: llvm.trunc %{{.*}} : vector<16xi32> to vector<16xi16>
// CHECK-NOT: llvm.fptrunc
func.func @to_bf16(%x: vector<16xf32>) -> vector<16xbf16> {
  %0 = arith.truncf %x : vector<16xf32> to vector<16xbf16>
  return %0 : vector<16xbf16>
}
