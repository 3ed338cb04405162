// 3-D convolutions on maia (conv3d, conv_transpose3d and their gradients)
// as sums over the kernel's depth taps of the 2-D device convolutions
// (Convolution.cpp): for depth tap kd, the input depth slices each output
// depth reads (od * sd - pd + kd * dd, zero outside) are gathered into
// the batch dimension, convolved in 2-D with the weight's slice kd, and
// summed. The input gradient scatters each tap's 2-D input gradient back
// to its depth slices (index_add), the weight gradient of slice kd is that
// tap's 2-D weight gradient; a transposed convolution is the input
// gradient of the convolution whose input is its result, as in 2-D.
// float16/bfloat16 sum the taps in float and round once.
#include <ATen/ops/arange.h>
#include <ATen/ops/constant_pad_nd.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>

#include "ops/Convolution.h"

namespace torch_maia::ops {

using at::Tensor;

namespace {

struct DepthGeometry {
  int64_t stride, padding, dilation, taps;
};

DepthGeometry depthOf(c10::IntArrayRef stride, c10::IntArrayRef padding,
                      c10::IntArrayRef dilation, int64_t taps) {
  return {stride[0], padding[0], dilation[0], taps};
}

std::vector<int64_t> spatial2d(c10::IntArrayRef values) { return {values[1], values[2]}; }

/// x (N, C, D, H, W) -> (N * count, C, H, W): for each n the depth slices
/// `index` (of x padded by `padding` zeros in depth) in order.
Tensor gatherDepth(const Tensor& x, const Tensor& index, int64_t padding) {
  const Tensor padded =
      padding > 0 ? at::constant_pad_nd(x, {0, 0, 0, 0, padding, padding}, 0) : x;
  const Tensor slices = padded.index_select(2, index);  // (N, C, count, H, W)
  return slices.transpose(1, 2).reshape({-1, x.size(1), x.size(3), x.size(4)});
}

/// (N * count, C, H, W) -> (N, C, count, H, W).
Tensor ungatherDepth(const Tensor& t, int64_t n) {
  return t.view({n, t.size(0) / n, t.size(1), t.size(2), t.size(3)}).transpose(1, 2);
}

/// The padded-input depth slices read by depth tap kd for each output depth.
Tensor depthIndex(const DepthGeometry& g, int64_t kd, int64_t output_depth,
                  const at::TensorOptions& options) {
  return at::arange(output_depth, options.dtype(at::kLong)).mul_(g.stride).add_(kd * g.dilation);
}

bool reduced(const Tensor& t) { return at::isReducedFloatingType(t.scalar_type()); }

Tensor toFloatIfReduced(const Tensor& t) {
  return t.defined() && reduced(t) ? t.to(at::kFloat) : t;
}

}  // namespace

Tensor deviceConvolution3d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                           c10::IntArrayRef stride, c10::IntArrayRef padding,
                           c10::IntArrayRef dilation, int64_t groups) {
  if (reduced(input)) {
    return deviceConvolution3d(input.to(at::kFloat), weight.to(at::kFloat),
                               toFloatIfReduced(bias), stride, padding, dilation, groups)
        .to(input.scalar_type());
  }
  const DepthGeometry g = depthOf(stride, padding, dilation, weight.size(2));
  const int64_t n = input.size(0);
  const int64_t output_depth =
      (input.size(2) + 2 * g.padding - g.dilation * (g.taps - 1) - 1) / g.stride + 1;
  Tensor sum;
  for (int64_t kd = 0; kd < g.taps; ++kd) {
    const Tensor slices =
        gatherDepth(input, depthIndex(g, kd, output_depth, input.options()), g.padding);
    Tensor tap = deviceConvolution(slices, weight.select(2, kd), kd == 0 ? bias : Tensor(),
                                   spatial2d(stride), spatial2d(padding), spatial2d(dilation),
                                   groups);
    sum = kd == 0 ? tap : sum.add_(tap);
  }
  return ungatherDepth(sum, n).contiguous(input.suggest_memory_format());
}

