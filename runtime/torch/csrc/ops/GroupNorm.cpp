// Group normalization on maia for float16/bfloat16: ATen's composite
// (math_group_norm, device ops only) rounds every intermediate to the half
// type; with a small variance that loses most digits. Like the CPU kernel,
// compute in float32 and round the outputs once. Other dtypes keep the
// composite as it is.
#include <ATen/ATen.h>
#include <ATen/ops/native_group_norm_native.h>
#include <torch/library.h>

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
  if (!at::isReducedFloatingType(input.scalar_type())) {
    return at::native::math_group_norm(input, weight, bias, N, C, HxW, group, eps);
  }
  auto [out, mean, rstd] = at::native::math_group_norm(input.to(at::kFloat), toFloat(weight),
                                                       toFloat(bias), N, C, HxW, group, eps);
  // The statistics in the input's type, as the CPU (and CUDA) kernels give
  // them when the parameters have the input's type.
  const auto dtype = input.scalar_type();
  return {out.to(dtype), mean.to(dtype), rstd.to(dtype)};
}

MAIA_NATIVE_KERNELS(m) {
  m.impl("native_group_norm", TORCH_FN(groupNorm));
}

}  // namespace
}  // namespace torch_maia::ops
