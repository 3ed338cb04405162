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

// maia's own approximations: hyperbolic and inverse functions that upstream
// leaves (they would not lower to LLVM), and asin/acos/atan/atan2 more
// accurate than upstream's; none of them is left as a math op but the libm
// calls of tan for arguments beyond its range reduction (below).
// CHECK-LABEL: func.func @maia_approximations
// CHECK-NOT: math.sinh
// CHECK-NOT: math.cosh
// CHECK-NOT: math.tan %{{[a-z0-9_]+}} :
// CHECK-NOT: math.asinh
// CHECK-NOT: math.acosh
// CHECK-NOT: math.atanh
// CHECK-NOT: math.asin
// CHECK-NOT: math.acos
// CHECK-NOT: math.atan
// CHECK-NOT: math.exp
// CHECK-NOT: math.log
// CHECK-NOT: math.sin %{{[a-z0-9_]+}} :
// CHECK-NOT: math.cos %{{[a-z0-9_]+}} :
// CHECK-NOT: maia.reduced
// CHECK: return
func.func @maia_approximations(%x: vector<16xf32>, %y: vector<16xf32>) -> vector<16xf32> {
  %0 = math.sinh %x : vector<16xf32>
  %1 = math.cosh %0 : vector<16xf32>
  %2 = math.tan %1 : vector<16xf32>
  %3 = math.asinh %2 : vector<16xf32>
  %4 = math.acosh %3 : vector<16xf32>
  %5 = math.atanh %4 : vector<16xf32>
  %6 = math.asin %5 : vector<16xf32>
  %7 = math.acos %6 : vector<16xf32>
  %8 = math.atan %7 : vector<16xf32>
  %9 = math.atan2 %8, %y : vector<16xf32>
  return %9 : vector<16xf32>
}

// asin: |x| > 1/2 through sqrt((1 - |x|)/2) (accurate up to +-1), in f64.
// CHECK-LABEL: func.func @asin_scalar
// CHECK: arith.cmpf ogt, %{{.*}}, %{{.*}} : f64
// CHECK: math.sqrt {{.*}} : f64
// CHECK: math.copysign
// CHECK-NOT: math.asin
func.func @asin_scalar(%x: f32) -> f32 {
  %0 = math.asin %x : f32
  return %0 : f32
}

// exp computes in f32, no f64 anywhere: 2^n in two halves (near-overflow
// and subnormal results scale with one rounding); below -104 the result is
// selected 0 and computed from 0 (no subnormal arithmetic: x86 microcode
// assists); NaN is selected, never converted.
// CHECK-LABEL: func.func @exp_in_f32
// CHECK-NOT: f64
// CHECK: %[[ZERO:.*]] = arith.cmpf olt
// CHECK: arith.select %[[ZERO]], %{{.*}} : vector<16xi1>, vector<16xf32>
// CHECK: math.roundeven %{{.*}} : vector<16xf32>
// CHECK: arith.fptosi %{{.*}} : vector<16xf32> to vector<16xi32>
// CHECK: arith.shrsi %{{.*}} : vector<16xi32>
// CHECK-COUNT-2: arith.shli %{{.*}} : vector<16xi32>
// CHECK: arith.cmpf uno
// CHECK: arith.select %[[ZERO]]
// CHECK-NOT: f64
// CHECK-NOT: math.exp
// CHECK: return
func.func @exp_in_f32(%x: vector<16xf32>) -> vector<16xf32> {
  %e = math.exp %x : vector<16xf32>
  return %e : vector<16xf32>
}

// erf computes in f32, no f64: a + a q(a^2) below 1 (q of degree 6, one
// fma adds a), 1 - erfc(a) on [1, 4] (erfc of degree 14 in a - 2.5, the
// argument clamped, NaN kept), 1 beyond, the sign copied last.
// CHECK-LABEL: func.func @erf_in_f32
// CHECK-NOT: f64
// CHECK: %[[A:.*]] = math.absf %[[X:[^ ]*]] : vector<16xf32>
// CHECK: %[[Z:.*]] = arith.mulf %[[A]], %[[A]] : vector<16xf32>
// CHECK-COUNT-6: math.fma %{{.*}}, %[[Z]], %{{.*}} : vector<16xf32>
// CHECK: %[[NEAR_ZERO:.*]] = math.fma %[[A]], %{{.*}}, %[[A]] : vector<16xf32>
// CHECK: arith.maximumf %[[A]]
// CHECK: arith.minimumf
// CHECK: %[[T:.*]] = arith.subf
// CHECK-COUNT-14: math.fma %{{.*}}, %[[T]], %{{.*}} : vector<16xf32>
// CHECK: %[[NEAR_ONE:.*]] = arith.subf
// CHECK: %[[SMALL:.*]] = arith.cmpf olt, %[[A]]
// CHECK: %[[R:.*]] = arith.select %[[SMALL]], %[[NEAR_ZERO]], %[[NEAR_ONE]]
// CHECK: %[[LARGE:.*]] = arith.cmpf ogt, %[[A]]
// CHECK: %[[S:.*]] = arith.select %[[LARGE]], %{{.*}}, %[[R]]
// CHECK: math.copysign %[[S]], %[[X]] : vector<16xf32>
// CHECK-NOT: f64
// CHECK-NOT: math.erf
// CHECK: return
func.func @erf_in_f32(%x: vector<16xf32>) -> vector<16xf32> {
  %e = math.erf %x : vector<16xf32>
  return %e : vector<16xf32>
}

