//===- WideMath.cpp - float64 cores of the float32 approximations ---------===//
//
// The polynomials are least-squares fits at Chebyshev nodes against mpmath
// (50 digits), in the power basis, highest degree first; the comment of each
// gives its variable, interval and relative error in float64.
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

// expm1(r) / r, r in [-ln(2)/2, ln(2)/2]: 8e-14.
constexpr double kExpm1OverR[] = {
    2.7549735468420035e-06, 2.4876450762354147e-05, 0.0001984139090323505,
    0.0013888821203849292,  0.008333333216208992,   0.04166666689302408,
    0.1666666666698025,     0.49999999999796,       0.9999999999999875};
// (log((1 + s) / (1 - s)) - 2s) / s^3 in z = s^2, |s| <= 3 - 2 sqrt(2):
// 7e-14.
constexpr double kLogSeries[] = {0.1662597715522197,  0.18139919907834093,
                                 0.2222286850154869,  0.28571424081706026,
                                 0.40000000011382403, 0.66666666666662};
// (atan(t) - t) / t^3 in z = t^2, t in [0, tan(pi/8)]: 7e-14.
constexpr double kAtanSeries[] = {
    -0.02721131060993001, 0.05167391901457409,  -0.06550515329989036,
    0.07680989777614297,  -0.0909025161200649,  0.11111089464613834,
    -0.14285713926522436, 0.1999999999769418,   -0.33333333333330883};
// (asin(s) - s) / s^3 in z = s^2, s in [0, 1/2]: 2e-14.
constexpr double kAsinSeries[] = {
    0.027890633078997574, -0.006845069227625517, 0.015456748794859409,
    0.010286407306250052, 0.014141483903589262,  0.01733713653569239,
    0.022373013572298102, 0.03038191736009569,   0.04464285758097651,
    0.07499999999724735,  0.16666666666666952};
// (sin(r) - r) / r^3 and (cos(r) - 1 + r^2/2) / r^4 in z = r^2,
// |r| <= pi/4: 2e-13 and 5e-14.
constexpr double kSinSeries[] = {-2.480487663078405e-08, 2.7555982155892295e-06,
                                 -0.000198412668854617, 0.00833333333104316,
                                 -0.1666666666666382};
constexpr double kCosSeries[] = {2.070014651323051e-09, -2.755636452584744e-07,
                                 2.4801585192721275e-05,
                                 -0.0013888888887256853, 0.041666666666664645};
// erf(a) / a in z = a^2, a in [0, 1]: 2e-14.
constexpr double kErfSeries[] = {
    -1.0439150365026055e-07, 1.5292811486073516e-06, -1.4792471201927303e-05,
    0.00012046000342407532,  -0.0008547918216297278, 0.005223966650314573,
    -0.026866168943551386,   0.11283791657488858,    -0.3761263890276805,
    1.1283791670954912};
// erfc(a) exp(a^2) in v = a - 3/2, a in [1, 2]: 9e-13.
constexpr double kErfcMiddle[] = {
    -7.338455206931411e-06, 2.4476060697378927e-05, -7.259615769661798e-05,
    0.00022285115049602123, -0.0006619299136820902, 0.0018861946155362397,
    -0.005145958438944623,  0.013377337452058905,   -0.032930905236338875,
    0.07615103993022837,    -0.16362291773354334,   0.32158541645406014};
// erfc(a) a exp(a^2) in w = 1/a^2 - kErfcTailCenter, a in [2, 12]: 8e-13.
constexpr double kErfcTailCenter = 0.1285;
constexpr double kErfcTail[] = {
    68094.5597132104,    -17146.794955567133, 889.5088677940206,
    -355.8156751972843,  205.05579899398185,  -63.69080310708254,
    20.24634229749577,   -7.25262645206359,   2.790410813917151,
    -1.1692812300701159, 0.5489697327918927,  -0.30058612376185223,
    0.20615675954537538, -0.20698456044144678, 0.5333402530939357};

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
