// Functors of the elementwise math functions beyond the basic arithmetic of
// ops.h: the error-function family, the shrink/threshold activations and the
// integer and floating-point bit functions (gcd, nextafter), each with
// PyTorch's CPU semantics at the special values (NaN, infinities, 0, 1).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "scalar_types.h"

namespace maia_eager::op {

struct Erfc { template <typename C> C operator()(C a) const { return std::erfc(a); } };
struct Exp2 { template <typename C> C operator()(C a) const { return std::exp2(a); } };
struct Frac { template <typename C> C operator()(C a) const { return a - std::trunc(a); } };

/// sin(pi x) / (pi x), 1 at 0.
struct Sinc {
  template <typename C> C operator()(C a) const {
    if (a == C(0)) return C(1);
    const C product = C(M_PI) * a;
    return std::sin(product) / product;
  }
};

/// -x log(x): 0 at 0, -inf below 0.
struct Entr {
  template <typename C> C operator()(C x) const {
    if (std::isnan(x)) return x;
    if (x > C(0)) return -x * std::log(x);
    if (x == C(0)) return C(0);
    return -std::numeric_limits<C>::infinity();
  }
};

/// The inverse error function in double: Giles' single-precision
/// approximation ("Approximating the erfinv function", 2010) as the start,
/// then two Newton steps on erf (quadratic: ~1e-7 -> ~1e-16). Near +-1 the
/// residual uses erfc, where erf(x) - y would cancel.
inline double erfinvOf(double y) {
  if (std::isnan(y) || y < -1 || y > 1) return std::numeric_limits<double>::quiet_NaN();
  if (y == 1 || y == -1) return std::copysign(std::numeric_limits<double>::infinity(), y);
  double w = -std::log((1.0 - y) * (1.0 + y)), p;
  if (w < 5.0) {
    w -= 2.5;
    p = 2.81022636e-08;
    for (double c : {3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                     -0.00125372503, -0.00417768164, 0.246640727, 1.50140941})
      p = c + p * w;
  } else {
    w = std::sqrt(w) - 3.0;
    p = -0.000200214257;
    for (double c : {0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                     -0.0076224613, 0.00943887047, 1.00167406, 2.83297682})
      p = c + p * w;
  }
  double x = p * y;
  const double a = std::fabs(y);
  for (int step = 0; step < 2; ++step) {
    const double ax = std::fabs(x);
    const double residual = a < 0.5 ? std::erf(ax) - a : (1.0 - a) - std::erfc(ax);
    const double slope = M_2_SQRTPI * std::exp(-ax * ax);
    x = std::copysign(ax - residual / slope, y);
  }
  return x;
}
struct Erfinv {
  template <typename C> C operator()(C a) const { return C(erfinvOf(static_cast<double>(a))); }
};

/// The modified Bessel function of the first kind I0 (Nu 0) or I1 (Nu 1),
/// times exp(-|x|) when Scaled, in double: the power series (all terms
/// positive) up to |x| = 20, the asymptotic expansion e^x / sqrt(2 pi x)
/// sum (-1)^k a_k(Nu) / x^k beyond: at |x| = 20 both reach double precision
/// in a few dozen terms (the CPU's Cephes polynomials are as accurate in
/// double; its float32 ones are a few ulps off). NaN at the infinities
/// unscaled, as the CPU's polynomials give.
template <int Nu, bool Scaled>
double besselIOf(double x) {
  if (std::isnan(x)) return x;
  const double ax = std::fabs(x);
  double result;
  if (std::isinf(x)) {  // the CPU's polynomials give inf * 0 there
    result = Scaled ? 0.0 : std::numeric_limits<double>::quiet_NaN();
  } else if (ax <= 20) {
    const double quarter_square = ax * ax / 4;
    double term = Nu == 0 ? 1.0 : ax / 2, sum = term;
    for (int k = 1; term >= sum * 1e-17 && k < 200; ++k) {
      term *= quarter_square / (k * (k + Nu));
      sum += term;
    }
    result = Scaled ? sum * std::exp(-ax) : sum;
  } else {
    const double mu = 4.0 * Nu * Nu;
    double term = 1, sum = 1;
    for (int k = 1; k < 100; ++k) {
      term *= -(mu - (2.0 * k - 1) * (2.0 * k - 1)) / (k * 8.0 * ax);
      if (std::fabs(term) < 1e-17 * std::fabs(sum)) break;
      sum += term;
    }
    const double scaled = sum / std::sqrt(2 * M_PI * ax);
    result = Scaled ? scaled : std::exp(ax) * scaled;  // inf beyond exp's range, as the CPU
  }
  return Nu == 1 && x < 0 ? -result : result;
}
template <int Nu, bool Scaled>
struct BesselI {
  template <typename C> C operator()(C a) const {
    return C(besselIOf<Nu, Scaled>(static_cast<double>(a)));
  }
};

/// log(x / (1 - x)), x clamped to [lo, hi] (eps and 1 - eps in the storage
/// type, as the CPU rounds them) unless lo < 0 (no eps).
template <typename C>
struct Logit {
  C lo, hi;
  C operator()(C x) const {
    if (lo < C(0))
      return x == C(1) ? std::numeric_limits<C>::infinity() : std::log(x / (C(1) - x));
    const C z = x < lo ? lo : (x > hi ? hi : x);
    return std::log(z / (C(1) - z));
  }
};
/// logit's backward (grad, self): 0 outside [lo, hi] (NaN outside [0, 1]
/// without eps).
template <typename C>
struct LogitBackward {
  C lo, hi;
  C operator()(C g, C x) const {
    if (lo < C(0)) return (x < C(0) || x > C(1)) ? std::numeric_limits<C>::quiet_NaN()
                                                 : g / (x * (C(1) - x));
    return (x < lo || x > hi) ? C(0) : g / (x * (C(1) - x));
  }
};

/// round(x, decimals) as the CPU: nearbyint of x scaled by 10^|decimals|
/// (divided when decimals < 0, `negative` != 0), scaled back.
template <typename C>
struct RoundDecimals {
  C ten_pow, negative;
  C operator()(C x) const {
    return negative != C(0) ? std::nearbyint(x / ten_pow) * ten_pow
                            : std::nearbyint(x * ten_pow) / ten_pow;
  }
};

/// NaN, +inf and -inf replaced by the given values (the caller passes the
/// dtype's defaults: 0, its largest and its lowest finite value).
template <typename C>
struct NanToNum {
  C nan, posinf, neginf;
  C operator()(C x) const {
    if (std::isnan(x)) return nan;
    if (std::isinf(x)) return x > C(0) ? posinf : neginf;
    return x;
  }
};

template <typename C>
struct Hardshrink {
  C lambd;
  C operator()(C x) const { return (x >= -lambd && x <= lambd) ? C(0) : x; }
};
/// x * 0 in the middle keeps a NaN a NaN.
template <typename C>
struct Softshrink {
  C lambd;
  C operator()(C x) const { return x > lambd ? x - lambd : (x < -lambd ? x + lambd : x * C(0)); }
};
/// The backward of both shrinks: (grad, self) -> grad outside [-lambd, lambd].
template <typename C>
struct ShrinkBackward {
  C lambd;
  C operator()(C g, C x) const { return (x >= -lambd && x <= lambd) ? C(0) : g; }
};
/// threshold(x, threshold, value): value where x <= threshold.
template <typename C>
struct Threshold {
  C threshold, value;
  C operator()(C x) const { return x <= threshold ? value : x; }
};

struct Copysign {
  template <typename C> C operator()(C a, C b) const { return std::copysign(a, b); }
};
struct Hypot { template <typename C> C operator()(C a, C b) const { return std::hypot(a, b); } };
/// b where a is 0, else whether a > 0 (NaN gives 0, as on the CPU).
struct Heaviside {
  template <typename C> C operator()(C a, C b) const { return a == C(0) ? b : C(a > C(0)); }
};
struct Logaddexp2 {
  template <typename C> C operator()(C a, C b) const {
    if (std::isinf(a) && a == b) return a;
    const C m = std::max(a, b);
    return m + std::log1p(std::exp2(-std::fabs(a - b))) * C(1.0 / M_LN2);
  }
};
/// x * log1p(y), 0 where x is 0 (unless y is NaN).
struct Xlog1py {
  template <typename C> C operator()(C x, C y) const {
    if (std::isnan(y)) return y;
    if (x == C(0)) return C(0);
    return x * std::log1p(y);
  }
};

/// The next representable value of storage type T after `from` towards
/// `to`: float and double by the C library, float16/bfloat16 by stepping
/// their bits (the compute type, float, has finer steps).
template <typename T>
struct Nextafter {
  template <typename C> C operator()(C from, C to) const {
    if constexpr (kIsReducedFloat<T>) {
      if (std::isnan(from) || std::isnan(to)) return from + to;
      if (from == to) return to;
      uint16_t bits = store<T>(from).bits;
      if (from == C(0)) bits = to > C(0) ? 0x0001 : 0x8001;  // smallest subnormal
      else if ((from < to) == (from > C(0))) ++bits;        // away from zero
      else --bits;
      return load(T{bits});
    } else {
      return std::nextafter(from, to);
    }
  }
};

template <typename C>
C absOf(C a) {
  if constexpr (std::is_signed_v<C>) return a < 0 ? C(-a) : a;
  else return a;
}
/// gcd of the absolute values, as the CPU computes it (gcd(0, 0) = 0).
struct Gcd {
  template <typename C> C operator()(C a, C b) const {
    C x = absOf(a), y = absOf(b);
    while (x != 0) {
      const C r = y % x;
      y = x;
      x = r;
    }
    return y;
  }
};
struct Lcm {
  template <typename C> C operator()(C a, C b) const {
    const C g = Gcd{}(a, b);
    if (g == 0) return C(0);
    return absOf(C(a / g * b));
  }
};

}  // namespace maia_eager::op
