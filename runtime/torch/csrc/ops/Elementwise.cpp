// Elementwise operators on maia: type promotion and broadcasting as PyTorch
// defines them, computed by the eager kernel binary on the current stream.
//
// Every operator is implemented once, as its out= variant; the functional
// and in-place variants call it. Operands are promoted to the common dtype
// before the launch (maia-to-maia casts are device kernels too), and CPU
// scalars become 0-dim maia tensors filled on the stream (no host sync).
#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/Dispatch.h>
#include <ATen/ScalarOps.h>
#include <ATen/native/Resize.h>
#include <ATen/native/TypeProperties.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include <array>
#include <limits>
#include <tuple>

#include "MaiaCheck.h"
#include "ops/EagerKernels.h"
#include "ops/ElementwiseLaunch.h"
#include "ops/HostRouting.h"
#include "ops/MaiaOps.h"
#include "ops/OpUtils.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;

/// conj_physical: the conjugate of a complex tensor, a copy of any other.
Tensor& conjPhysicalOut(const Tensor& self, Tensor& out) {
  if (self.is_complex()) return unaryOut("conj", Result::Common, self, out);
  if (out.is_same(self)) return out;
  at::native::resize_output(out, self.sizes());
  return out.copy_(self);
}

Tensor& addOut(const Tensor& a, const Tensor& b, const at::Scalar& alpha, Tensor& out,
               bool subtract) {
  const c10::ScalarType common = at::native::result_type(a, b);
  if (c10::isComplexType(common)) {  // complex kernels take alpha's two parts
    const c10::complex<double> value = alpha.toComplexDouble() * (subtract ? -1.0 : 1.0);
    maiaKernelArg parts[2] = {};
    for (int i = 0; i < 2; ++i) {
      parts[i].kind = maiaArgScalar;
      parts[i].dtype = maiaDtypeF64;
      parts[i].scalar.f = i == 0 ? value.real() : value.imag();
    }
    return binaryOut("add", Result::Common, a, b, out, parts);
  }
  maiaKernelArg scalar = alphaArg(alpha, at::native::result_type(a, b), subtract);
  return binaryOut("add", Result::Common, a, b, out, {scalar});
}

const char* divKernel(std::optional<c10::string_view> mode) {
  if (!mode.has_value()) return "div";
  if (*mode == "trunc") return "div_trunc";
  if (*mode == "floor") return "div_floor";
  TORCH_CHECK(false, "div expected rounding_mode to be one of None, 'trunc', or 'floor' but "
              "found '", *mode, "'");
}

Tensor& divOut(const Tensor& a, const Tensor& b, std::optional<c10::string_view> mode,
               Tensor& out) {
  const char* kernel = divKernel(mode);
  const c10::ScalarType common = at::native::result_type(a, b);
  // NotImplementedError, as the CPU's: no rounding division of complex numbers.
  TORCH_CHECK_NOT_IMPLEMENTED(!mode || !c10::isComplexType(common), "\"", kernel,
                              "\" not implemented for '", c10::toString(common), "'");
  return binaryOut(kernel, mode ? Result::Common : Result::FloatOnly, a, b, out);
}

Tensor scalarTensor(const at::Scalar& s) { return at::scalar_to_tensor(s); }

/// out (resized to self's shape, or new with dtype) filled with value.
Tensor& fillResult(const Tensor& self, c10::ScalarType dtype, const at::Scalar& value,
                   Tensor& out) {
  if (out.defined())
    at::native::resize_output(out, self.sizes());
  else
    out = newEmpty(self.sizes(), self.options().dtype(dtype));
  return fill(out, value);
}

/// clamp with Scalar bounds (also clamp_min, clamp_max), as ATen's: integer
/// and bool tensors promote with the bounds (an int tensor clamped at 0.5 is
/// float), a NaN bound makes every element NaN, and the bounds convert to the
/// result dtype with ATen's checked conversion (a bound out of an integer or
/// half type's range raises). A missing bound is the dtype's extreme.
Tensor& clampOut(const Tensor& self, const std::optional<at::Scalar>& lo,
                 const std::optional<at::Scalar>& hi, Tensor& out) {
  TORCH_CHECK(lo.has_value() || hi.has_value(),
              "torch.clamp: At least one of 'min' or 'max' must not be None");
  c10::ScalarType dtype = self.scalar_type();
  at::native::ResultTypeState state = at::native::update_result_type_state(self, {});
  for (const std::optional<at::Scalar>& bound : {lo, hi}) {
    if (!bound.has_value()) continue;
    TORCH_CHECK(!bound->isComplex(), "clamp is not supported for complex types");
    state = at::native::update_result_type_state(*bound, state);
  }
  if (!c10::isFloatingType(dtype)) dtype = at::native::result_type(state);
  // NotImplementedError, as the CPU's (it has no bool kernel).
  TORCH_CHECK_NOT_IMPLEMENTED(dtype != c10::ScalarType::Bool,
                              "clamp is not supported for bool tensors");
  auto isNan = [](const std::optional<at::Scalar>& v) { return v && std::isnan(v->toDouble()); };
  if (isNan(lo) || isNan(hi)) {
    checkOutputCast(dtype, out);
    return fillResult(self, dtype, std::numeric_limits<double>::quiet_NaN(), out);
  }
  maiaKernelArg scalars[2];
  AT_DISPATCH_ALL_TYPES_AND2(at::kHalf, at::kBFloat16, dtype, "maia_clamp", [&] {
    using Limits = std::numeric_limits<scalar_t>;
    auto bound = [&](const std::optional<at::Scalar>& value, scalar_t extreme) {
      return alphaArg(at::Scalar(value ? value->to<scalar_t>() : extreme), dtype, false);
    };
    scalars[0] = bound(lo, Limits::has_infinity ? -Limits::infinity() : Limits::lowest());
    scalars[1] = bound(hi, Limits::has_infinity ? Limits::infinity() : Limits::max());
  });
  c10::MaybeOwned<Tensor> x = castTo(self, dtype);
  return unaryOut("clamp", Result::Common, *x, out, scalars);
}

