// Convolution on maia. PyTorch routes convolutions of a backend without a
// native convolution to convolution_overrideable, whose default kernel
// raises instead of reaching the boxed fallback; these kernels compute it
// on the host explicitly (counted and warned like any fallback) until the
// device has convolution kernels.
#include <ATen/native/ConvUtils.h>
#include <ATen/ops/convolution.h>
#include <ATen/ops/convolution_backward.h>
#include <torch/library.h>

#include "ops/Fallback.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;

Tensor toDeviceOf(const Tensor& t, const Tensor& like) {
  return t.defined() ? t.to(like.device()) : t;
}

Tensor convolution(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                   c10::IntArrayRef stride, c10::IntArrayRef padding, c10::IntArrayRef dilation,
                   bool transposed, c10::IntArrayRef output_padding, int64_t groups) {
  noteHostFallback("aten::convolution_overrideable");
  std::optional<Tensor> host_bias;
  if (bias.has_value() && bias->defined()) host_bias = bias->cpu();
  Tensor out = at::convolution(input.cpu(), weight.cpu(), host_bias, stride, padding, dilation,
                               transposed, output_padding, groups);
  // The layout PyTorch's fake kernel promises for this device's backend
  // (compiled graphs assert it).
  at::MemoryFormat format = at::native::_determine_backend_memory_format(
      input, weight, at::native::ConvBackend::Overrideable);
  return out.to(input.device()).contiguous(format);
}

std::tuple<Tensor, Tensor, Tensor> convolutionBackward(
    const Tensor& grad_output, const Tensor& input, const Tensor& weight,
    c10::IntArrayRef stride, c10::IntArrayRef padding, c10::IntArrayRef dilation,
    bool transposed, c10::IntArrayRef output_padding, int64_t groups,
    std::array<bool, 3> output_mask) {
  noteHostFallback("aten::convolution_backward_overrideable");
  std::vector<int64_t> bias_sizes = {weight.size(transposed ? 1 : 0) *
                                     (transposed ? groups : 1)};
  auto [grad_input, grad_weight, grad_bias] = at::convolution_backward(
      grad_output.cpu(), input.cpu(), weight.cpu(), bias_sizes, stride, padding, dilation,
      transposed, output_padding, groups, output_mask);
  return {toDeviceOf(grad_input, input), toDeviceOf(grad_weight, weight),
          toDeviceOf(grad_bias, weight)};
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("convolution_overrideable", TORCH_FN(convolution));
  m.impl("convolution_backward_overrideable", TORCH_FN(convolutionBackward));
}

}  // namespace
}  // namespace torch_maia::ops
