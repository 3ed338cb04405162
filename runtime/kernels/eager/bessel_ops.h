// Functors of the Bessel-type functions of torch.special the CPU computes
// for float32 and float64: J0, J1, Y0, Y1, the modified K0 and K1 (and
// their exp(x)-scaled forms), the spherical j0 and the Airy function Ai.
// All evaluate in double and round once, so float32 results are the
// correctly rounded values where the CPU's float polynomials are a few ulps
// off; the special values (NaN, the infinities, 0, negative arguments of
// Y and K) are the CPU's.
#pragma once

#include <cmath>
#include <limits>

namespace maia_eager::op {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kInf = std::numeric_limits<double>::infinity();

/// J0, J1, Y0, Y1 of the C library (glibc's are accurate to a few ulps over
/// the whole range, with exact argument reduction); the CPU's Cephes
/// asymptotic forms give NaN at the infinities, and Y is NaN below 0.
enum class BesselKind { J0, J1, Y0, Y1 };
template <BesselKind Kind>
double besselJYOf(double x) {
  if (std::isinf(x)) return kNaN;
  switch (Kind) {
    case BesselKind::J0: return ::j0(x);
    case BesselKind::J1: return ::j1(x);
    case BesselKind::Y0: return x < 0 ? kNaN : ::y0(x);
    case BesselKind::Y1: return x < 0 ? kNaN : ::y1(x);
  }
  return kNaN;
}
template <BesselKind Kind>
struct BesselJY {
  template <typename C> C operator()(C a) const {
    return C(besselJYOf<Kind>(static_cast<double>(a)));
  }
};

/// exp(z) K_nu(z) for z > 0 and any real order nu, from the integral
/// K_nu(z) = int_0^inf exp(-z cosh t) cosh(nu t) dt by the trapezoidal rule.
/// The integrand is analytic in the strip |Im t| < pi/2, so the rule's
/// error falls like exp(-2 pi d / h): step 0.2 (d = 1.4) puts it below
/// 1e-18 relative for z up to a few. For larger z the integrand is a
/// Gaussian of width 1/sqrt(z), whose trapezoidal error is
/// exp(-2 pi^2 / (z h^2)): the step shrinks to 0.6 / sqrt(z) (~15 terms).
/// All terms are positive (no cancellation); cosh(t) - 1 is computed as
/// 2 sinh(t/2)^2 (no cancellation at small steps); the sum stops once the
/// integrand is below e^-40 of its value at 0.
inline double scaledBesselKOf(double nu, double z) {
  const double step = std::fmin(0.2, 0.6 / std::sqrt(z));
  double sum = 0.5;  // half of the integrand at t = 0
  for (int k = 1; k < 100000; ++k) {
    const double t = k * step;
    const double half_sinh = std::sinh(t / 2);
    const double decay = z * 2 * half_sinh * half_sinh;  // z (cosh t - 1)
    if (decay - nu * t > 40.0) break;
    sum += std::exp(-decay) * std::cosh(nu * t);
  }
  return sum * step;
}

/// K0 or K1 (Nu) at x, times exp(x) when Scaled. Below 1e-9 the leading
/// small-argument forms (-log(x/2) - Euler's gamma, and 1/x) are exact to
/// double precision and spare the integral its long tail.
template <int Nu, bool Scaled>
double besselKOf(double x) {
  if (std::isnan(x)) return x;
  if (x < 0) return kNaN;
  if (x == 0) return kInf;
  if (std::isinf(x)) return 0.0;
  if (x < 1e-9) {
    constexpr double kEulerGamma = 0.57721566490153286061;
    const double value = Nu == 0 ? -std::log(x / 2) - kEulerGamma : 1.0 / x;
    return Scaled ? value * std::exp(x) : value;
  }
  const double scaled = scaledBesselKOf(Nu, x);
  return Scaled ? scaled : scaled * std::exp(-x);  // 0 beyond exp's range, as the CPU
}
template <int Nu, bool Scaled>
struct BesselK {
  template <typename C> C operator()(C a) const {
    return C(besselKOf<Nu, Scaled>(static_cast<double>(a)));
  }
};

/// sin(x) / x, its Taylor series near 0 (no 0/0), 0 at the infinities.
inline double sphericalBesselJ0Of(double x) {
  if (std::isinf(x)) return 0.0;
  if (std::fabs(x) < 0.5) {
    const double x2 = x * x;
    double term = 1, sum = 1;
    for (int k = 1; k < 12; ++k) {
      term *= -x2 / ((2 * k) * (2 * k + 1));
      sum += term;
    }
    return sum;
  }
  return std::sin(x) / x;
}
struct SphericalBesselJ0 {
  template <typename C> C operator()(C a) const {
    return C(sphericalBesselJ0Of(static_cast<double>(a)));
  }
};

/// The Airy function Ai in double:
///  - x > 1: Ai(x) = sqrt(x / 3) / pi * K_{1/3}(zeta), zeta = 2/3 x^{3/2}
///    (the positive-term integral above; the Maclaurin series would cancel);
///  - -8 <= x <= 1: the Maclaurin series Ai(0) f(x) + Ai'(0) g(x), whose
///    terms stay below 1e7 here: summed in extended precision, its absolute
///    error stays near 1e-14;
///  - x < -8: the asymptotic expansion in zeta (>= 15, so its smallest term
///    is ~e^{-2 zeta} < 1e-13).
/// As the CPU: NaN at both infinities, 0 beyond x = 103.892 (underflow).
inline double airyAiOf(double x) {
  if (std::isnan(x) || std::isinf(x)) return kNaN;
  if (x > 103.892) return 0.0;
  constexpr long double kAi0 = 0.355028053887817239260L;    // 1 / (3^{2/3} Gamma(2/3))
  constexpr long double kDAi0 = -0.258819403792806798405L;  // -1 / (3^{1/3} Gamma(1/3))
  if (x > 1) {
    const double zeta = 2.0 / 3.0 * x * std::sqrt(x);
    return std::sqrt(x / 3) / M_PI * scaledBesselKOf(1.0 / 3.0, zeta) * std::exp(-zeta);
  }
  if (x >= -8) {
    // In x87 extended precision: 11 more bits against the cancellation.
    const long double cube = static_cast<long double>(x) * x * x;
    long double f_term = 1, f = 1, g_term = x, g = x;
    for (int k = 1; k < 200; ++k) {
      f_term *= cube / ((3.0L * k - 1) * (3.0L * k));
      g_term *= cube / ((3.0L * k) * (3.0L * k + 1));
      f += f_term;
      g += g_term;
      if (std::fabs(f_term) + std::fabs(g_term) < 1e-21L * (std::fabs(f) + std::fabs(g))) break;
    }
    return static_cast<double>(kAi0 * f + kDAi0 * g);
  }
  // Ai(-y) = (sin(zeta + pi/4) P - cos(zeta + pi/4) Q) / (sqrt(pi) y^{1/4}),
  // P = sum (-1)^k u_2k / zeta^2k, Q = sum (-1)^k u_2k+1 / zeta^2k+1,
  // u_k = u_{k-1} (6k - 5)(6k - 3)(6k - 1) / ((2k - 1) 216 k).
  const double y = -x;
  const double zeta = 2.0 / 3.0 * y * std::sqrt(y);
  double term = 1, p = 1, q = 0;
  for (int k = 1; k < 60; ++k) {
    const double next = term * (6.0 * k - 5) * (6.0 * k - 3) * (6.0 * k - 1) /
                        ((2.0 * k - 1) * 216.0 * k) / zeta;
    if (std::fabs(next) > std::fabs(term)) break;  // the expansion starts to diverge
    term = next;
    const double sign = (k / 2) % 2 == 0 ? 1.0 : -1.0;
    if (k % 2 == 0) p += sign * term;
    else q += sign * term;
    if (std::fabs(term) < 1e-17) break;
  }
  const double phase = zeta + M_PI / 4;
  return (std::sin(phase) * p - std::cos(phase) * q) / (std::sqrt(M_PI) * std::sqrt(std::sqrt(y)));
}
struct AiryAi {
  template <typename C> C operator()(C a) const { return C(airyAiOf(static_cast<double>(a))); }
};

}  // namespace maia_eager::op
