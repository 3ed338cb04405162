// exp for the elementwise loops, in arithmetic the compiler vectorizes.
//
// std::exp is a libm call per element: no loop that calls it vectorizes
// (eager exp of 4M floats ran 6.5x slower than the CPU's). The float
// version is the algorithm of the compiled kernels' exp (maia-approximate-
// math): within 1 ulp of the correctly rounded result and of the CPU's exp
// for every float32, checked exhaustively (tools/conformance/math_ulp_sweep.py;
// the suite sweeps a subset: test/python/test_eager_math_accuracy.py).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "polynomial.h"

namespace maia_eager {

/// 2^k for integer k in [-126, 127], from the exponent bits.
inline float powerOfTwo(int32_t k) { return std::bit_cast<float>(static_cast<uint32_t>(k + 127) << 23); }

/// n = round(x log2(e)); r = x - n ln(2) with ln(2) in two parts (n times
/// the high part is exact); exp(r) by its degree-7 Taylor series (|r| <=
/// ln(2)/2: truncation below 4e-9), summed as 1 + (r + r^2 q(r)) so that the
/// one rounding that matters is the last; 2^n applied in two halves, so
/// that n = 128 (just below overflow) and subnormal results scale with one
/// rounding. Below -104 the result is 0, selected: scaled, those lanes
/// (a causal mask's -inf, half of an attention softmax) would make
/// subnormals, and x86 takes a microcode assist (~100 cycles) for each such
/// multiplication, so they compute exp(0) and are discarded. Above 89: inf.
inline float expFloat(float x) {
  // Comparisons, not fmin/fmax (calls for the compiler): NaN stays NaN.
  const bool zero = x < -104.0f;
  const float clamped = zero ? 0.0f : (x > 89.0f ? 89.0f : x);
  // nearbyint, not a shifter: the rounding of the compiled kernels'
  // roundeven (a shifter's add could be contracted into an fma with the
  // product, rounding the exact product instead).
  const float n = std::nearbyint(clamped * static_cast<float>(coefficients::kLog2E));
  float r = std::fma(n, -static_cast<float>(coefficients::kLn2HiF32), clamped);
  r = std::fma(n, -static_cast<float>(coefficients::kLn2LoF32), r);
  const float q = poly(r, coefficients::kExpTaylorF32);
  const float y = 1.0f + std::fma(r * r, q, r);
  const auto k = static_cast<int32_t>(n);
  const int32_t half = k >> 1;
  const float scaled = y * powerOfTwo(half) * powerOfTwo(k - half);
  return zero ? 0.0f : (x != x ? x : scaled);
}

/// exp in the compute type: float vectorizes, double (and complex) is libm's.
template <typename C>
C exponential(C a) {
  if constexpr (std::is_same_v<C, float>) return expFloat(a);
  else return std::exp(a);
}

}  // namespace maia_eager
