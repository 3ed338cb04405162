// The scalar functions of the eager elementwise kernels, one functor each.
// They compute in the compute type (float for float16/bfloat16) and follow
// PyTorch's CPU semantics (floor division, NaN propagation of max/min, ...).
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <complex>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "error_function.h"
#include "exponential.h"
#include "scalar_types.h"
#include "wide_math.h"

namespace maia_eager::op {


struct Mul {
  template <typename C> C operator()(C a, C b) const {
    if constexpr (IsComplex<C>::value) {
      // The textbook product, as ATen's CPU kernels (c10::complex and its
      // vectorized form) compute it: std::complex's operator* would recover
      // infinities from NaN parts (C Annex G), which the CPU does not.
      using R = typename C::value_type;
      const R ar = a.real(), ai = a.imag(), br = b.real(), bi = b.imag();
      return C(ar * br - ai * bi, ar * bi + ai * br);
    } else {
      return a * b;
    }
  }
};
template <typename C>
struct Add {
  C alpha;
  C operator()(C a, C b) const { return a + alpha * b; }
};
/// a + b (the collectives' SUM: Add with alpha 1 computes the same).
struct Plus { template <typename C> C operator()(C a, C b) const { return a + b; } };
/// a + alpha * b with the full complex product even for a real alpha (an
/// infinite b gives a NaN imaginary part), as ATen's CPU add computes it.
template <typename C>
struct AddComplex {
  C alpha_real, alpha_imag;  // the scalars arrive as C(part)
  C operator()(C a, C b) const { return a + Mul{}(C(alpha_real.real(), alpha_imag.real()), b); }
};
/// a / b; complex quotients by Smith's scaled division, exactly as
/// c10::complex divides (ATen's CPU kernels, vectorized ones included, call
/// it per element): no overflow for large or tiny divisors, and a 0 divisor
/// gives the parts' own a / 0 (std::complex's Annex G recovery differs).
struct Div {
  template <typename C> C operator()(C a, C b) const {
    if constexpr (IsComplex<C>::value) {
      using R = typename C::value_type;
      const R ar = a.real(), ai = a.imag(), c = b.real(), d = b.imag();
      const R abs_c = std::fabs(c), abs_d = std::fabs(d);
      if (abs_c >= abs_d) {
        if (abs_c == R(0) && abs_d == R(0)) return C(ar / abs_c, ai / abs_d);
        const R rat = d / c, scl = R(1) / (c + d * rat);
        return C((ar + ai * rat) * scl, (ai - ar * rat) * scl);
      }
      const R rat = c / d, scl = R(1) / (d + c * rat);  // also a NaN part
      return C((ar * rat + ai) * scl, (ai * rat - ar) * scl);
    } else {
      return a / b;
    }
  }
};
struct DivTrunc {
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>) return std::trunc(a / b);
    else return b == 0 ? C(0) : C(a / b);  // PyTorch raises for ints; callers check
  }
};
/// trunc(a / b) with the quotient first rounded to the storage type T, as
/// PyTorch's CPU kernel does for float16/bfloat16.
template <typename T>
struct DivTruncRounded {
  float operator()(float a, float b) const { return std::trunc(load(store<T>(a / b))); }
};
struct DivFloor {
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>) {
      if (b == 0) return a / b;
      C mod = std::fmod(a, b);
      C div = (a - mod) / b;
      if (mod != 0 && ((b < 0) != (mod < 0))) div -= C(1);
      if (div == 0) return std::copysign(C(0), a / b);
      C floor_div = std::floor(div);
      if (div - floor_div > C(0.5)) floor_div += C(1);
      return floor_div;
    } else {
      if (b == 0) return C(0);
      C q = a / b;
      if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
      return q;
    }
  }
};
struct Maximum {
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>)
      if (std::isnan(a) || std::isnan(b)) return std::isnan(a) ? a : b;
    return a > b ? a : b;
  }
};
struct Minimum {
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>)
      if (std::isnan(a) || std::isnan(b)) return std::isnan(a) ? a : b;
    return a < b ? a : b;
  }
};
struct Pow {
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>) {
      return std::pow(a, b);
    } else if constexpr (std::is_same_v<C, bool>) {
      return a || !b;
    } else {
      // Integer powers by squaring, as PyTorch computes them.
      if (b < 0) {
        if (a == 1) return C(1);
        if (a == -1) return (b % 2) ? C(-1) : C(1);
        return C(0);
      }
      C result = 1;
      for (C base = a, e = b; e; e >>= 1, base *= base)
        if (e & 1) result *= base;
      return result;
    }
  }
};

