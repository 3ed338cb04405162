// erf of float32 for the elementwise loops, in float32 arithmetic the
// compiler vectorizes (16 lanes with AVX-512).
//
// The compiled kernels' algorithm step for step (compiler/lib/Transforms/
// ApproximateMath.cpp, buildErf; its polynomials in maia/Transforms/
// MathCoefficients.h): a + a q(a^2) below 1, 1 - erfc(a) from 1 to 4, 1
// beyond. Within 1 ulp of the correctly rounded result and equal to the
// compiled kernels' result on every float32.
#pragma once

#include <cmath>
#include <type_traits>

#include "polynomial.h"

namespace maia_eager {

inline float erfFloat(float x) {
  const float a = std::fabs(x);
  const float near_zero = std::fma(a, poly(a * a, coefficients::kErfF32Small), a);
  // NaN stays NaN through the clamp, as the compiled minimum/maximum keep it.
  const float clamped = a < 1.0f ? 1.0f : (a > 4.0f ? 4.0f : a);
  const float t = clamped - static_cast<float>(coefficients::kErfcF32Center);
  const float near_one = 1.0f - poly(t, coefficients::kErfcF32);
  const float r = a < 1.0f ? near_zero : near_one;
  return std::copysign(a > 4.0f ? 1.0f : r, x);
}

/// erf in the compute type: float vectorizes, others are libm's.
template <typename C>
C errorFunction(C a) {
  if constexpr (std::is_same_v<C, float>) return erfFloat(a);
  else return std::erf(a);
}

}  // namespace maia_eager
