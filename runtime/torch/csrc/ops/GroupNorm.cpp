// Group normalization on maia. Forward for float16/bfloat16: ATen's
// composite (math_group_norm, device ops only) rounds every intermediate to
// the half type; with a small variance that loses most digits. Like the CPU
// kernel, compute in float32 and round the outputs once. Other dtypes keep
// the composite as it is. Backward: the CPU kernel's formulas
// (GroupNormKernel.cpp) composed of maia operators in the op-math type;
// ATen has no composite for it, so it ran on the host fallback.
#include <ATen/ATen.h>
#include <ATen/OpMathType.h>
#include <ATen/ops/native_group_norm_native.h>
#include <torch/library.h>

#include <array>
#include <optional>
#include <tuple>

#include "ops/HostRouting.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;

std::optional<Tensor> toFloat(const std::optional<Tensor>& t) {
  if (!t.has_value() || !t->defined()) return t;
  return t->to(at::kFloat);
}

std::tuple<Tensor, Tensor, Tensor> groupNorm(const Tensor& input,
                                             const std::optional<Tensor>& weight,
                                             const std::optional<Tensor>& bias, c10::SymInt n,
                                             c10::SymInt c, c10::SymInt hxw, int64_t group,
                                             double eps) {
  const int64_t N = n.guard_int(__FILE__, __LINE__), C = c.guard_int(__FILE__, __LINE__),
                HxW = hxw.guard_int(__FILE__, __LINE__);
  // The composite views its input as (N, G, -1): a channels-last input is
  // computed contiguous (it raised "view size is not compatible"), and the
  // output takes the input's memory format, as the CPU's does.
  const auto format = input.suggest_memory_format();
  const Tensor dense = input.contiguous();
  if (!at::isReducedFloatingType(input.scalar_type())) {
    auto [out, mean, rstd] =
        at::native::math_group_norm(dense, weight, bias, N, C, HxW, group, eps);
    return {out.contiguous(format), mean, rstd};
  }
  auto [out, mean, rstd] = at::native::math_group_norm(dense.to(at::kFloat), toFloat(weight),
                                                       toFloat(bias), N, C, HxW, group, eps);
  // The statistics in the input's type, as the CPU (and CUDA) kernels give
  // them when the parameters have the input's type.
  const auto dtype = input.scalar_type();
  return {out.to(dtype).contiguous(format), mean.to(dtype), rstd.to(dtype)};
}

std::tuple<Tensor, Tensor, Tensor> groupNormBackward(
    const Tensor& grad_out, const Tensor& input, const Tensor& mean, const Tensor& rstd,
    const std::optional<Tensor>& weight, c10::SymInt n, c10::SymInt c, c10::SymInt hxw,
    int64_t group, std::array<bool, 3> output_mask) {
  const int64_t N = n.guard_int(__FILE__, __LINE__), C = c.guard_int(__FILE__, __LINE__),
                HxW = hxw.guard_int(__FILE__, __LINE__), G = group, D = C / G;
  const bool affine = weight.has_value() && weight->defined();
  const auto op_math = at::toOpMathType(input.scalar_type());
  const auto param_type = affine ? weight->scalar_type() : input.scalar_type();
  Tensor grad_input, grad_weight, grad_bias;
  if (input.numel() == 0) {
    if (output_mask[0]) grad_input = at::zeros_like(input, input.suggest_memory_format());
    if (output_mask[1]) grad_weight = at::zeros({C}, input.options().dtype(param_type));
    if (output_mask[2]) grad_bias = at::zeros({C}, input.options().dtype(param_type));
    return {grad_input, grad_weight, grad_bias};
  }
  // (N, G, D, HxW) views in the op-math type; statistics (N, G, 1).
  const Tensor x = input.to(op_math).reshape({N, G, D, HxW});
  const Tensor dy = grad_out.to(op_math).reshape({N, G, D, HxW});
  const Tensor mu = mean.to(op_math).reshape({N, G, 1});
  const Tensor r = rstd.to(op_math).reshape({N, G, 1});
  const Tensor gamma = affine ? weight->to(op_math).reshape({1, G, D}) : Tensor();
  const Tensor ds = (dy * x).sum(-1);  // (N, G, D): sum over HxW of dY * X
  const Tensor db = dy.sum(-1);        // (N, G, D): sum over HxW of dY
  if (output_mask[0]) {
    const Tensor ds_g = (affine ? ds * gamma : ds).sum(-1, /*keepdim=*/true);
    const Tensor db_g = (affine ? db * gamma : db).sum(-1, /*keepdim=*/true);
    const double s = 1.0 / static_cast<double>(D * HxW);
    const Tensor c2 = (db_g * mu - ds_g) * r.pow(3) * s;
    const Tensor c3 = -c2 * mu - db_g * r * s;
    const Tensor c1 = affine ? r * gamma : r;
    const Tensor dx = c1.unsqueeze(-1) * dy + c2.unsqueeze(-1) * x + c3.unsqueeze(-1);
    grad_input = at::empty_like(input, input.suggest_memory_format());
    grad_input.copy_(dx.reshape(input.sizes()));
  }
  if (output_mask[1]) grad_weight = ((ds - db * mu) * r).sum(0).reshape({C}).to(param_type);
  if (output_mask[2]) grad_bias = db.sum(0).reshape({C}).to(param_type);
  return {grad_input, grad_weight, grad_bias};
}

MAIA_NATIVE_KERNELS(m) {
  m.impl("native_group_norm", TORCH_FN(groupNorm));
  m.impl("native_group_norm_backward", TORCH_FN(groupNormBackward));
}

}  // namespace
}  // namespace torch_maia::ops