// log scales subnormals by 2^24 (upstream's polynomial reads their
// exponent as -126).
// CHECK-LABEL: func.func @subnormal_log
// CHECK: arith.constant dense<0x4B800000> : vector<16xf32>
// CHECK-NOT: math.log
// CHECK: return
func.func @subnormal_log(%x: vector<16xf32>) -> vector<16xf32> {
  %l = math.log %x : vector<16xf32>
  return %l : vector<16xf32>
}

// Functions whose f32 evaluation would lose more than 1 ulp compute in f64
// from the f32 argument, with f64 arithmetic only (no math op on f64 but
// vector instructions), and round once.
// CHECK-LABEL: func.func @float64_cores
// CHECK-NOT: math.tanh
// CHECK-NOT: maia.erfc
// CHECK-NOT: math.log1p
// CHECK-NOT: math.log10
// CHECK-NOT: math.expm1
// CHECK-NOT: math.{{(exp|log|tanh|erf|atan|asin)}} {{.*}}f64
// CHECK: return
func.func @float64_cores(%x: vector<16xf32>) -> vector<16xf32> {
  %0 = math.tanh %x : vector<16xf32>
  %1 = math.sqrt %0 : vector<16xf32>
  %2 = maia.erfc %1 : vector<16xf32>
  %3 = math.log1p %2 : vector<16xf32>
  %4 = math.log10 %3 : vector<16xf32>
  %5 = math.expm1 %4 : vector<16xf32>
  return %5 : vector<16xf32>
}

// maia.erfc on bf16 computes in f32 (and so in f64).
// CHECK-LABEL: func.func @half_erfc
// CHECK: arith.extf {{.*}} : vector<8xbf16> to vector<8xf32>
// CHECK-NOT: maia.erfc
// CHECK: arith.truncf {{.*}} : vector<8xf32> to vector<8xbf16>
func.func @half_erfc(%x: vector<8xbf16>) -> vector<8xbf16> {
  %0 = maia.erfc %x : vector<8xbf16>
  return %0 : vector<8xbf16>
}

// f16 and bf16 compute maia's approximations in f32.
// CHECK-LABEL: func.func @half_sinh
// CHECK: arith.extf {{.*}} : vector<8xbf16> to vector<8xf32>
// CHECK-NOT: math.sinh
// CHECK: arith.truncf {{.*}} : vector<8xf32> to vector<8xbf16>
func.func @half_sinh(%x: vector<8xbf16>) -> vector<8xbf16> {
  %0 = math.sinh %x : vector<8xbf16>
  return %0 : vector<8xbf16>
}

// Not f32-like (f64, tensors): left alone, no crash.
// CHECK-LABEL: func.func @left_alone
// CHECK: math.sinh {{.*}} : f64
// CHECK: math.asin {{.*}} : tensor<4xf32>
func.func @left_alone(%x: f64, %t: tensor<4xf32>) -> (f64, tensor<4xf32>) {
  %0 = math.sinh %x : f64
  %1 = math.asin %t : tensor<4xf32>
  return %0, %1 : f64, tensor<4xf32>
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

// sin/cos: lanes beyond the three-part reduction (|x| > 2^17, inf) take
// libm's sinf/cosf, behind a branch taken only when some lane needs it.
// CHECK-LABEL: func.func @sin_of_large_arguments
// CHECK: %[[ABS:.*]] = math.absf %[[X:.*]] : vector<16xf32>
// CHECK: %[[BEYOND:.*]] = arith.cmpf ogt, %[[ABS]], %{{.*}} : vector<16xf32>
// CHECK: %[[ANY:.*]] = vector.reduction <or>, %[[BEYOND]] : vector<16xi1> into i1
// CHECK: scf.if %[[ANY]] -> (vector<16xf32>) {
// CHECK:   %[[EXACT:.*]] = math.sin %[[X]] {maia.libm} : vector<16xf32>
// CHECK:   %[[MIXED:.*]] = arith.select %[[BEYOND]], %[[EXACT]], %{{.*}}
// CHECK:   scf.yield %[[MIXED]]
// CHECK: } else {
// CHECK:   scf.yield
// CHECK-NOT: math.sin
// CHECK: return
func.func @sin_of_large_arguments(%x: vector<16xf32>) -> vector<16xf32> {
  %0 = math.sin %x : vector<16xf32>
  return %0 : vector<16xf32>
}

// A scalar needs no reduction over lanes.
// CHECK-LABEL: func.func @cos_scalar
// CHECK: %[[BEYOND:.*]] = arith.cmpf ogt
// CHECK-NOT: vector.reduction
// CHECK: scf.if %[[BEYOND]] -> (f32)
// CHECK: math.cos %{{.*}} {maia.libm} : f32
func.func @cos_scalar(%x: f32) -> f32 {
  %0 = math.cos %x : f32
  return %0 : f32
}

// tan likewise: f64 reduction and polynomials, libm's tanf beyond 2^17.
// CHECK-LABEL: func.func @tan_of_large_arguments
// CHECK: scf.if %{{.*}} -> (vector<16xf32>) {
// CHECK:   math.tan %{{.*}} {maia.libm} : vector<16xf32>
func.func @tan_of_large_arguments(%x: vector<16xf32>) -> vector<16xf32> {
  %0 = math.tan %x : vector<16xf32>
  return %0 : vector<16xf32>
}
