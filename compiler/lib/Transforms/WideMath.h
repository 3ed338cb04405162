//===- WideMath.h - float64 cores of the float32 approximations -*- C++ -*-===//
//
// Float32 functions whose float32 evaluation loses more than eager's 1 ulp
// (expm1, log10, log1p, atan, asin, tan, tanh, erfc and the
// inverse hyperbolics) are computed from the float32 argument in float64,
// then rounded once. These cores are float64 arithmetic only (fma, sqrt,
// roundeven, division and bit operations: vector instructions, no calls),
// accurate to a few 1e-9 relative (well inside float32's 6e-8), so the
// float32 result is within 1 ulp of the correctly rounded one. They are valid for the argument ranges each one
// states; the float32 patterns handle the rest (inf, NaN, signs).
//
//===----------------------------------------------------------------------===//

#ifndef MAIA_TRANSFORMS_WIDEMATH_H
#define MAIA_TRANSFORMS_WIDEMATH_H

#include "FloatBuilder.h"

namespace mlir::maia::wide {

/// exp(x) for x in [-700, 700] (NaN propagates).
Value exp(FloatBuilder &d, Value x);
/// expm1(x) for x in [-700, 700], no cancellation near 0.
Value expm1(FloatBuilder &d, Value x);
/// log(x) for x > 0 (any normal float64: every float32 > 0 is one); inf
/// and NaN give themselves.
Value log(FloatBuilder &d, Value x);
/// log1p(x) for x > -1.
Value log1p(FloatBuilder &d, Value x);
/// atan(a) for a >= 0, inf included.
Value atanOfAbs(FloatBuilder &d, Value a);
/// asin(a) for a in [0, 1].
Value asinOfAbs(FloatBuilder &d, Value a);
/// tan(x) for x = k pi/2 + r, given k (integral) and |r| <= pi/4.
Value tanOfReduced(FloatBuilder &d, Value k, Value r);
/// erfc(a) for a in [1, 12].
Value erfcOfAbs(FloatBuilder &d, Value a);
/// erf(a) for a in [0, 1] (relative accuracy: erfc = 1 - erf below 1).
Value erfOfSmall(FloatBuilder &d, Value a);

} // namespace mlir::maia::wide

#endif // MAIA_TRANSFORMS_WIDEMATH_H