/// clamp_min (is_min) or clamp_max with a Scalar bound.
Tensor& clampBoundOut(bool is_min, const Tensor& self, const at::Scalar& bound, Tensor& out) {
  return is_min ? clampOut(self, bound, std::nullopt, out)
                : clampOut(self, std::nullopt, bound, out);
}

Tensor& whereOut(const Tensor& condition, const Tensor& a, const Tensor& b, Tensor& out);

/// clamp with tensor bounds: maximum, then minimum (both native); the
/// result dtype follows type promotion across self and the bounds.
Tensor& clampTensorOut(const Tensor& self, const std::optional<Tensor>& lo,
                       const std::optional<Tensor>& hi, Tensor& out) {
  bool has_lo = lo.has_value() && lo->defined(), has_hi = hi.has_value() && hi->defined();
  TORCH_CHECK(has_lo || has_hi, "torch.clamp: At least one of 'min' or 'max' must not be None");
  Tensor result = self;
  if (has_lo) {
    Tensor tmp;
    result = binaryOut("maximum", Result::Common, result, *lo, tmp);
  }
  if (has_hi) {
    Tensor tmp;
    result = binaryOut("minimum", Result::Common, result, *hi, tmp);
  }
  if (!out.defined()) return out = result;
  at::native::resize_output(out, result.sizes());
  return out.copy_(result);
}

Tensor& maskedFill(Tensor& self, const Tensor& mask, const Tensor& filler) {
  TORCH_CHECK(mask.scalar_type() == c10::ScalarType::Bool,
              "masked_fill_ only supports boolean masks, but got mask with dtype ",
              mask.scalar_type());
  TORCH_CHECK(filler.dim() == 0, "masked_fill_ only supports a 0-dimensional value tensor, "
              "but got tensor with ", filler.dim(), " dimension(s).");
  c10::MaybeOwned<Tensor> value = onDevice(filler, self, self.scalar_type());
  Tensor result;
  whereOut(mask, *value, self, result);
  TORCH_CHECK(result.sizes() == self.sizes(), "masked_fill_: the mask of shape ", mask.sizes(),
              " does not broadcast to the tensor of shape ", self.sizes());
  return self.copy_(result);
}

Tensor& thresholdBackward(const Tensor& grad, const Tensor& self, const at::Scalar& threshold,
                          Tensor& out) {
  maiaKernelArg scalar = alphaArg(threshold, at::native::result_type(grad, self), false);
  return binaryOut("threshold_backward", Result::Common, grad, self, out, {scalar});
}

Tensor& geluBackward(const Tensor& grad, const Tensor& self, c10::string_view approximate,
                     Tensor& out) {
  TORCH_CHECK(approximate == "none" || approximate == "tanh",
              "approximate argument must be either none or tanh.");
  return binaryOut(approximate == "tanh" ? "gelu_tanh_backward" : "gelu_erf_backward",
                   Result::FloatOnly, grad, self, out);
}

Tensor& gelu(const Tensor& self, c10::string_view approximate, Tensor& out) {
  TORCH_CHECK(approximate == "none" || approximate == "tanh",
              "approximate argument must be either none or tanh.");
  return unaryOut(approximate == "tanh" ? "gelu_tanh" : "gelu_erf", Result::FloatOnly, self,
                  out);
}

Tensor& whereOut(const Tensor& condition, const Tensor& a, const Tensor& b, Tensor& out) {
  TORCH_CHECK(condition.scalar_type() == c10::ScalarType::Bool,
              "where expected condition to be a boolean tensor, but got a tensor with dtype ",
              condition.scalar_type());
  c10::ScalarType common = at::native::result_type(a, b);
  const Tensor& ref = condition.device().is_privateuseone() ? condition : deviceOperand(a, b);
  c10::MaybeOwned<Tensor> c = onDevice(condition, ref, c10::ScalarType::Bool);
  c10::MaybeOwned<Tensor> x = onDevice(a, ref, common), y = onDevice(b, ref, common);
  return launchInto(out, common, eagerKernel("where", common), {*c, *x, *y});
}

