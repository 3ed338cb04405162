// Functors of the normal-distribution functions of torch.special the CPU
// computes for float32 and float64: erfcx (the scaled complementary error
// function), log_ndtr (log of the standard normal CDF) and ndtri (its
// inverse), in double with the CPU's special values.
#pragma once

#include <cmath>
#include <limits>

namespace maia_eager::op {

/// exp(x^2) erfc(x). Below 25, the product itself: erfc is accurate to its
/// relative precision down to its underflow, and exp(x^2) is exp(hi) exp(lo)
/// with x^2 = hi + lo split exactly by an FMA (x^2 rounded would cost
/// x^2 ulps). From 25 on (erfc near its underflow) the asymptotic series
/// 1 / (x sqrt(pi)) sum (-1)^k (2k - 1)!! / (2x^2)^k, whose 9th term is
/// below 1e-17 there. As the CPU, inf below -26.7 (2 exp(x^2) overflows).
inline double erfcxOf(double x) {
  if (std::isnan(x)) return x;
  if (x < -26.7) return std::numeric_limits<double>::infinity();
  if (x < 25) {
    const double square = x * x;
    const double square_error = std::fma(x, x, -square);
    return std::exp(square) * std::exp(square_error) * std::erfc(x);
  }
  const double inv_two_square = 0.5 / (x * x);
  double term = 1, sum = 1;
  for (int k = 1; k < 10; ++k) {
    term *= -(2.0 * k - 1) * inv_two_square;
    sum += term;
  }
  return sum / (x * std::sqrt(M_PI));
}
struct Erfcx {
  template <typename C> C operator()(C a) const { return C(erfcxOf(static_cast<double>(a))); }
};

/// log(Phi(x)) = log(erfc(-x / sqrt(2)) / 2): through erfcx below -1 (erfc
/// underflows in the far tail, its log does not), through log1p above.
inline double logNdtrOf(double x) {
  const double t = x * M_SQRT1_2;
  if (x < -1) return std::log(erfcxOf(-t) / 2) - t * t;
  return std::log1p(-std::erfc(t) / 2);
}
struct LogNdtr {
  template <typename C> C operator()(C a) const { return C(logNdtrOf(static_cast<double>(a))); }
};

/// The y > 0 with erfc(y) = q, for 0 < q <= 1: Newton's method on
/// log(erfc(y)) - log(q) = log(erfcx(y)) - y^2 - log(q), whose derivative is
/// -2 / (sqrt(pi) erfcx(y)); in the log the residual keeps its relative
/// precision down to q = 1e-308. Start: sqrt(-log(q)) (within 10% below
/// q = 0.1, where the log form is nearly linear), or 0.5 above.
inline double erfcInverseOf(double q) {
  const double log_q = std::log(q);
  double y = q < 0.1 ? std::sqrt(-log_q) : 0.5;
  for (int step = 0; step < 100; ++step) {
    const double scaled = erfcxOf(y);
    const double residual = std::log(scaled) - y * y - log_q;
    const double delta = residual * scaled * std::sqrt(M_PI) / 2;
    y += delta;
    if (std::fabs(delta) <= 1e-16 * std::fabs(y)) break;
  }
  return y;
}

/// The quantile of the standard normal distribution: -sqrt(2) erfcinv(2p)
/// below 1/2, sqrt(2) erfcinv(2 (1 - p)) above (1 - p is exact there).
/// As the CPU: -inf at 0, inf at 1, NaN outside [0, 1].
inline double ndtriOf(double p) {
  if (std::isnan(p) || p < 0 || p > 1) return std::numeric_limits<double>::quiet_NaN();
  if (p == 0) return -std::numeric_limits<double>::infinity();
  if (p == 1) return std::numeric_limits<double>::infinity();
  if (p == 0.5) return 0.0;
  if (p < 0.5) return -M_SQRT2 * erfcInverseOf(2 * p);
  return M_SQRT2 * erfcInverseOf(2 * (1 - p));
}
struct Ndtri {
  template <typename C> C operator()(C a) const { return C(ndtriOf(static_cast<double>(a))); }
};

}  // namespace maia_eager::op