// Comparisons and logical operators produce bool.
struct Eq { template <typename C> bool operator()(C a, C b) const { return a == b; } };
struct Ne { template <typename C> bool operator()(C a, C b) const { return a != b; } };
struct Lt { template <typename C> bool operator()(C a, C b) const { return a < b; } };
struct Le { template <typename C> bool operator()(C a, C b) const { return a <= b; } };
struct Gt { template <typename C> bool operator()(C a, C b) const { return a > b; } };
struct Ge { template <typename C> bool operator()(C a, C b) const { return a >= b; } };
struct LogicalAnd {
  template <typename C> bool operator()(C a, C b) const { return a != C(0) && b != C(0); }
};
struct LogicalOr {
  template <typename C> bool operator()(C a, C b) const { return a != C(0) || b != C(0); }
};
struct LogicalXor {
  template <typename C> bool operator()(C a, C b) const { return (a != C(0)) != (b != C(0)); }
};
struct BitwiseAnd { template <typename C> C operator()(C a, C b) const { return a & b; } };
struct BitwiseOr { template <typename C> C operator()(C a, C b) const { return a | b; } };
struct BitwiseXor { template <typename C> C operator()(C a, C b) const { return a ^ b; } };

/// Python's a % b: the sign of the divisor (PyTorch's remainder).
struct Remainder {
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>) {
      C mod = std::fmod(a, b);
      if (mod != 0 && ((b < 0) != (mod < 0))) mod += b;
      return mod;
    } else {
      if (b == 0) return C(0);  // undefined, as on CUDA (the CPU raises)
      C mod = a % b;
      if constexpr (std::is_signed_v<C>)
        if (mod != 0 && ((b < 0) != (mod < 0))) mod += b;
      return mod;
    }
  }
};
/// C's fmod: the sign of the dividend.
struct Fmod {
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>) return std::fmod(a, b);
    else return b == 0 ? C(0) : C(a % b);
  }
};
/// fmax/fmin: a NaN loses to a number (maximum/minimum propagate it).
struct Fmax {
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>) return std::fmax(a, b);
    else return a > b ? a : b;
  }
};
struct Fmin {
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>) return std::fmin(a, b);
    else return a < b ? a : b;
  }
};
struct Atan2 { template <typename C> C operator()(C a, C b) const { return std::atan2(a, b); } };
/// log(exp(a) + exp(b)) without overflow; equal infinities stay themselves.
struct Logaddexp {
  template <typename C>
  C operator()(C a, C b) const {
    if (std::isinf(a) && a == b) return a;
    const C m = std::max(a, b);
    return m + std::log1p(std::exp(-std::fabs(a - b)));
  }
};
/// x * log(y), 0 where x is 0 (unless y is NaN).
struct Xlogy {
  template <typename C>
  C operator()(C x, C y) const {
    if (std::isnan(y)) return y;
    if (x == 0) return C(0);
    return x * std::log(y);
  }
};