/// pow with a Scalar exponent (or base): the pow kernel of pow.Tensor_Tensor
/// with the Scalar as a 0-dim tensor filled on the stream, so no host sync;
/// wrapped as a number, so type promotion treats it as Python's scalar
/// (an int tensor ** 2 stays int, ** 0.5 becomes the default float).
Tensor& powScalarOut(const Tensor& self, const at::Scalar& exponent, Tensor& out) {
  TORCH_CHECK(!(c10::isIntegralType(self.scalar_type(), /*includeBool=*/true) &&
                exponent.isIntegral(/*includeBool=*/true) && exponent.toLong() < 0),
              "Integers to negative integer powers are not allowed.");
  // x ** 2 is x * x, as on the CPU (RMSNorm's x.pow(2)): the multiply kernel
  // streams at memory speed, the general pow does not. Only where the result
  // keeps self's dtype: a floating tensor, or an integer one to an integer 2
  // (int ** 2.0 is float).
  const c10::ScalarType dtype = self.scalar_type();
  const bool keeps_dtype =
      c10::isFloatingType(dtype) ||
      (c10::isIntegralType(dtype, /*includeBool=*/false) && exponent.isIntegral(false));
  if (keeps_dtype && !exponent.isComplex() && !exponent.isBoolean() &&
      exponent.toDouble() == 2.0)
    return binaryOut("mul", Result::Common, self, self, out);
  return binaryOut("pow", Result::Common, self, at::native::wrapped_scalar_tensor(exponent),
                   out);
}

Tensor& powScalarBaseOut(const at::Scalar& base, const Tensor& exponent, Tensor& out) {
  return binaryOut("pow", Result::Common, at::native::wrapped_scalar_tensor(base), exponent,
                   out);
}

/// isposinf/isneginf: self == +-inf with the native comparison kernel (the
/// infinity a 0-dim tensor filled on the stream). Integer and bool tensors
/// are never infinite: the result is a false fill, with no comparison.
Tensor& isInfOut(const char* name, double infinity, const Tensor& self, Tensor& out) {
  TORCH_CHECK(!out.defined() || out.scalar_type() == c10::ScalarType::Bool, name,
              " does not support non-boolean outputs.");
  if (c10::isFloatingType(self.scalar_type()))
    return binaryOut("eq", Result::Bool, self, at::native::wrapped_scalar_tensor(infinity), out);
  return fillResult(self, c10::ScalarType::Bool, false, out);
}

template <bool Positive>
Tensor isInf(const Tensor& self) {
  Tensor out;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  return isInfOut(Positive ? "isposinf" : "isneginf", Positive ? kInf : -kInf, self, out);
}

template <bool Positive>
Tensor& isInfOutVariant(const Tensor& self, Tensor& out) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  return isInfOut(Positive ? "isposinf" : "isneginf", Positive ? kInf : -kInf, self, out);
}

// ---------------------------------------------------------------- activations

/// An activation of floating tensors with parameters (the CPU has no
/// integer kernels for them either).
Tensor& activationOut(const char* op, const Tensor& self, Tensor& out, FloatArgs params = {}) {
  checkFloating(op, self);
  return unaryOut(op, Result::Common, self, out, params);
}

/// An activation's backward: grad_input = f(grad, self) with parameters.
Tensor& activationBackward(const char* op, const Tensor& grad, const Tensor& self, Tensor& out,
                           FloatArgs params = {}) {
  checkFloating(op, self);
  return binaryOut(op, Result::Common, grad, self, out, params);
}

Tensor& leakyReluBackward(const Tensor& grad, const Tensor& self, const at::Scalar& negval,
                          bool self_is_result, Tensor& out) {
  TORCH_CHECK(!self_is_result || negval.toDouble() >= 0.0,
              "In-place leakyReLu backward calculation is triggered with a negative slope which "
              "is not supported. This is caused by calling in-place forward function with a "
              "negative slope, please call out-of-place version instead. File an issue at "
              "https://github.com/pytorch/pytorch if you do require supporting in-place "
              "leakRelu backward calculation with negative slope");
  return activationBackward("leaky_relu_backward", grad, self, out, {negval});
}

Tensor& eluBackward(const Tensor& grad, const at::Scalar& alpha, const at::Scalar& scale,
                    const at::Scalar& input_scale, bool is_result, const Tensor& self_or_result,
                    Tensor& out) {
  TORCH_CHECK(!is_result || alpha.toDouble() >= 0.0,
              "In-place elu backward calculation is triggered with a negative slope which is not "
              "supported. This is caused by calling in-place forward function with a negative "
              "slope, please call out-of-place version instead.");
  return activationBackward(is_result ? "elu_backward_result" : "elu_backward", grad,
                            self_or_result, out, {alpha, scale, input_scale});
}

/// hardtanh is clamp, with integer bounds truncated for integer tensors (no
/// type promotion by the bounds), as the CPU's hardtanh_out.
Tensor& hardtanhOut(const Tensor& self, const at::Scalar& lo, const at::Scalar& hi, Tensor& out) {
  TORCH_CHECK(self.scalar_type() != at::kBool, "Bool inputs not supported for hardtanh");
  if (!c10::isIntegralType(self.scalar_type(), /*includeBool=*/false))
    return clampOut(self, lo, hi, out);
  TORCH_CHECK(self.scalar_type() != at::kByte || (lo.toLong() >= 0 && hi.toLong() >= 0),
              "cannot do hardtanh on an unsigned type with negative limits");
  return clampOut(self, at::Scalar(lo.toLong()), at::Scalar(hi.toLong()), out);
}

/// log_sigmoid_forward's buffer is empty, as on CUDA: maia's backward
/// recomputes from the input.
std::tuple<Tensor&, Tensor&> logSigmoidForward(const Tensor& self, Tensor& out, Tensor& buffer) {
  activationOut("log_sigmoid", self, out);
  if (!buffer.defined()) buffer = newEmpty({0}, self.options());
  return {out, buffer};
}

