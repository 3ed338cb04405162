// The elementwise math functions beyond basic arithmetic on maia: the
// error-function family (erfc, erfinv), the modified Bessel functions i0,
// i0e, i1, i1e, exp2, frac, sinc, entr, logit, nan_to_num, round with
// decimals, the shrink and threshold activations, copysign, hypot,
// heaviside, logaddexp2, xlog1py, nextafter, gcd, lcm and the incomplete
// gamma functions, computed by the eager kernel binary (functors in
// runtime/kernels/eager/math_ops.h, gamma_ops.h) with the CPU's dtype rules
// and errors.
#include <ATen/Dispatch.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/result_type.h>
#include <torch/library.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>

#include "ops/ElementwiseLaunch.h"
#include "ops/HostRouting.h"
#include "ops/OpUtils.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;
using S = const at::Scalar&;

/// out = op(a, b) for an op the CPU computes for floating dtypes only
/// (`cpu_name` in its error) with the common dtype of a and b.
Tensor& floatingBinaryOut(const char* op, const char* cpu_name, const Tensor& a, const Tensor& b,
                          Tensor& out) {
  checkFloatDtype(cpu_name, at::result_type(a, b));
  return binaryOut(op, Result::Common, a, b, out);
}

/// gcd/lcm: integer dtypes only, as on the CPU.
Tensor& integerBinaryOut(const char* op, const char* cpu_name, const Tensor& a, const Tensor& b,
                         Tensor& out) {
  const c10::ScalarType common = at::result_type(a, b);
  TORCH_CHECK_NOT_IMPLEMENTED(c10::isIntegralType(common, /*includeBool=*/false), "\"",
                              cpu_name, "\" not implemented for '", c10::toString(common), "'");
  return binaryOut(op, Result::Common, a, b, out);
}

Tensor& heavisideOut(const Tensor& self, const Tensor& values, Tensor& out) {
  TORCH_CHECK(!self.is_complex() && !values.is_complex() &&
                  (!out.defined() || !out.is_complex()),
              "heaviside is not yet implemented for complex tensors.");
  TORCH_CHECK(self.dtype() == values.dtype() && (!out.defined() || self.dtype() == out.dtype()),
              "heaviside is not yet implemented for tensors with different dtypes.");
  return binaryOut("heaviside", Result::Common, self, values, out);
}

Tensor& fracOut(const Tensor& self, Tensor& out) {
  checkFloatDtype("frac_cpu", self.scalar_type());
  return unaryOut("frac", Result::Common, self, out);
}

/// logit's clamping bounds for dtype: eps and 1 - eps rounded to dtype, as
/// the CPU computes them (1 - 1e-3 is 1 in bfloat16); lo = -1 without eps.
FloatArgs logitBounds(std::optional<double> eps, c10::ScalarType dtype) {
  if (!eps.has_value()) return {-1.0, -1.0};
  double lo = *eps, hi = 1.0 - *eps;
  if (at::isFloatingType(dtype)) {
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, dtype, "logit", [&] {
      const scalar_t rounded = static_cast<scalar_t>(*eps);
      lo = static_cast<double>(rounded);
      hi = static_cast<double>(static_cast<scalar_t>(scalar_t(1) - rounded));
    });
  }
  return {lo, hi};
}

Tensor& logitOut(const Tensor& self, std::optional<double> eps, Tensor& out) {
  const c10::ScalarType dtype =
      at::isFloatingType(self.scalar_type()) ? self.scalar_type() : defaultFloat();
  return unaryOut("logit", Result::FloatOnly, self, out, logitBounds(eps, dtype));
}

Tensor& logitBackwardOut(const Tensor& grad, const Tensor& self, std::optional<double> eps,
                         Tensor& out) {
  return binaryOut("logit_backward", Result::Common, grad, self, out,
                   logitBounds(eps, at::result_type(grad, self)));
}

/// nan_to_num: integer and bool tensors are copied; floating ones replace
/// NaN (0 by default) and the infinities (the dtype's extremes by default).
Tensor& nanToNumOut(const Tensor& self, std::optional<double> nan, std::optional<double> posinf,
                    std::optional<double> neginf, Tensor& out) {
  TORCH_CHECK(!self.is_complex(), "nan_to_num is not implemented for complex tensors");
  if (c10::isIntegralType(self.scalar_type(), /*includeBool=*/true)) {
    if (out.is_same(self)) return out;
    if (!out.defined()) return out = self.clone();
    at::native::resize_output(out, self.sizes());
    return out.copy_(self);
  }
  double largest = 0, lowest = 0;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, self.scalar_type(), "nan_to_num",
                                  [&] {
                                    largest = std::numeric_limits<scalar_t>::max();
                                    lowest = std::numeric_limits<scalar_t>::lowest();
                                  });
  return unaryOut("nan_to_num", Result::Common, self, out,
                  FloatArgs{nan.value_or(0.0), posinf.value_or(largest), neginf.value_or(lowest)});
}