// Unary.
struct Identity { template <typename C> C operator()(C a) const { return a; } };
struct Neg { template <typename C> C operator()(C a) const { return -a; } };
/// |a|; of a complex a its real modulus, by hypot (no overflow of the squares).
struct Abs {
  template <typename C> auto operator()(C a) const {
    if constexpr (IsComplex<C>::value) return std::abs(a);
    else if constexpr (std::is_floating_point_v<C>) return std::fabs(a);
    else return a < 0 ? C(-a) : a;
  }
};
/// The argument of a complex a (real); of a real a 0 or pi, NaN stays NaN.
struct Angle {
  template <typename C> auto operator()(C a) const {
    if constexpr (IsComplex<C>::value) return std::arg(a);
    else return std::isnan(a) ? a : (a < C(0) ? C(M_PI) : C(0));
  }
};
struct Conj { template <typename C> C operator()(C a) const { return std::conj(a); } };
/// sign(a) in {-1, 0, 1}: NaN and -0 give 0, bool is itself, as the CPU;
/// complex a: sgn, a / |a| (0 for 0).
struct Sign {
  template <typename C> C operator()(C a) const {
    if constexpr (IsComplex<C>::value) return a == C(0) ? C(0) : a / Abs{}(a);
    else if constexpr (std::is_same_v<C, bool>) return a;
    else if constexpr (std::is_unsigned_v<C>) return C(a != C(0));
    else return C(int(C(0) < a) - int(a < C(0)));
  }
};
struct Relu { template <typename C> C operator()(C a) const { return a > C(0) ? a : (a != a ? a : C(0)); } };
// Rounding: integers are already whole. round is half to even (nearbyint in
// the default rounding mode), as torch.round.
enum class RoundMode { Ceil, Floor, Trunc, Nearest };
template <RoundMode M>
struct Rounding {
  template <typename C> C operator()(C a) const {
    if constexpr (!std::is_floating_point_v<C>) return a;
    else if constexpr (M == RoundMode::Ceil) return std::ceil(a);
    else if constexpr (M == RoundMode::Floor) return std::floor(a);
    else if constexpr (M == RoundMode::Trunc) return std::trunc(a);
    else return std::nearbyint(a);
  }
};
using Ceil = Rounding<RoundMode::Ceil>;
using Floor = Rounding<RoundMode::Floor>;
using Trunc = Rounding<RoundMode::Trunc>;
using Round = Rounding<RoundMode::Nearest>;
struct Exp { template <typename C> C operator()(C a) const { return exponential(a); } };
struct Log { template <typename C> C operator()(C a) const { return std::log(a); } };
struct Log2 { template <typename C> C operator()(C a) const { return std::log2(a); } };
struct Log10 { template <typename C> C operator()(C a) const { return std::log10(a); } };
struct Log1p { template <typename C> C operator()(C a) const { return std::log1p(a); } };
struct Expm1 { template <typename C> C operator()(C a) const { return std::expm1(a); } };
struct Sqrt { template <typename C> C operator()(C a) const { return std::sqrt(a); } };
struct Rsqrt { template <typename C> C operator()(C a) const { return C(1) / std::sqrt(a); } };
struct Sin { template <typename C> C operator()(C a) const { return std::sin(a); } };
struct Cos { template <typename C> C operator()(C a) const { return std::cos(a); } };
struct Tanh { template <typename C> C operator()(C a) const { return hyperbolicTangent(a); } };
struct Sigmoid {
  template <typename C> C operator()(C a) const { return Div{}(C(1), C(1) + exponential(-a)); }
};
struct Silu { template <typename C> C operator()(C a) const { return a / (C(1) + exponential(-a)); } };
struct Erf { template <typename C> C operator()(C a) const { return errorFunction(a); } };
struct Reciprocal { template <typename C> C operator()(C a) const { return Div{}(C(1), a); } };
struct GeluErf {
  template <typename C> C operator()(C a) const {
    return a * C(0.5) * (C(1) + errorFunction(a * C(M_SQRT1_2)));
  }
};
struct GeluTanh {
  template <typename C> C operator()(C a) const {
    const C kBeta = C(M_SQRT2 * M_2_SQRTPI * 0.5), kKappa = C(0.044715);
    return C(0.5) * a * (C(1) + hyperbolicTangent(kBeta * (a + kKappa * a * a * a)));
  }
};
struct LogicalNot { template <typename C> bool operator()(C a) const { return a == C(0); } };
struct Lgamma { template <typename C> C operator()(C a) const { return std::lgamma(a); } };
/// The digamma function in double: the recurrence psi(x) = psi(x + 1) - 1/x
/// up to x >= 10, then the asymptotic series to x^-10 (next term < 3e-14);
/// negative x by reflection, poles (0 and the negative integers) as ATen.
inline double digammaOf(double x) {
  if (x == 0) return std::copysign(INFINITY, -x);
  if (x < 0) {
    if (x == std::floor(x)) return NAN;
    return digammaOf(1 - x) - M_PI / std::tan(M_PI * x);
  }
  double result = 0;
  for (; x < 10; x += 1) result -= 1 / x;
  const double inv2 = 1 / (x * x);
  const double series =
      inv2 * (1.0 / 12 - inv2 * (1.0 / 120 - inv2 * (1.0 / 252 - inv2 * (1.0 / 240 -
                                                                          inv2 / 132))));
  return result + std::log(x) - 0.5 / x - series;
}
struct Digamma {
  template <typename C> C operator()(C a) const { return C(digammaOf(static_cast<double>(a))); }
};
struct Tan { template <typename C> C operator()(C a) const { return std::tan(a); } };
struct Asin { template <typename C> C operator()(C a) const { return std::asin(a); } };
struct Acos { template <typename C> C operator()(C a) const { return std::acos(a); } };
struct Atan { template <typename C> C operator()(C a) const { return std::atan(a); } };
struct Sinh { template <typename C> C operator()(C a) const { return std::sinh(a); } };
struct Cosh { template <typename C> C operator()(C a) const { return std::cosh(a); } };
struct Asinh { template <typename C> C operator()(C a) const { return std::asinh(a); } };
struct Acosh { template <typename C> C operator()(C a) const { return std::acosh(a); } };
struct Atanh { template <typename C> C operator()(C a) const { return std::atanh(a); } };
struct IsNan {
  template <typename C> bool operator()(C a) const {
    if constexpr (std::is_floating_point_v<C>) return std::isnan(a);
    else return false;
  }
};
struct Signbit {
  template <typename C> bool operator()(C a) const {
    // The sign bit itself: GCC 12 ICEs vectorizing std::signbit of a
    // widened bfloat16.
    if constexpr (std::is_same_v<C, float>) return std::bit_cast<uint32_t>(a) >> 31;
    else if constexpr (std::is_same_v<C, double>) return std::bit_cast<uint64_t>(a) >> 63;
    else if constexpr (std::is_signed_v<C>) return a < 0;
    else return false;
  }
};
struct BitwiseNot {
  template <typename C> C operator()(C a) const {
    if constexpr (std::is_same_v<C, bool>) return !a;
    else return C(~a);
  }
};

