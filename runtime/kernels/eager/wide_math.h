// tanh of float32 for the elementwise loops, in float64 arithmetic the
// compiler vectorizes (erf: error_function.h).
//
// std::tanh is a libm call per element (eager tanh of 4M floats ran 46x
// slower than the CPU's). This is the compiled kernels' float64 core
// (compiler/lib/Transforms/WideMath.cpp, the same polynomial from
// maia/Transforms/MathCoefficients.h): the float32 result
// is within 1 ulp of the correctly rounded one, and equal to the compiled
// kernels' result. Every step is a vector instruction of x86-64-v3 (no
// float64 <-> int64 conversion, which needs AVX-512).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "polynomial.h"

namespace maia_eager {

namespace wide {

/// expm1(x) for x in [-700, 700]: x = k ln(2) + r, |r| <= ln(2)/2, k
/// rounded as the compiled kernels' roundeven rounds it. 2^k from k's bits:
/// k + 1.5 * 2^52 is exact and its low bits are k (x86-64-v3 has no float64
/// to int64 vector conversion).
inline double expm1(double x) {
  constexpr double kShifter = 0x1.8p52;
  const double k = std::nearbyint(x * coefficients::kLog2E);
  const double r = std::fma(-k, coefficients::kLn2Lo, std::fma(-k, coefficients::kLn2, x));
  const int64_t exponent =
      std::bit_cast<int64_t>(k + kShifter) - std::bit_cast<int64_t>(kShifter) + 1023;
  const double scale = std::bit_cast<double>(static_cast<uint64_t>(exponent) << 52);
  return std::fma(scale, r * poly(r, coefficients::kExpm1OverR), scale - 1.0);
}

}  // namespace wide

/// tanh(a) = e / (e + 2), e = expm1(2a): no cancellation at either end; 1
/// in float32 from 9 on (the clamp at 20 keeps expm1 in range).
inline float tanhFloat(float x) {
  double a = std::fabs(static_cast<double>(x));
  a = a > 20.0 ? 20.0 : a;
  const double e = wide::expm1(a + a);
  const float r = std::copysign(static_cast<float>(e / (e + 2.0)), x);
  return x != x ? x : r;
}

/// tanh in the compute type: float vectorizes, others are libm's.
template <typename C>
C hyperbolicTangent(C a) {
  if constexpr (std::is_same_v<C, float>) return tanhFloat(a);
  else return std::tanh(a);
}

}  // namespace maia_eager
