// RUN: maia-opt %s -maia-math-to-libm -split-input-file | FileCheck %s

// float64 math becomes libm calls, vectors lane by lane.
// CHECK-DAG: func.func private @sinh(f64) -> f64
// CHECK-DAG: func.func private @atan2(f64, f64) -> f64
// CHECK-LABEL: func.func @f64_math(
// CHECK-COUNT-2: call @sinh({{.*}}) : (f64) -> f64
// CHECK: call @atan2({{.*}}) : (f64, f64) -> f64
// CHECK-NOT: math.
func.func @f64_math(%v: vector<2xf64>, %s: f64) -> (vector<2xf64>, f64) {
  %a = math.sinh %v : vector<2xf64>
  %b = math.atan2 %s, %s : f64
  return %a, %b : vector<2xf64>, f64
}

// -----

// float64 ops that are one vector instruction stay math ops (LLVM
// intrinsics), whatever the shape.
// CHECK-LABEL: func.func @f64_instructions(
// CHECK: math.fma
// CHECK: math.roundeven
// CHECK: math.floor
// CHECK: math.sqrt
// CHECK-NOT: call
func.func @f64_instructions(%v: vector<4xf64>) -> vector<4xf64> {
  %a = math.fma %v, %v, %v : vector<4xf64>
  %b = math.roundeven %a : vector<4xf64>
  %c = math.floor %b : vector<4xf64>
  %d = math.sqrt %c : vector<4xf64>
  return %d : vector<4xf64>
}

// -----

// float32 and integer math is left alone: it has approximations or lowers
// to LLVM directly.
// CHECK-LABEL: func.func @other_math(
// CHECK: math.copysign
// CHECK: math.absi
// CHECK: math.sinh
// CHECK-NOT: call
func.func @other_math(%v: vector<16xf32>, %i: vector<16xi8>, %s: f32)
    -> (vector<16xf32>, vector<16xi8>, f32) {
  %a = math.copysign %v, %v : vector<16xf32>
  %b = math.absi %i : vector<16xi8>
  %c = math.sinh %s : f32
  return %a, %b, %c : vector<16xf32>, vector<16xi8>, f32
}

// -----

// f32 math that maia-approximate-math left to libm (its slow paths) becomes
// calls of the float functions.
// CHECK-DAG: func.func private @sinf(f32) -> f32
// CHECK-DAG: func.func private @cosf(f32) -> f32
// CHECK-LABEL: func.func @marked_f32_math(
// CHECK-COUNT-2: call @sinf({{.*}}) : (f32) -> f32
// CHECK: call @cosf({{.*}}) : (f32) -> f32
// CHECK-NOT: math.
func.func @marked_f32_math(%v: vector<2xf32>, %s: f32) -> (vector<2xf32>, f32) {
  %a = math.sin %v {maia.libm} : vector<2xf32>
  %b = math.cos %s {maia.libm} : f32
  return %a, %b : vector<2xf32>, f32
}