// Backward formulas: (grad, saved) -> grad_input.
struct TanhBackward {
  template <typename C> C operator()(C g, C y) const { return g * (C(1) - y * y); }
};
struct SigmoidBackward {
  template <typename C> C operator()(C g, C y) const { return g * (C(1) - y) * y; }
};
template <typename C>
struct ThresholdBackward {
  C threshold;
  C operator()(C g, C x) const { return x <= threshold ? C(0) : g; }
};
struct GeluErfBackward {
  template <typename C> C operator()(C g, C x) const {
    const C cdf = C(0.5) * (C(1) + errorFunction(x * C(M_SQRT1_2)));
    const C pdf = exponential(C(-0.5) * x * x) * C(M_2_SQRTPI * M_SQRT1_2 * 0.5);
    return g * (cdf + x * pdf);
  }
};
struct GeluTanhBackward {
  template <typename C> C operator()(C g, C x) const {
    const C kBeta = C(M_SQRT2 * M_2_SQRTPI * 0.5), kKappa = C(0.044715);
    const C inner = kBeta * (x + kKappa * x * x * x);
    const C t = hyperbolicTangent(inner);
    const C left = C(0.5) * x, right = C(1) + t;
    const C left_d = C(0.5) * right;
    const C right_d = left * (C(1) - t * t) * kBeta * (C(1) + C(3) * kKappa * x * x);
    return g * (left_d + right_d);
  }
};
/// clamp(a, lo, hi); NaN stays NaN, as PyTorch.
template <typename C>
struct Clamp {
  C lo, hi;
  C operator()(C a) const {
    if constexpr (std::is_floating_point_v<C>)
      if (a != a) return a;
    C r = a < lo ? lo : a;  // min(max(a, lo), hi): hi wins when lo > hi
    return r > hi ? hi : r;
  }
};

