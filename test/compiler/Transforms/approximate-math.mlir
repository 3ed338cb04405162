// RUN: maia-opt %s -maia-approximate-math | FileCheck %s

// Vector math becomes arithmetic on the same vector type: no calls, no
// scalarization.
// CHECK-LABEL: func.func @vector_math
// CHECK-NOT: math.exp
// CHECK-NOT: math.tanh
// CHECK-NOT: math.log
// CHECK-NOT: math.erf
// CHECK: math.fma {{.*}} : vector<16xf32>
// CHECK: return
func.func @vector_math(%x: vector<16xf32>) -> vector<16xf32> {
  %e = math.exp %x : vector<16xf32>
  %t = math.tanh %e : vector<16xf32>
  %l = math.log %t : vector<16xf32>
  %r = math.erf %l : vector<16xf32>
  return %r : vector<16xf32>
}

// Scalars too; powf by a small constant becomes multiplications.
// CHECK-LABEL: func.func @scalar_math
// CHECK-NOT: math.exp
// CHECK-NOT: math.powf
// CHECK: arith.mulf
// CHECK: return
func.func @scalar_math(%x: f32) -> f32 {
  %e = math.exp %x : f32
  %two = arith.constant 2.0 : f32
  %p = math.powf %e, %two : f32
  return %p : f32
}

// f16 goes through f32.
// CHECK-LABEL: func.func @half
// CHECK: arith.extf {{.*}} : vector<8xf16> to vector<8xf32>
// CHECK-NOT: math.exp
// CHECK: arith.truncf {{.*}} : vector<8xf32> to vector<8xf16>
func.func @half(%x: vector<8xf16>) -> vector<8xf16> {
  %e = math.exp %x : vector<8xf16>
  return %e : vector<8xf16>
}

// RUN: maia-opt %s -maia-approximate-math -verify-diagnostics -o /dev/null

// f64 has no approximation upstream: a warning says it will be scalarized.
func.func @f64_vector(%x: vector<8xf64>) -> vector<8xf64> {
  // expected-warning @+1 {{'math.exp' on 'vector<8xf64>' has no vector approximation: it becomes one scalar libm call per lane}}
  %e = math.exp %x : vector<8xf64>
  // Native instructions: no warning.
  %s = math.sqrt %e : vector<8xf64>
  return %s : vector<8xf64>
}
