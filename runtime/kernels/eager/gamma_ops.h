// Functors of the gamma-function family beyond lgamma and digamma (ops.h):
// the Hurwitz zeta function, polygamma of order n >= 1 and the regularized
// incomplete gamma functions igamma (P) and igammac (Q), with the CPU's
// special values and domains.
#pragma once

#include <cmath>
#include <limits>

namespace maia_eager::op {

/// The Hurwitz zeta function sum_k (q + k)^-s by Euler-Maclaurin summation:
/// the terms directly while they matter (at least 9 of them, and until
/// q + k > 9), then the integral of the tail, half its first term and the
/// Bernoulli corrections B_2j / (2j)! s (s+1) ... (s+2j-2) a^{-s-2j+1}. It
/// stops as soon as a term is below double precision of the sum, which also
/// gives the CPU's values at its special arguments (s = inf, q <= 0).
/// Computed in double for float32 too, as the CPU accumulates.
inline double zetaOf(double s, double q) {
  constexpr double kEpsilon = 1.11022302462515654042e-16;
  // (2j)! / B_2j for j = 1..12: the Bernoulli numbers' reciprocal weights.
  constexpr double kFactorialOverBernoulli[] = {
      12.0, -720.0, 30240.0, -1209600.0, 47900160.0,
      -1.307674368e12 / 691, 7.47242496e10, -1.067062284288e16 / 3617,
      5.109094217170944e18 / 43867, -8.028576626982912e20 / 174611,
      1.5511210043330985984e23 / 854513, -1.6938241367317436694528e27 / 236364091};
  if (s == 1) return std::numeric_limits<double>::infinity();
  if (s < 1) return std::numeric_limits<double>::quiet_NaN();
  if (q <= 0) {
    if (q == std::floor(q)) return std::numeric_limits<double>::infinity();  // a pole
    if (s != std::floor(s)) return std::numeric_limits<double>::quiet_NaN();  // complex
  }
  double sum = std::pow(q, -s);
  double a = q, term = 0;
  for (int count = 1; count <= 9 || a <= 9; ++count) {
    a += 1;
    term = std::pow(a, -s);
    sum += term;
    if (-kEpsilon * sum < term && term < kEpsilon * sum) return sum;
  }
  const double base = a;
  sum += term * base / (s - 1) - 0.5 * term;
  double rising = 1, order = 0;  // s (s+1) ... (s + order - 1)
  for (double weight : kFactorialOverBernoulli) {
    rising *= s + order;
    term /= base;
    const double correction = rising * term / weight;
    sum += correction;
    if (std::fabs(correction / sum) < kEpsilon) break;
    order += 1;
    rising *= s + order;
    term /= base;
    order += 1;
  }
  return sum;
}
struct Zeta {
  template <typename C> C operator()(C s, C q) const {
    return C(zetaOf(static_cast<double>(s), static_cast<double>(q)));
  }
};

/// The trigamma function in the compute type (as the CPU, whose float32
/// rounding decides the value at the poles): reflection below 1/2, six
/// steps of the recurrence psi1(x) = psi1(x + 1) + 1/x^2, then the
/// asymptotic series 1/x + 1/(2x^2) + 1/(6x^3) - 1/(30x^5) + 1/(42x^7).
template <typename C>
C trigammaOf(C x) {
  C sign = 1, result = 0;
  if (x < C(0.5)) {
    sign = -1;
    const C sin_pi_x = std::sin(C(M_PI) * x);
    result -= C(M_PI * M_PI) / (sin_pi_x * sin_pi_x);
    x = C(1) - x;
  }
  for (int step = 0; step < 6; ++step) {
    result += C(1) / (x * x);
    x += C(1);
  }
  const C inv2 = C(1) / (x * x);
  result += (C(1) + C(1) / (C(2) * x) +
             inv2 * (C(1) / C(6) - inv2 * (C(1) / C(30) - inv2 * (C(1) / C(42))))) / x;
  return sign * result;
}

/// polygamma(n, x) for n >= 1 (n = 0 is digamma's kernel): trigamma for
/// n = 1, (-1)^{n+1} n! zeta(n + 1, x) beyond, n! as exp(lgamma(n + 1)) in
/// the compute type like the CPU.
template <typename C>
struct Polygamma {
  C n;
  C operator()(C x) const {
    if (n == C(1)) return trigammaOf(x);
    const C sign = std::fmod(n, C(2)) != C(0) ? C(1) : C(-1);
    return sign * std::exp(std::lgamma(n + C(1))) *
           C(zetaOf(static_cast<double>(n) + 1, static_cast<double>(x)));
  }
};

/// The regularized incomplete gamma functions in double. Below x = a + 1,
/// P by its series e^-x x^a / Gamma(a + 1) sum_k x^k / ((a+1)...(a+k))
/// (positive terms); above, Q by its continued fraction (modified Lentz).
/// The other one is the complement, which loses nothing where it is used
/// (it is then at least ~0.1 of 1), except Q for a < 1 below a + 1
/// (upperGammaSmallA). The prefactor is one exp of the summed
/// logarithms (no overflow for large a or x).
inline double lowerGammaSeries(double a, double x) {
  double term = 1, sum = 1;
  for (int k = 1; k < 10000000; ++k) {
    term *= x / (a + k);
    sum += term;
    if (term < sum * 1e-17) break;
  }
  return std::exp(a * std::log(x) - x - std::lgamma(a + 1)) * sum;
}
inline double upperGammaFraction(double a, double x) {
  constexpr double kTiny = 1e-300;
  double b = x + 1 - a, c = 1 / kTiny, d = 1 / b, fraction = d;
  for (int k = 1; k < 10000000; ++k) {
    const double an = -k * (k - a);
    b += 2;
    d = an * d + b;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = b + an / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    const double delta = d * c;
    fraction *= delta;
    if (std::fabs(delta - 1) < 1e-16) break;
  }
  return std::exp(a * std::log(x) - x - std::lgamma(a)) * fraction;
}

/// log Gamma(1 + a) for 0 <= a < 1 to full relative precision: its Taylor
/// series -gamma a + sum_k (-1)^k zeta(k) a^k / k below 0.1 (where
/// lgamma(1 + a) would lose a to the rounding of 1 + a), lgamma(2 + a) -
/// log1p(a) above.
inline double logGammaOnePlus(double a) {
  if (a >= 0.1) return std::lgamma(2 + a) - std::log1p(a);
  constexpr double kEulerGamma = 0.57721566490153286061;
  double power = -a, sum = -kEulerGamma * a;  // power = (-a)^k
  for (int k = 2; k < 40; ++k) {
    power *= -a;
    const double term = zetaOf(k, 1) * power / k;
    sum += term;
    if (std::fabs(term) <= 1e-17 * std::fabs(sum)) break;
  }
  return sum;
}

/// Q(a, x) for a < 1 and x < 2, where 1 - P would cancel (Q ~ a E1(x) for
/// small a): from gamma(a, x) = sum_n (-1)^n x^(a+n) / (n! (a+n)),
/// Q = -expm1(u) - e^u a sum_{n>=1} (-1)^n x^n / (n! (a+n)) with
/// u = a log(x) - log Gamma(1 + a); the alternating sum has terms below 2.
inline double upperGammaSmallA(double a, double x) {
  const double u = a * std::log(x) - logGammaOnePlus(a);
  double power = 1, sum = 0;
  for (int n = 1; n < 200; ++n) {
    power *= -x / n;
    const double term = power / (a + n);
    sum += term;
    if (std::fabs(term) <= 1e-17 * std::fabs(sum)) break;
  }
  return -std::expm1(u) - std::exp(u) * a * sum;
}

/// P(a, x) (Upper false) or Q(a, x) (Upper true), with the CPU's (SciPy's)
/// boundary values, tested in its order (so a NaN decides only when no
/// boundary rule applies: P(nan, 0) = 0): NaN for negative arguments,
/// a = 0 is the limit P = 1 for x > 0, x = 0 gives P = 0, a = inf gives
/// P = 0 (NaN with x = inf), x = inf gives P = 1.
template <bool Upper>
double incompleteGammaOf(double a, double x) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  double lower;
  if (x < 0 || a < 0) {
    return nan;
  } else if (a == 0) {
    if (!(x > 0)) return nan;
    lower = 1;
  } else if (x == 0) {
    lower = 0;
  } else if (std::isinf(a)) {
    if (std::isinf(x)) return nan;
    lower = 0;
  } else if (std::isinf(x)) {
    lower = 1;
  } else if (std::isnan(a) || std::isnan(x)) {
    return nan;
  } else if (x < a + 1) {
    if (Upper) return a < 1 ? upperGammaSmallA(a, x) : 1 - lowerGammaSeries(a, x);
    return lowerGammaSeries(a, x);
  } else {
    const double q = upperGammaFraction(a, x);
    return Upper ? q : 1 - q;
  }
  return Upper ? 1 - lower : lower;
}
template <bool Upper>
struct IncompleteGamma {
  template <typename C> C operator()(C a, C x) const {
    return C(incompleteGammaOf<Upper>(static_cast<double>(a), static_cast<double>(x)));
  }
};

}  // namespace maia_eager::op