// Activations, with PyTorch's CPU formulas (aten/src/ATen/native/cpu/Activation.cpp);
// scalar parameters in the compute type, as the CPU converts them.
template <typename C>
struct LeakyRelu {
  C negval;
  C operator()(C x) const { return x > C(0) ? x : x * negval; }
};
template <typename C>
struct LeakyReluBackward {
  C negval;
  C operator()(C g, C x) const { return x > C(0) ? g : g * negval; }
};
/// elu(x) = x * scale for x > 0, else (exp(x * input_scale) - 1) * alpha * scale.
template <typename C>
struct Elu {
  C alpha, scale, input_scale;
  C operator()(C x) const {
    return x <= C(0) ? std::expm1(x * input_scale) * (alpha * scale) : x * scale;
  }
};
/// elu's gradient from its input x.
template <typename C>
struct EluBackward {
  C alpha, scale, input_scale;
  C operator()(C g, C x) const {
    return x <= C(0) ? g * input_scale * (alpha * scale) * std::exp(x * input_scale)
                     : g * scale;
  }
};
/// elu's gradient from its result y (in-place elu saves the result).
template <typename C>
struct EluBackwardResult {
  C alpha, scale, input_scale;
  C operator()(C g, C y) const {
    return y <= C(0) ? g * input_scale * (y + alpha * scale) : g * scale;
  }
};
template <typename C>
struct HardtanhBackward {
  C lo, hi;
  C operator()(C g, C x) const { return (x <= lo || x >= hi) ? C(0) : g; }
};
/// softplus(x) = log1p(exp(x * beta)) / beta, x where x * beta > threshold.
template <typename C>
struct Softplus {
  C beta, threshold;
  C operator()(C x) const {
    return x * beta > threshold ? x : std::log1p(std::exp(x * beta)) / beta;
  }
};
template <typename C>
struct SoftplusBackward {
  C beta, threshold;
  C operator()(C g, C x) const {
    if (x * beta > threshold) return g;
    const C z = std::exp(x * beta);
    return g * z / (z + C(1));
  }
};
struct Mish {
  template <typename C> C operator()(C x) const { return x * std::tanh(std::log1p(std::exp(x))); }
};
struct MishBackward {
  template <typename C> C operator()(C g, C x) const {
    const C sigmoid = C(1) / (C(1) + std::exp(-x));
    const C t = std::tanh(std::log1p(std::exp(x)));
    return g * (t + x * sigmoid * (C(1) - t * t));
  }
};
struct Hardswish {
  template <typename C> C operator()(C x) const {
    return x * std::min(std::max(x + C(3), C(0)), C(6)) / C(6);
  }
};
struct HardswishBackward {
  template <typename C> C operator()(C g, C x) const {
    if (x <= C(-3)) return C(0);
    return x < C(3) ? g * (x / C(3) + C(0.5)) : g;  // NaN: g, as the CPU
  }
};
struct Hardsigmoid {
  template <typename C> C operator()(C x) const {
    return std::min(std::max(x + C(3), C(0)), C(6)) / C(6);
  }
};
struct HardsigmoidBackward {
  template <typename C> C operator()(C g, C x) const {
    return (x > C(-3) && x < C(3)) ? g / C(6) : C(0);
  }
};
/// log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|)), stable for large |x|.
struct LogSigmoid {
  template <typename C> C operator()(C x) const {
    return std::min(x, C(0)) - std::log1p(std::exp(-std::fabs(x)));
  }
};
struct LogSigmoidBackward {
  template <typename C> C operator()(C g, C x) const {
    const C z = std::exp(-std::fabs(x));
    return x < C(0) ? g * (C(1) - z / (C(1) + z)) : g * (z / (C(1) + z));
  }
};