/// addcmul/addcdiv: self + value * f(t1, t2); value in the common dtype's
/// kind (integers: an int64 scalar). `divides`: f is t1 / t2 (addcdiv).
Tensor& pointwiseOut(const char* op, bool divides, const Tensor& self, const Tensor& t1,
                     const Tensor& t2, const at::Scalar& value, Tensor& out) {
  if (divides)
    TORCH_CHECK(!(c10::isIntegralType(t1.scalar_type(), true) &&
                  c10::isIntegralType(t2.scalar_type(), true)),
                "Integer division with addcdiv is no longer supported, and in a future release "
                "addcdiv will perform a true division of tensor1 and tensor2. The historic "
                "addcdiv behavior can be implemented as (input + value * torch.trunc(tensor1 / "
                "tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / "
                "tensor2) for float inputs. The future addcdiv behavior is just the latter "
                "implementation: (input + value * tensor1 / tensor2), for all dtypes.");
  c10::ScalarType common = resultType(self, t1, t2);
  maiaKernelArg scalar = alphaArg(value, common, false);
  return ternaryOut(op, common, self, t1, t2, out, {scalar});
}

void checkLerpDtype(const Tensor& self, const Tensor& other, const char* name) {
  TORCH_CHECK(self.dtype() == other.dtype(), "expected dtype ", self.dtype(), " for `", name,
              "` but got dtype ", other.dtype());
}

Tensor& lerpScalarOut(const Tensor& self, const Tensor& end, const at::Scalar& weight,
                      Tensor& out) {
  checkLerpDtype(self, end, "end");
  return binaryOut("lerp_scalar", Result::Common, self, end, out, FloatArgs{weight});
}

Tensor& lerpTensorOut(const Tensor& self, const Tensor& end, const Tensor& weight, Tensor& out) {
  checkLerpDtype(self, end, "end");
  checkLerpDtype(self, weight, "weight");
  return ternaryOut("lerp", self.scalar_type(), self, end, weight, out);
}

// ---------------------------------------------------------------- registration

#define MAIA_COMPARISON(NAME)                                                              \
  m.impl(NAME ".Tensor", [](const Tensor& a, const Tensor& b) {                            \
    Tensor out;                                                                            \
    return binaryOut(NAME, Result::Bool, a, b, out);                                       \
  });                                                                                      \
  m.impl(NAME ".Scalar", [](const Tensor& a, const at::Scalar& b) {                        \
    Tensor out;                                                                            \
    return binaryOut(NAME, Result::Bool, a, scalarTensor(b), out);                         \
  });                                                                                      \
  m.impl(NAME ".Tensor_out", [](const Tensor& a, const Tensor& b, Tensor& out) -> Tensor& { \
    return binaryOut(NAME, Result::Bool, a, b, out);                                       \
  });                                                                                      \
  m.impl(NAME ".Scalar_out",                                                               \
         [](const Tensor& a, const at::Scalar& b, Tensor& out) -> Tensor& {                \
           return binaryOut(NAME, Result::Bool, a, scalarTensor(b), out);                  \
         });                                                                               \
  m.impl(NAME "_.Tensor", [](Tensor& a, const Tensor& b) -> Tensor& {                       \
    Tensor out;                                                                            \
    return a.copy_(binaryOut(NAME, Result::Bool, a, b, out));                              \
  });                                                                                      \
  m.impl(NAME "_.Scalar", [](Tensor& a, const at::Scalar& b) -> Tensor& {                   \
    Tensor out;                                                                            \
    return a.copy_(binaryOut(NAME, Result::Bool, a, scalarTensor(b), out));                \
  })

/// clamp_min/clamp_max: the Scalar forms are clamp with one bound, the Tensor
/// forms KERNEL (maximum/minimum), as ATen's; functional, in-place and out=.
#define MAIA_CLAMP_BOUND(NAME, IS_MIN, KERNEL)                                             \
  m.impl(NAME, [](const Tensor& a, const at::Scalar& b) {                                  \
    Tensor out;                                                                            \
    return clampBoundOut(IS_MIN, a, b, out);                                               \
  });                                                                                      \
  m.impl(NAME "_", [](Tensor& a, const at::Scalar& b) -> Tensor& {                         \
    return clampBoundOut(IS_MIN, a, b, a);                                                 \
  });                                                                                      \
  m.impl(NAME ".out", [](const Tensor& a, const at::Scalar& b, Tensor& out) -> Tensor& {    \
    return clampBoundOut(IS_MIN, a, b, out);                                               \
  });                                                                                      \
  MAIA_BINARY_OUT(NAME, KERNEL, Result::Common, ".Tensor_out")

#define MAIA_ACTIVATION(NAME)                                                              \
  m.impl(NAME, [](const Tensor& a) {                                                       \
    Tensor out;                                                                            \
    return activationOut(NAME, a, out);                                                    \
  });                                                                                      \
  m.impl(NAME "_", [](Tensor& a) -> Tensor& { return activationOut(NAME, a, a); });         \
  m.impl(NAME ".out", [](const Tensor& a, Tensor& out) -> Tensor& {                         \
    return activationOut(NAME, a, out);                                                    \
  })

#define MAIA_POINTWISE(NAME, DIVIDES)                                                      \
  m.impl(NAME, [](const Tensor& a, const Tensor& b, const Tensor& c, const at::Scalar& v) {\
    Tensor out;                                                                            \
    return pointwiseOut(NAME, DIVIDES, a, b, c, v, out);                                   \
  });                                                                                      \
  m.impl(NAME "_", [](Tensor& a, const Tensor& b, const Tensor& c,                         \
                      const at::Scalar& v) -> Tensor& {                                    \
    return pointwiseOut(NAME, DIVIDES, a, b, c, v, a);                                     \
  });                                                                                      \
  m.impl(NAME ".out", [](const Tensor& a, const Tensor& b, const Tensor& c,                \
                         const at::Scalar& v, Tensor& out) -> Tensor& {                    \
    return pointwiseOut(NAME, DIVIDES, a, b, c, v, out);                                   \
  })