Tensor& hardshrinkOut(const Tensor& self, S lambd, Tensor& out) {
  checkFloatDtype("hardshrink_cpu", self.scalar_type());
  return unaryOut("hardshrink", Result::Common, self, out, FloatArgs{lambd});
}

Tensor& softshrinkOut(const Tensor& self, S lambd, Tensor& out) {
  TORCH_CHECK(lambd.toDouble() >= 0, "lambda must be greater or equal to 0, but found to be ",
              lambd.toDouble(), ".");
  checkFloatDtype("softshrink_cpu", self.scalar_type());
  return unaryOut("softshrink", Result::Common, self, out, FloatArgs{lambd});
}

Tensor& shrinkBackwardOut(const Tensor& grad, const Tensor& self, S lambd, Tensor& out) {
  checkFloatDtype("shrink_backward_cpu", self.scalar_type());
  return binaryOut("shrink_backward", Result::Common, grad, self, out, FloatArgs{lambd});
}

/// threshold: value where self <= threshold; both scalars converted to
/// self's dtype (no type promotion), as the CPU's kernel.
Tensor& thresholdOut(const Tensor& self, S threshold, S value, Tensor& out) {
  TORCH_CHECK_NOT_IMPLEMENTED(self.scalar_type() != at::kBool,
                              "\"threshold_cpu\" not implemented for 'Bool'");
  const c10::ScalarType dtype = self.scalar_type();
  const maiaKernelArg scalars[2] = {alphaArg(threshold, dtype, false),
                                    alphaArg(value, dtype, false)};
  return unaryOut("threshold", Result::Common, self, out, scalars);
}

/// round(decimals): the scale as the CPU computes it (pow(10, |decimals|)
/// in the compute type); decimals 0 is plain round (integers too).
Tensor& roundDecimalsOut(const Tensor& self, int64_t decimals, Tensor& out) {
  if (decimals == 0) return unaryOut("round", Result::Common, self, out);
  checkFloatDtype("round_cpu", self.scalar_type());
  const double ten_pow = std::pow(10.0, static_cast<double>(std::abs(decimals)));
  return unaryOut("round_decimals", Result::Common, self, out,
                  FloatArgs{ten_pow, decimals < 0 ? 1.0 : 0.0});
}

}  // namespace

/// A torch.special function NAME and NAME.out (no in-place form), integer
/// inputs promoted to float.
#define MAIA_SPECIAL_UNARY(NAME)                                                           \
  m.impl(NAME, [](const Tensor& a) {                                                       \
    Tensor out;                                                                            \
    return unaryOut(NAME, Result::FloatOnly, a, out);                                      \
  });                                                                                      \
  m.impl(NAME ".out", [](const Tensor& a, Tensor& out) -> Tensor& {                         \
    return unaryOut(NAME, Result::FloatOnly, a, out);                                      \
  })

/// NAME, NAME_ and NAME.out of a binary op whose dtypes CHECKED (one of
/// floatingBinaryOut, integerBinaryOut) refuses as the CPU kernel CPU_NAME.
#define MAIA_CHECKED_BINARY(NAME, CHECKED, CPU_NAME)                                      \
  m.impl(NAME, [](const Tensor& a, const Tensor& b) {                                     \
    Tensor out;                                                                           \
    return CHECKED(NAME, CPU_NAME, a, b, out);                                            \
  });                                                                                     \
  m.impl(NAME "_", [](Tensor& a, const Tensor& b) -> Tensor& {                             \
    return CHECKED(NAME, CPU_NAME, a, b, a);                                              \
  });                                                                                     \
  m.impl(NAME ".out", [](const Tensor& a, const Tensor& b, Tensor& out) -> Tensor& {       \
    return CHECKED(NAME, CPU_NAME, a, b, out);                                            \
  })