// Pointwise arithmetic with a scalar.
template <typename C>
struct Addcmul {
  C value;
  C operator()(C a, C b, C c) const { return a + value * b * c; }
};
template <typename C>
struct Addcdiv {
  C value;
  C operator()(C a, C b, C c) const { return a + value * (b / c); }
};
/// lerp as PyTorch computes it: from the nearer end for |weight| >= 0.5.
struct Lerp {
  template <typename C> C operator()(C a, C b, C w) const {
    return std::fabs(w) < C(0.5) ? a + w * (b - a) : b - (b - a) * (C(1) - w);
  }
};
template <typename C>
struct LerpScalar {
  C weight;
  C operator()(C a, C b) const { return Lerp{}(a, b, weight); }
};

// Gated and parametric activations. Their backwards round an intermediate
// to the storage type T where the CPU stores it (glu's sigmoid is written
// into grad_input first), so float16/bfloat16 gradients match it.
/// glu: a * sigmoid(b) of the input's two halves.
struct Glu {
  template <typename C> C operator()(C a, C b) const { return a * (C(1) / (C(1) + exponential(-b))); }
};
/// sigmoid(b) rounded to T: the CPU's first step of glu's backward.
template <typename T, typename C>
C storedSigmoid(C b) {
  return load(store<T>(C(1) / (C(1) + exponential(-b))));
}
/// glu backward, first half: sigmoid(b) * grad.
template <typename T>
struct GluBackwardFirst {
  template <typename C> C operator()(C b, C g) const { return storedSigmoid<T>(b) * g; }
};
/// glu backward, second half: (1 - s) * s * a * grad, s = sigmoid(b).
template <typename T>
struct GluBackwardSecond {
  template <typename C> C operator()(C a, C b, C g) const {
    const C s = storedSigmoid<T>(b);
    return (C(1) - s) * s * a * g;
  }
};
/// positive ? a : b for floating a, b, as bit masks: no branch on the sign
/// (the broadcast weight makes prelu's loop strided, where a branch on
/// random signs mispredicts half the time: 10x slower than a mul).
template <typename C>
C selectBits(bool positive, C a, C b) {
  using U = std::conditional_t<sizeof(C) == 8, uint64_t, uint32_t>;
  const U mask = U(0) - static_cast<U>(positive);
  return std::bit_cast<C>((std::bit_cast<U>(a) & mask) | (std::bit_cast<U>(b) & ~mask));
}
/// prelu: x where positive, else weight * x (NaN stays NaN).
struct Prelu {
  template <typename C> C operator()(C x, C w) const { return selectBits(x > C(0), x, w * x); }
};
/// prelu backward: (grad_input, grad_weight) from (x, weight, grad): where
/// x is positive (grad, 0), else (weight * grad, x * grad).
struct PreluBackward {
  template <typename C> std::pair<C, C> operator()(C x, C w, C g) const {
    const bool positive = x > C(0);
    return {selectBits(positive, g, w * g), selectBits(positive, C(0), x * g)};
  }
};

}  // namespace maia_eager::op
