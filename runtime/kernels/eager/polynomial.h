// Horner's rule over the coefficient tables of maia/Transforms/
// MathCoefficients.h, the tables the compiled kernels' math uses too.
#pragma once

#include <maia/Transforms/MathCoefficients.h>

#include <cmath>
#include <cstddef>
#include <utility>

namespace maia_eager {

namespace coefficients = ::maia_math;

template <typename T, size_t N, size_t... I>
inline T polyUnrolled(T x, const double (&c)[N], std::index_sequence<I...>) {
  T acc = static_cast<T>(c[0]);
  ((acc = std::fma(acc, x, static_cast<T>(c[I + 1]))), ...);
  return acc;
}

/// Horner in T (each coefficient rounded to T once, as the compiler's
/// constants are), highest degree first; unrolled at compile time (GCC
/// vectorizes no loop that contains a loop).
template <typename T, size_t N>
inline T poly(T x, const double (&c)[N]) {
  return polyUnrolled(x, c, std::make_index_sequence<N - 1>{});
}

}  // namespace maia_eager
