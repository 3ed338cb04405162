//===- WideMath.cpp - float64 cores of the float32 approximations ---------===//
//
// The polynomials are least-squares fits at Chebyshev nodes against mpmath
// (50 digits), in the power basis, highest degree first; the comment of each
// gives its variable, interval and relative error. A float32 result is within
// 1 ulp of the correctly rounded one whenever the float64 value is within
// 2^-24 (6e-8) of the exact one: the fits aim at 4e-9, no tighter, since
// every extra degree is a float64 fma per lane.
//
//===----------------------------------------------------------------------===//

#include "WideMath.h"

#include <limits>

namespace mlir::maia::wide {
namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kLn2 = 0.6931471805599453;
constexpr double kLn2Lo = 2.3190468138462996e-17; // ln(2) - kLn2
constexpr double kLog2E = 1.4426950408889634;

// expm1(r) / r, r in [-ln(2)/2, ln(2)/2]: 2.4e-10.
constexpr double kExpm1OverR[] = {
    0.00019832928385454088, 0.0013941281149797786, 0.008333418743045955,
    0.041666351210595184, 0.1666666617455452, 0.5000000047350687,
    1.00000000003643};
// (log((1 + s) / (1 - s)) - 2s) / s^3 in z = s^2, |s| <= 3 - 2 sqrt(2):
// 1.7e-9 (of a term below 1% of log(m)).
constexpr double kLogSeries[] = {0.23333988417202564, 0.285506939843277,
                                 0.4000012292276851, 0.6666666655324553};
// (atan(t) - t) / t^3 in z = t^2, t in [0, tan(pi/8)]: 1.7e-9.
constexpr double kAtanSeries[] = {
    0.050446808351926435, -0.08623235542718066, 0.11071154894282069,
    -0.14284138672037558, 0.19999976996945648,  -0.3333333327837495};
// (asin(s) - s) / s^3 in z = s^2, s in [0, 1/2]: 1.3e-9.
constexpr double kAsinSeries[] = {
    0.0309821963902814,  0.010569413899743411, 0.023613014667569786,
    0.030269010705556255, 0.04464766978442075, 0.07499992395232308,
    0.1666666668610534};
// (sin(r) - r) / r^3 and (cos(r) - 1 + r^2/2) / r^4 in z = r^2,
// |r| <= pi/4: 1.7e-10 and 5.7e-11.
constexpr double kSinSeries[] = {2.7248875917538144e-06,
                                 -0.00019840077766325286,
                                 0.008333331855679162, -0.1666666666379587};
constexpr double kCosSeries[] = {-2.730024369462373e-07, 2.48005943842999e-05,
                                 -0.0013888887659604069,
                                 0.041666666664283605};
// erf(a) / a in z = a^2, a in [0, 1]: 1.3e-9.
constexpr double kErfSeries[] = {
    7.846925794162331e-05, -0.0008008096436425167, 0.005188089236691542,
    -0.026853686505542092, 0.11283582149865953,    -0.37612625559795604,
    1.128379165688376};
// erf(a) in v = a - 5/2, a in [1, 4]: 6e-10 absolute (erf(a) >= 0.84).
constexpr double kErfMiddle[] = {
    -3.5087729291514737e-07, 8.901974209206639e-07,  3.4593294267114533e-06,
    -1.571971187723241e-05,  7.766870381919019e-06,  8.110173330956487e-05,
    -0.000253440728655757,   0.0002587283437029547,  0.0005445478043221536,
    -0.0027975534176249805,  0.006116581553344174,   -0.008622604726806942,
    0.008350212901311561,    -0.005445688598766375,  0.002178278443639475,
    0.9995930476311989};
// erfc(a) exp(a^2) in v = a - 3/2, a in [1, 2]: 2e-9.
constexpr double kErfcMiddle[] = {
    0.0002332328777857037, -0.0007042919049249426, 0.001885311237804566,
    -0.005137940493235404, 0.013377251142951362,   -0.032931462276746065,
    0.07615104981362031,   -0.16362290736031215,   0.3215854163515695};
// erfc(a) a exp(a^2) in w = 1/a^2 - kErfcTailCenter, a in [2, 12]: 1.1e-9.
constexpr double kErfcTailCenter = 0.1285;
constexpr double kErfcTail[] = {
    -95.42979130698295,  29.873723634747545, -6.711632924454486,
    2.6543977418339373,  -1.172920863702363, 0.5497221110197811,
    -0.30057657994942627, 0.20615532880620654, -0.2069845671839108,
    0.5333402535250515};

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

// One polynomial beyond 1: erf there needs absolute, not relative,
// accuracy, so no exp and no division (GELU's cost is erf's).
Value erfOfAbs(FloatBuilder &d, Value a) {
  Value middle = d.poly(d.sub(d.clamp(a, 1.0, 4.0), d.c(2.5)), kErfMiddle);
  Value r = d.select(d.lt(a, 1.0), erfOfSmall(d, a), middle);
  return d.select(d.gt(a, 4.0), d.c(1.0), r); // 1 in float32 from 3.92 on
}

} // namespace mlir::maia::wide