/// NAME(grad, self) and its out variant NAME.OUT.
#define MAIA_ACTIVATION_BACKWARD(NAME, OUT)                                                \
  m.impl(#NAME, [](const Tensor& g, const Tensor& a) {                                     \
    Tensor out;                                                                            \
    return activationBackward(#NAME, g, a, out);                                           \
  });                                                                                      \
  m.impl(#NAME "." OUT, [](const Tensor& g, const Tensor& a, Tensor& out) -> Tensor& {      \
    return activationBackward(#NAME, g, a, out);                                           \
  })

/// NAME(grad, self, p, q) with two Scalar parameters, and NAME.grad_input.
#define MAIA_ACTIVATION_BACKWARD_2(NAME)                                                   \
  m.impl(#NAME, [](const Tensor& g, const Tensor& a, S p, S q) {                           \
    Tensor out;                                                                            \
    return activationBackward(#NAME, g, a, out, {p, q});                                   \
  });                                                                                      \
  m.impl(#NAME ".grad_input",                                                              \
         [](const Tensor& g, const Tensor& a, S p, S q, Tensor& out) -> Tensor& {          \
           return activationBackward(#NAME, g, a, out, {p, q});                            \
         })

/// The activations and the pointwise ops with a scalar: functional,
/// in-place and out= variants where aten has them, and their backwards.
void registerActivations(routing::NativeKernels& m) {
  using S = const at::Scalar&;
  m.impl("leaky_relu", [](const Tensor& a, S negval) {
    Tensor out;
    return activationOut("leaky_relu", a, out, {negval});
  });
  m.impl("leaky_relu_", [](Tensor& a, S negval) -> Tensor& {
    return activationOut("leaky_relu", a, a, {negval});
  });
  m.impl("leaky_relu.out", [](const Tensor& a, S negval, Tensor& out) -> Tensor& {
    return activationOut("leaky_relu", a, out, {negval});
  });
  m.impl("leaky_relu_backward", [](const Tensor& g, const Tensor& a, S negval, bool is_result) {
    Tensor out;
    return leakyReluBackward(g, a, negval, is_result, out);
  });
  m.impl("leaky_relu_backward.grad_input", [](const Tensor& g, const Tensor& a, S negval,
                                              bool is_result, Tensor& out) -> Tensor& {
    return leakyReluBackward(g, a, negval, is_result, out);
  });
  m.impl("elu", [](const Tensor& a, S alpha, S scale, S input_scale) {
    Tensor out;
    return activationOut("elu", a, out, {alpha, scale, input_scale});
  });
  m.impl("elu_", [](Tensor& a, S alpha, S scale, S input_scale) -> Tensor& {
    return activationOut("elu", a, a, {alpha, scale, input_scale});
  });
  m.impl("elu.out", [](const Tensor& a, S alpha, S scale, S input_scale, Tensor& out) -> Tensor& {
    return activationOut("elu", a, out, {alpha, scale, input_scale});
  });
  m.impl("elu_backward", [](const Tensor& g, S alpha, S scale, S input_scale, bool is_result,
                            const Tensor& a) {
    Tensor out;
    return eluBackward(g, alpha, scale, input_scale, is_result, a, out);
  });
  m.impl("elu_backward.grad_input", [](const Tensor& g, S alpha, S scale, S input_scale,
                                       bool is_result, const Tensor& a, Tensor& out) -> Tensor& {
    return eluBackward(g, alpha, scale, input_scale, is_result, a, out);
  });
  m.impl("hardtanh", [](const Tensor& a, S lo, S hi) {
    Tensor out;
    return hardtanhOut(a, lo, hi, out);
  });
  m.impl("hardtanh_", [](Tensor& a, S lo, S hi) -> Tensor& { return hardtanhOut(a, lo, hi, a); });
  m.impl("hardtanh.out", [](const Tensor& a, S lo, S hi, Tensor& out) -> Tensor& {
    return hardtanhOut(a, lo, hi, out);
  });
  MAIA_ACTIVATION_BACKWARD_2(hardtanh_backward);
  m.impl("softplus", [](const Tensor& a, S beta, S threshold) {
    Tensor out;
    return activationOut("softplus", a, out, {beta, threshold});
  });
  m.impl("softplus.out", [](const Tensor& a, S beta, S threshold, Tensor& out) -> Tensor& {
    return activationOut("softplus", a, out, {beta, threshold});
  });
  MAIA_ACTIVATION_BACKWARD_2(softplus_backward);
  MAIA_ACTIVATION("mish");
  MAIA_ACTIVATION("hardswish");
  MAIA_ACTIVATION("hardsigmoid");
  m.impl("mish_backward", [](const Tensor& g, const Tensor& a) {
    Tensor out;
    return activationBackward("mish_backward", g, a, out);
  });
  MAIA_ACTIVATION_BACKWARD(hardswish_backward, "out");
  MAIA_ACTIVATION_BACKWARD(hardsigmoid_backward, "grad_input");
  m.impl("log_sigmoid_forward", [](const Tensor& a) {
    Tensor out, buffer;
    logSigmoidForward(a, out, buffer);
    return std::make_tuple(out, buffer);
  });
  m.impl("log_sigmoid_forward.output", [](const Tensor& a, Tensor& out, Tensor& buffer) {
    return logSigmoidForward(a, out, buffer);
  });
  m.impl("log_sigmoid_backward", [](const Tensor& g, const Tensor& a, const Tensor&) {
    Tensor out;
    return activationBackward("log_sigmoid_backward", g, a, out);
  });
  m.impl("log_sigmoid_backward.grad_input",
         [](const Tensor& g, const Tensor& a, const Tensor&, Tensor& out) -> Tensor& {
           return activationBackward("log_sigmoid_backward", g, a, out);
         });
  MAIA_POINTWISE("addcmul", false);
  MAIA_POINTWISE("addcdiv", true);
  m.impl("lerp.Scalar", [](const Tensor& a, const Tensor& b, S w) {
    Tensor out;
    return lerpScalarOut(a, b, w, out);
  });
  m.impl("lerp_.Scalar", [](Tensor& a, const Tensor& b, S w) -> Tensor& {
    return lerpScalarOut(a, b, w, a);
  });
  m.impl("lerp.Scalar_out", [](const Tensor& a, const Tensor& b, S w, Tensor& out) -> Tensor& {
    return lerpScalarOut(a, b, w, out);
  });
  m.impl("lerp.Tensor", [](const Tensor& a, const Tensor& b, const Tensor& w) {
    Tensor out;
    return lerpTensorOut(a, b, w, out);
  });
  m.impl("lerp_.Tensor", [](Tensor& a, const Tensor& b, const Tensor& w) -> Tensor& {
    return lerpTensorOut(a, b, w, a);
  });
  m.impl("lerp.Tensor_out",
         [](const Tensor& a, const Tensor& b, const Tensor& w, Tensor& out) -> Tensor& {
           return lerpTensorOut(a, b, w, out);
         });
}

MAIA_NATIVE_KERNELS(m) {
  m.impl("add.Tensor", [](const Tensor& a, const Tensor& b, const at::Scalar& alpha) {
    Tensor out;
    return addOut(a, b, alpha, out, false);
  });
  m.impl("add_.Tensor", [](Tensor& a, const Tensor& b, const at::Scalar& alpha) -> Tensor& {
    return addOut(a, b, alpha, a, false);
  });
  m.impl("add.out",
         [](const Tensor& a, const Tensor& b, const at::Scalar& alpha, Tensor& out) -> Tensor& {
           return addOut(a, b, alpha, out, false);
         });
  m.impl("sub.Tensor", [](const Tensor& a, const Tensor& b, const at::Scalar& alpha) {
    Tensor out;
    return addOut(a, b, alpha, out, true);
  });
  m.impl("sub_.Tensor", [](Tensor& a, const Tensor& b, const at::Scalar& alpha) -> Tensor& {
    return addOut(a, b, alpha, a, true);
  });
  m.impl("sub.out",
         [](const Tensor& a, const Tensor& b, const at::Scalar& alpha, Tensor& out) -> Tensor& {
           return addOut(a, b, alpha, out, true);
         });
  MAIA_BINARY("mul", "mul", Result::Common);
  MAIA_BINARY("div", "div", Result::FloatOnly);
  m.impl("div.Tensor_mode",
         [](const Tensor& a, const Tensor& b, std::optional<c10::string_view> mode) {
           Tensor out;
           return divOut(a, b, mode, out);
         });
  m.impl("div_.Tensor_mode",
         [](Tensor& a, const Tensor& b, std::optional<c10::string_view> mode) -> Tensor& {
           return divOut(a, b, mode, a);
         });
  m.impl("div.out_mode", [](const Tensor& a, const Tensor& b,
                            std::optional<c10::string_view> mode, Tensor& out) -> Tensor& {
    return divOut(a, b, mode, out);
  });
  m.impl("floor_divide", [](const Tensor& a, const Tensor& b) {
    Tensor out;
    return binaryOut("div_floor", Result::Common, a, b, out);
  });
  m.impl("floor_divide_.Tensor", [](Tensor& a, const Tensor& b) -> Tensor& {
    return binaryOut("div_floor", Result::Common, a, b, a);
  });
  m.impl("floor_divide.out", [](const Tensor& a, const Tensor& b, Tensor& out) -> Tensor& {
    return binaryOut("div_floor", Result::Common, a, b, out);
  });
  MAIA_PLAIN_BINARY("maximum", Result::Common);
  MAIA_PLAIN_BINARY("minimum", Result::Common);
  m.impl("pow.Tensor_Tensor", [](const Tensor& a, const Tensor& b) {
    Tensor out;
    return binaryOut("pow", Result::Common, a, b, out);
  });
  m.impl("pow.Tensor_Tensor_out", [](const Tensor& a, const Tensor& b, Tensor& out) -> Tensor& {
    return binaryOut("pow", Result::Common, a, b, out);
  });
  m.impl("pow_.Tensor", [](Tensor& a, const Tensor& b) -> Tensor& {
    return binaryOut("pow", Result::Common, a, b, a);
  });
  m.impl("pow.Tensor_Scalar", [](const Tensor& a, const at::Scalar& b) {
    Tensor out;
    return powScalarOut(a, b, out);
  });
  m.impl("pow.Tensor_Scalar_out",
         [](const Tensor& a, const at::Scalar& b, Tensor& out) -> Tensor& {
           return powScalarOut(a, b, out);
         });
  m.impl("pow_.Scalar", [](Tensor& a, const at::Scalar& b) -> Tensor& {
    return powScalarOut(a, b, a);
  });
  m.impl("pow.Scalar", [](const at::Scalar& a, const Tensor& b) {
    Tensor out;
    return powScalarBaseOut(a, b, out);
  });
  m.impl("pow.Scalar_out", [](const at::Scalar& a, const Tensor& b, Tensor& out) -> Tensor& {
    return powScalarBaseOut(a, b, out);
  });
  m.impl("isposinf", TORCH_FN(isInf<true>));
  m.impl("isposinf.out", TORCH_FN(isInfOutVariant<true>));
  m.impl("isneginf", TORCH_FN(isInf<false>));
  m.impl("isneginf.out", TORCH_FN(isInfOutVariant<false>));
  MAIA_COMPARISON("eq");
  MAIA_COMPARISON("ne");
  MAIA_COMPARISON("lt");
  MAIA_COMPARISON("le");
  MAIA_COMPARISON("gt");
  MAIA_COMPARISON("ge");
  MAIA_PLAIN_BINARY("logical_and", Result::Bool);
  MAIA_PLAIN_BINARY("logical_or", Result::Bool);
  MAIA_PLAIN_BINARY("logical_xor", Result::Bool);
  MAIA_BINARY_OUT("bitwise_and", "bitwise_and", Result::Common, ".Tensor_out");
  MAIA_BINARY_OUT("bitwise_or", "bitwise_or", Result::Common, ".Tensor_out");
  MAIA_BINARY_OUT("bitwise_xor", "bitwise_xor", Result::Common, ".Tensor_out");
  MAIA_BINARY_OUT("remainder", "remainder", Result::Common, ".Tensor_out");
  MAIA_BINARY_OUT("fmod", "fmod", Result::Common, ".Tensor_out");
  MAIA_BINARY_OUT("xlogy", "xlogy", Result::FloatOnly, ".OutTensor");
  MAIA_PLAIN_BINARY("fmax", Result::Common);
  MAIA_PLAIN_BINARY("fmin", Result::Common);
  MAIA_PLAIN_BINARY("logaddexp", Result::Common);
  MAIA_PLAIN_BINARY("atan2", Result::FloatOnly);
  m.impl("atan2_", [](Tensor& a, const Tensor& b) -> Tensor& {
    return binaryOut("atan2", Result::FloatOnly, a, b, a);
  });
  m.impl("rsub.Tensor", [](const Tensor& a, const Tensor& b, const at::Scalar& alpha) {
    Tensor out;
    return addOut(b, a, alpha, out, /*subtract=*/true);  // b - alpha * a
  });
  MAIA_UNARY("neg", Result::Common);
  MAIA_UNARY("abs", Result::Real);
  m.impl("angle", [](const Tensor& a) {
    Tensor out;
    return unaryOut("angle", Result::FloatReal, a, out);
  });
  m.impl("angle.out", [](const Tensor& a, Tensor& out) -> Tensor& {
    return unaryOut("angle", Result::FloatReal, a, out);
  });
  m.impl("conj_physical.out", TORCH_FN(conjPhysicalOut));
  m.impl("conj_physical_", [](Tensor& a) -> Tensor& { return conjPhysicalOut(a, a); });
  MAIA_UNARY("sign", Result::Common);
  // sgn is sign for real tensors; the complex sign kernels compute sgn (z / |z|).
  MAIA_UNARY_KERNEL("sgn", "sign", Result::Common);
  MAIA_UNARY("exp", Result::FloatOnly);
  MAIA_UNARY("log", Result::FloatOnly);
  MAIA_UNARY("log2", Result::FloatOnly);
  MAIA_UNARY("log10", Result::FloatOnly);
  MAIA_UNARY("log1p", Result::FloatOnly);
  MAIA_UNARY("expm1", Result::FloatOnly);
  MAIA_UNARY("sqrt", Result::FloatOnly);
  MAIA_UNARY("rsqrt", Result::FloatOnly);
  MAIA_UNARY("sin", Result::FloatOnly);
  MAIA_UNARY("cos", Result::FloatOnly);
  MAIA_UNARY("tanh", Result::FloatOnly);
  MAIA_UNARY("sigmoid", Result::FloatOnly);
  MAIA_UNARY("silu", Result::FloatOnly);
  MAIA_UNARY("erf", Result::FloatOnly);
  MAIA_UNARY("reciprocal", Result::FloatOnly);
  MAIA_UNARY("logical_not", Result::Bool);
  m.impl("isnan", [](const Tensor& a) {
    Tensor out;
    return unaryOut("isnan", Result::Bool, a, out);
  });
  m.impl("signbit", [](const Tensor& a) {
    Tensor out;
    return unaryOut("signbit", Result::Bool, a, out);
  });
  m.impl("signbit.out", [](const Tensor& a, Tensor& out) -> Tensor& {
    return unaryOut("signbit", Result::Bool, a, out);
  });
  MAIA_UNARY("bitwise_not", Result::Common);
  MAIA_UNARY("tan", Result::FloatOnly);
  MAIA_UNARY("lgamma", Result::FloatOnly);
  MAIA_UNARY("digamma", Result::FloatOnly);
  MAIA_UNARY("asin", Result::FloatOnly);
  MAIA_UNARY("acos", Result::FloatOnly);
  MAIA_UNARY("atan", Result::FloatOnly);
  MAIA_UNARY("sinh", Result::FloatOnly);
  MAIA_UNARY("cosh", Result::FloatOnly);
  MAIA_UNARY("asinh", Result::FloatOnly);
  MAIA_UNARY("acosh", Result::FloatOnly);
  MAIA_UNARY("atanh", Result::FloatOnly);
  MAIA_UNARY("ceil", Result::Common);
  MAIA_UNARY("floor", Result::Common);
  MAIA_UNARY("trunc", Result::Common);
  MAIA_UNARY("round", Result::Common);
  m.impl("relu", [](const Tensor& a) {
    Tensor out;
    return unaryOut("relu", Result::Common, a, out);
  });
  m.impl("relu_", [](Tensor& a) -> Tensor& { return unaryOut("relu", Result::Common, a, a); });
  m.impl("gelu", [](const Tensor& a, c10::string_view approximate) {
    Tensor out;
    return gelu(a, approximate, out);
  });
  m.impl("gelu_", [](Tensor& a, c10::string_view approximate) -> Tensor& {
    return gelu(a, approximate, a);
  });
  m.impl("gelu.out", [](const Tensor& a, c10::string_view approximate, Tensor& out) -> Tensor& {
    return gelu(a, approximate, out);
  });
  m.impl("clamp", [](const Tensor& a, const std::optional<at::Scalar>& lo,
                     const std::optional<at::Scalar>& hi) {
    Tensor out;
    return clampOut(a, lo, hi, out);
  });
  m.impl("clamp_", [](Tensor& a, const std::optional<at::Scalar>& lo,
                      const std::optional<at::Scalar>& hi) -> Tensor& {
    return clampOut(a, lo, hi, a);
  });
  m.impl("clamp.out", [](const Tensor& a, const std::optional<at::Scalar>& lo,
                         const std::optional<at::Scalar>& hi, Tensor& out) -> Tensor& {
    return clampOut(a, lo, hi, out);
  });
  MAIA_CLAMP_BOUND("clamp_min", true, "maximum");
  MAIA_CLAMP_BOUND("clamp_max", false, "minimum");
  m.impl("tanh_backward", [](const Tensor& grad, const Tensor& y) {
    Tensor out;
    return binaryOut("tanh_backward", Result::FloatOnly, grad, y, out);
  });
  m.impl("tanh_backward.grad_input",
         [](const Tensor& grad, const Tensor& y, Tensor& out) -> Tensor& {
           return binaryOut("tanh_backward", Result::FloatOnly, grad, y, out);
         });
  m.impl("sigmoid_backward", [](const Tensor& grad, const Tensor& y) {
    Tensor out;
    return binaryOut("sigmoid_backward", Result::FloatOnly, grad, y, out);
  });
  m.impl("sigmoid_backward.grad_input",
         [](const Tensor& grad, const Tensor& y, Tensor& out) -> Tensor& {
           return binaryOut("sigmoid_backward", Result::FloatOnly, grad, y, out);
         });
  m.impl("threshold_backward",
         [](const Tensor& grad, const Tensor& self, const at::Scalar& threshold) {
           Tensor out;
           return thresholdBackward(grad, self, threshold, out);
         });
  m.impl("threshold_backward.grad_input", [](const Tensor& grad, const Tensor& self,
                                             const at::Scalar& threshold,
                                             Tensor& out) -> Tensor& {
    return thresholdBackward(grad, self, threshold, out);
  });
  m.impl("gelu_backward",
         [](const Tensor& grad, const Tensor& self, c10::string_view approximate) {
           Tensor out;
           return geluBackward(grad, self, approximate, out);
         });
  m.impl("gelu_backward.grad_input", [](const Tensor& grad, const Tensor& self,
                                        c10::string_view approximate, Tensor& out) -> Tensor& {
    return geluBackward(grad, self, approximate, out);
  });
  m.impl("clamp.Tensor", [](const Tensor& a, const std::optional<Tensor>& lo,
                            const std::optional<Tensor>& hi) {
    Tensor out;
    return clampTensorOut(a, lo, hi, out);
  });
  m.impl("clamp_.Tensor", [](Tensor& a, const std::optional<Tensor>& lo,
                             const std::optional<Tensor>& hi) -> Tensor& {
    return clampTensorOut(a, lo, hi, a);
  });
  m.impl("clamp.Tensor_out", [](const Tensor& a, const std::optional<Tensor>& lo,
                                const std::optional<Tensor>& hi, Tensor& out) -> Tensor& {
    return clampTensorOut(a, lo, hi, out);
  });
  m.impl("masked_fill_.Scalar",
         [](Tensor& self, const Tensor& mask, const at::Scalar& value) -> Tensor& {
           return maskedFill(self, mask, at::scalar_to_tensor(value));
         });
  m.impl("masked_fill_.Tensor",
         [](Tensor& self, const Tensor& mask, const Tensor& value) -> Tensor& {
           return maskedFill(self, mask, value);
         });
  registerActivations(m);
  m.impl("where.self", [](const Tensor& c, const Tensor& a, const Tensor& b) {
    Tensor out;
    return whereOut(c, a, b, out);
  });
  m.impl("where.self_out",
         [](const Tensor& c, const Tensor& a, const Tensor& b, Tensor& out) -> Tensor& {
           return whereOut(c, a, b, out);
         });
}

}  // namespace
}  // namespace torch_maia::ops
