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

namespace maia_eager {

/// 2^k for integer k in [-126, 127], from the exponent bits.
inline float powerOfTwo(int32_t k) { return std::bit_cast<float>(static_cast<uint32_t>(k + 127) << 23); }

/// n = round(x log2(e)); r = x - n ln(2) with ln(2) in two parts (n times
/// the high part is exact); exp(r) by its degree-7 Taylor series (|r| <=
/// ln(2)/2: truncation below 4e-9), summed as 1 + (r + r^2 q(r)) so that the
/// one rounding that matters is the last. Then y = exp(r) times 2^n, rounded
/// once, and never by an arithmetic instruction that makes a subnormal: x86
/// takes a microcode assist (~100 cycles) for each, and a causal mask's -inf
/// lanes made a compiled softmax 4x slower. Normal results (n >= -125) take
/// 2^n in two halves (so n = 128, just below overflow, scales right);
/// subnormal and zero ones (n <= -126) are y 2^(n+149) rounded to an
/// integer, which is their bit pattern. Below -104 the result is 0, above 89
/// inf.
inline float expFloat(float x) {
  // Comparisons, not fmin/fmax (calls for the compiler): NaN stays NaN.
  float clamped = x < -104.0f ? -104.0f : x;
  clamped = clamped > 89.0f ? 89.0f : clamped;
  // Round to nearest by the 1.5 * 2^23 shifter (|x log2(e)| < 2^22).
  constexpr float kShifter = 0x1.8p23f;
  const float n = (clamped * 1.44269504088896341f + kShifter) - kShifter;
  float r = std::fma(n, -0.693145751953125f, clamped);
  r = std::fma(n, -1.428606765330187045e-06f, r);
  float q = std::fma(1.0f / 5040, r, 1.0f / 720);
  q = std::fma(q, r, 1.0f / 120);
  q = std::fma(q, r, 1.0f / 24);
  q = std::fma(q, r, 1.0f / 6);
  q = std::fma(q, r, 0.5f);
  const float y = 1.0f + std::fma(r * r, q, r);
  const auto k = static_cast<int32_t>(n);
  const int32_t normal_k = k < -125 ? -125 : k;
  const int32_t half = normal_k >> 1;
  const float normal = y * powerOfTwo(half) * powerOfTwo(normal_k - half);
  const int32_t tiny_k = k > -126 ? -126 : k;
  const float tiny =
      std::bit_cast<float>(static_cast<int32_t>(std::nearbyint(y * powerOfTwo(tiny_k + 149))));
  const float result = k < -125 ? tiny : normal;
  return x != x ? x : result;
}

/// exp in the compute type: float vectorizes, double (and complex) is libm's.
template <typename C>
C exponential(C a) {
  if constexpr (std::is_same_v<C, float>) return expFloat(a);
  else return std::exp(a);
}

}  // namespace maia_eager
