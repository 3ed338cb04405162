//===- WideMath.cpp - float64 cores of the float32 approximations ---------===//
//
// The polynomials and their fits: maia/Transforms/MathCoefficients.h.
//
//===----------------------------------------------------------------------===//

#include "WideMath.h"

#include "maia/Transforms/MathCoefficients.h"

#include <limits>

namespace mlir::maia::wide {
namespace {

using namespace ::maia_math;

/// 2^k for integral k in [-1022, 1023], built from its bits (NaN k: 1).
Value exp2OfIntegral(FloatBuilder &d, Value k) {
  ImplicitLocOpBuilder &b = d.b;
  Value safe = d.select(d.isnan(k), d.c(0.0), k); // fptosi(NaN) is poison
  Value bits = b.create<arith::FPToSIOp>(d.intType(64), safe);
  bits = b.create<arith::AddIOp>(bits, d.ci(1023, 64));
  bits = b.create<arith::ShLIOp>(bits, d.ci(52, 64));
  return b.create<arith::BitcastOp>(d.type, bits);
}

/// x = k ln(2) + r, |r| <= ln(2)/2: 2^k and expm1(r).
struct ExpParts {
  Value scale;
  Value expm1OfRest;
};

ExpParts splitExp(FloatBuilder &d, Value x) {
  Value k = d.b.create<math::RoundEvenOp>(d.mul(x, d.c(kLog2E)));
  Value negK = d.sub(d.c(0.0), k);
  Value r = d.fma(negK, d.c(kLn2Lo), d.fma(negK, d.c(kLn2), x));
  return {exp2OfIntegral(d, k), d.mul(r, d.poly(r, kExpm1OverR))};
}

} // namespace

Value exp(FloatBuilder &d, Value x) {
  ExpParts parts = splitExp(d, x);
  return d.fma(parts.scale, parts.expm1OfRest, parts.scale);
}

Value expm1(FloatBuilder &d, Value x) {
  ExpParts parts = splitExp(d, x);
  return d.fma(parts.scale, parts.expm1OfRest,
               d.sub(parts.scale, d.c(1.0)));
}

// x = m 2^e with m in [sqrt(2)/2, sqrt(2)); log(m) = 2 atanh(s),
// s = (m - 1) / (m + 1).
Value log(FloatBuilder &d, Value x) {
  ImplicitLocOpBuilder &b = d.b;
  Value bits = b.create<arith::BitcastOp>(d.intType(64), x);
  Value biased = b.create<arith::ShRUIOp>(bits, d.ci(52, 64));
  Value e = b.create<arith::SIToFPOp>(
      d.type, b.create<arith::SubIOp>(biased, d.ci(1023, 64)));
  Value mantissa = b.create<arith::AndIOp>(bits, d.ci(0x000FFFFFFFFFFFFF, 64));
  Value m = b.create<arith::BitcastOp>(
      d.type, b.create<arith::OrIOp>(mantissa, d.ci(0x3FF0000000000000, 64)));
  Value big = d.gt(m, 1.4142135623730951);
  m = d.select(big, d.mul(m, d.c(0.5)), m);
  e = d.select(big, d.add(e, d.c(1.0)), e);
  Value s = d.div(d.sub(m, d.c(1.0)), d.add(m, d.c(1.0)));
  Value z = d.mul(s, s);
  Value logM = d.fma(d.mul(s, z), d.poly(z, kLogSeries), d.add(s, s));
  Value finite = d.lt(x, std::numeric_limits<double>::infinity());
  return d.select(finite, d.fma(e, d.c(kLn2), logM), x); // inf, NaN
}

// 1 + x is exact in float64 for a float32 x with |x| >= 2^-29; below 1e-5
// the series needs three terms.
Value log1p(FloatBuilder &d, Value x) {
  Value series = d.mul(x, d.fma(x, d.fma(x, d.c(1.0 / 3), d.c(-0.5)), d.c(1.0)));
  Value tiny = d.lt(d.abs(x), 1e-5);
  Value u = d.select(tiny, d.c(1.0), d.add(d.c(1.0), x));
  return d.select(tiny, series, log(d, u));
}

// Reduced to |t| <= tan(pi/8): t = a, (a - 1) / (a + 1) plus pi/4, or
// -1 / a plus pi/2.
Value atanOfAbs(FloatBuilder &d, Value a) {
  Value beyond = d.gt(a, 2.414213562373095);
  Value middle = d.gt(a, 0.41421356237309503);
  Value numerator = d.select(
      beyond, d.c(-1.0), d.select(middle, d.sub(a, d.c(1.0)), a));
  Value denominator = d.select(
      beyond, a, d.select(middle, d.add(a, d.c(1.0)), d.c(1.0)));
  Value t = d.div(numerator, denominator);
  Value z = d.mul(t, t);
  Value offset =
      d.select(beyond, d.c(kPi / 2), d.select(middle, d.c(kPi / 4), d.c(0.0)));
  return d.add(offset, d.fma(d.mul(t, z), d.poly(z, kAtanSeries), t));
}

// Above 1/2: asin(a) = pi/2 - 2 asin(sqrt((1 - a) / 2)).
Value asinOfAbs(FloatBuilder &d, Value a) {
  Value big = d.gt(a, 0.5);
  Value z = d.select(big, d.mul(d.sub(d.c(1.0), a), d.c(0.5)), d.mul(a, a));
  Value s = d.select(big, d.sqrt(z), a);
  Value p = d.fma(d.mul(s, z), d.poly(z, kAsinSeries), s);
  return d.select(big, d.sub(d.c(kPi / 2), d.add(p, p)), p);
}

// tan(k pi/2 + r) = sin(r) / cos(r) for even k, -cos(r) / sin(r) for odd.
Value tanOfReduced(FloatBuilder &d, Value k, Value r) {
  Value z = d.mul(r, r);
  Value sine = d.fma(d.mul(r, z), d.poly(z, kSinSeries), r);
  Value cosine = d.fma(d.mul(z, z), d.poly(z, kCosSeries),
                       d.fma(z, d.c(-0.5), d.c(1.0)));
  Value half = d.mul(k, d.c(0.5));
  Value odd = d.cmp(arith::CmpFPredicate::ONE,
                    d.b.create<math::FloorOp>(half), half);
  Value numerator = d.select(odd, d.sub(d.c(0.0), cosine), sine);
  Value denominator = d.select(odd, sine, cosine);
  return d.div(numerator, denominator);
}

// erfc(a) = exp(-a^2) h(a): h fitted on [1, 2], and as h(a) = g(1/a^2) / a
// beyond. a^2 is exact in float64 for a float32 a.
Value erfcOfAbs(FloatBuilder &d, Value a) {
  Value square = d.mul(a, a);
  Value middle = d.poly(d.sub(a, d.c(1.5)), kErfcMiddle);
  Value inverse = d.div(d.c(1.0), a);
  Value w = d.fma(inverse, inverse, d.c(-kErfcTailCenter));
  Value tail = d.mul(d.poly(w, kErfcTail), inverse);
  Value h = d.select(d.lt(a, 2.0), middle, tail);
  return d.mul(exp(d, d.sub(d.c(0.0), square)), h);
}

Value erfOfSmall(FloatBuilder &d, Value a) {
  return d.mul(a, d.poly(d.mul(a, a), kErfSeries));
}

} // namespace mlir::maia::wide