MAIA_NATIVE_KERNELS(m) {
  m.impl("round.decimals", [](const Tensor& a, int64_t decimals) {
    Tensor out;
    return roundDecimalsOut(a, decimals, out);
  });
  m.impl("round_.decimals", [](Tensor& a, int64_t decimals) -> Tensor& {
    return roundDecimalsOut(a, decimals, a);
  });
  m.impl("round.decimals_out", TORCH_FN(roundDecimalsOut));
  MAIA_UNARY("erfc", Result::FloatOnly);
  MAIA_UNARY("erfinv", Result::FloatOnly);
  MAIA_UNARY("exp2", Result::FloatOnly);
  MAIA_UNARY("sinc", Result::FloatOnly);
  MAIA_UNARY("i0", Result::FloatOnly);
  MAIA_SPECIAL_UNARY("special_entr");
  MAIA_SPECIAL_UNARY("special_i0e");
  MAIA_SPECIAL_UNARY("special_i1");
  MAIA_SPECIAL_UNARY("special_i1e");
  m.impl("frac", [](const Tensor& a) {
    Tensor out;
    return fracOut(a, out);
  });
  m.impl("frac_", [](Tensor& a) -> Tensor& { return fracOut(a, a); });
  m.impl("frac.out", TORCH_FN(fracOut));
  m.impl("logit", [](const Tensor& a, std::optional<double> eps) {
    Tensor out;
    return logitOut(a, eps, out);
  });
  m.impl("logit_", [](Tensor& a, std::optional<double> eps) -> Tensor& {
    return logitOut(a, eps, a);
  });
  m.impl("logit.out", TORCH_FN(logitOut));
  m.impl("logit_backward", [](const Tensor& g, const Tensor& a, std::optional<double> eps) {
    Tensor out;
    return logitBackwardOut(g, a, eps, out);
  });
  m.impl("logit_backward.grad_input", TORCH_FN(logitBackwardOut));
  using D = std::optional<double>;
  m.impl("nan_to_num", [](const Tensor& a, D nan, D posinf, D neginf) {
    Tensor out;
    return nanToNumOut(a, nan, posinf, neginf, out);
  });
  m.impl("nan_to_num_", [](Tensor& a, D nan, D posinf, D neginf) -> Tensor& {
    return nanToNumOut(a, nan, posinf, neginf, a);
  });
  m.impl("nan_to_num.out", TORCH_FN(nanToNumOut));
  m.impl("hardshrink", [](const Tensor& a, S lambd) {
    Tensor out;
    return hardshrinkOut(a, lambd, out);
  });
  m.impl("hardshrink.out", TORCH_FN(hardshrinkOut));
  m.impl("softshrink", [](const Tensor& a, S lambd) {
    Tensor out;
    return softshrinkOut(a, lambd, out);
  });
  m.impl("softshrink.out", TORCH_FN(softshrinkOut));
  m.impl("hardshrink_backward", [](const Tensor& g, const Tensor& a, S lambd) {
    Tensor out;
    return shrinkBackwardOut(g, a, lambd, out);
  });
  m.impl("hardshrink_backward.grad_input",
         [](const Tensor& g, const Tensor& a, S lambd, Tensor& out) -> Tensor& {
           return shrinkBackwardOut(g, a, lambd, out);
         });
  m.impl("softshrink_backward", [](const Tensor& g, const Tensor& a, S lambd) {
    Tensor out;
    return shrinkBackwardOut(g, a, lambd, out);
  });
  m.impl("softshrink_backward.grad_input",
         [](const Tensor& g, const Tensor& a, S lambd, Tensor& out) -> Tensor& {
           return shrinkBackwardOut(g, a, lambd, out);
         });
  m.impl("threshold", [](const Tensor& a, S threshold, S value) {
    Tensor out;
    return thresholdOut(a, threshold, value, out);
  });
  m.impl("threshold_", [](Tensor& a, S threshold, S value) -> Tensor& {
    return thresholdOut(a, threshold, value, a);
  });
  m.impl("threshold.out", TORCH_FN(thresholdOut));

  MAIA_BINARY("copysign", "copysign", Result::FloatOnly);
  MAIA_PLAIN_BINARY("hypot", Result::Common);
  m.impl("hypot_", [](Tensor& a, const Tensor& b) -> Tensor& {
    return binaryOut("hypot", Result::Common, a, b, a);
  });
  MAIA_PLAIN_BINARY("logaddexp2", Result::Common);
  MAIA_PLAIN_BINARY("special_xlog1py", Result::FloatOnly);
  m.impl("heaviside", [](const Tensor& a, const Tensor& b) {
    Tensor out;
    return heavisideOut(a, b, out);
  });
  m.impl("heaviside_", [](Tensor& a, const Tensor& b) -> Tensor& {
    return heavisideOut(a, b, a);
  });
  m.impl("heaviside.out", TORCH_FN(heavisideOut));
  MAIA_CHECKED_BINARY("nextafter", floatingBinaryOut, "nextafter_cpu");
  MAIA_CHECKED_BINARY("gcd", integerBinaryOut, "gcd_cpu");
  MAIA_CHECKED_BINARY("lcm", integerBinaryOut, "lcm_cpu");
  MAIA_CHECKED_BINARY("igamma", floatingBinaryOut, "igamma_cpu");
  MAIA_CHECKED_BINARY("igammac", floatingBinaryOut, "igammac_cpu");
}

}  // namespace torch_maia::ops