std::tuple<Tensor, Tensor, Tensor> deviceConvolution3dBackward(
    const Tensor& grad_output, const Tensor& input, const Tensor& weight,
    c10::IntArrayRef stride, c10::IntArrayRef padding, c10::IntArrayRef dilation,
    int64_t groups, std::array<bool, 3> output_mask) {
  if (reduced(input)) {
    auto [gi, gw, gb] = deviceConvolution3dBackward(
        grad_output.to(at::kFloat), input.to(at::kFloat), weight.to(at::kFloat), stride,
        padding, dilation, groups, output_mask);
    const auto dtype = input.scalar_type();
    auto narrow = [dtype](const Tensor& t) { return t.defined() ? t.to(dtype) : t; };
    return {narrow(gi), narrow(gw), narrow(gb)};
  }
  const DepthGeometry g = depthOf(stride, padding, dilation, weight.size(2));
  const int64_t n = input.size(0), output_depth = grad_output.size(2);
  const Tensor gy = grad_output.transpose(1, 2).reshape(
      {-1, grad_output.size(1), grad_output.size(3), grad_output.size(4)});
  Tensor grad_padded, grad_weight, grad_bias;
  if (output_mask[0])
    grad_padded = at::zeros({n, input.size(1), input.size(2) + 2 * g.padding, input.size(3),
                             input.size(4)},
                            input.options());
  if (output_mask[1]) grad_weight = at::empty(weight.sizes(), weight.options());
  for (int64_t kd = 0; kd < g.taps; ++kd) {
    const Tensor index = depthIndex(g, kd, output_depth, input.options());
    const Tensor slices = gatherDepth(input, index, g.padding);
    auto [gi, gw, unused] = deviceConvolutionBackward(
        gy, slices, weight.select(2, kd), spatial2d(stride), spatial2d(padding),
        spatial2d(dilation), groups, {output_mask[0], output_mask[1], false});
    if (output_mask[0]) grad_padded.index_add_(2, index, ungatherDepth(gi, n));
    if (output_mask[1]) grad_weight.select(2, kd).copy_(gw);
  }
  Tensor grad_input;
  if (output_mask[0])
    grad_input = grad_padded.narrow(2, g.padding, input.size(2))
                     .contiguous(input.suggest_memory_format());
  if (output_mask[2]) grad_bias = grad_output.sum({0, 2, 3, 4});
  return {grad_input, grad_weight, grad_bias};
}

Tensor deviceTransposedConvolution3d(const Tensor& input, const Tensor& weight,
                                     const Tensor& bias, c10::IntArrayRef stride,
                                     c10::IntArrayRef padding,
                                     c10::IntArrayRef output_padding,
                                     c10::IntArrayRef dilation, int64_t groups) {
  if (reduced(input)) {
    return deviceTransposedConvolution3d(input.to(at::kFloat), weight.to(at::kFloat),
                                         toFloatIfReduced(bias), stride, padding,
                                         output_padding, dilation, groups)
        .to(input.scalar_type());
  }
  const DepthGeometry g = depthOf(stride, padding, dilation, weight.size(2));
  const int64_t n = input.size(0), input_depth = input.size(2);
  const int64_t output_depth = (input_depth - 1) * g.stride - 2 * g.padding +
                               g.dilation * (g.taps - 1) + output_padding[0] + 1;
  // Each input depth i adds to output depth i * sd - pd + kd * dd: into a
  // buffer offset by pd and long enough for every tap, then cropped.
  const int64_t full_depth =
      std::max((input_depth - 1) * g.stride + g.dilation * (g.taps - 1) + 1,
               output_depth + g.padding);
  const Tensor x = input.transpose(1, 2).reshape(
      {-1, input.size(1), input.size(3), input.size(4)});
  Tensor full;
  for (int64_t kd = 0; kd < g.taps; ++kd) {
    const Tensor tap = deviceTransposedConvolution(
        x, weight.select(2, kd), Tensor(), spatial2d(stride), spatial2d(padding),
        spatial2d(output_padding), spatial2d(dilation), groups);
    if (!full.defined())
      full = at::zeros({n, tap.size(1), full_depth, tap.size(2), tap.size(3)}, tap.options());
    full.index_add_(2, depthIndex(g, kd, input_depth, input.options()), ungatherDepth(tap, n));
  }
  Tensor out = full.narrow(2, g.padding, output_depth);
  if (bias.defined()) out = out.add(bias.view({1, -1, 1, 1, 1}));
  return out.contiguous(input.suggest_memory_format());
}

std::tuple<Tensor, Tensor, Tensor> deviceTransposedConvolution3dBackward(
    const Tensor& grad_output, const Tensor& input, const Tensor& weight,
    c10::IntArrayRef stride, c10::IntArrayRef padding, c10::IntArrayRef dilation,
    int64_t groups, std::array<bool, 3> output_mask) {
  Tensor grad_input, grad_weight, grad_bias;
  if (output_mask[0])
    grad_input = deviceConvolution3d(grad_output, weight, Tensor(), stride, padding, dilation,
                                     groups);
  if (output_mask[1])
    grad_weight = std::get<1>(deviceConvolution3dBackward(
        input, grad_output, weight, stride, padding, dilation, groups, {false, true, false}));
  if (output_mask[2]) grad_bias = grad_output.sum({0, 2, 3, 4});
  return {grad_input, grad_weight, grad_bias};
}

}  // namespace torch_maia::ops
