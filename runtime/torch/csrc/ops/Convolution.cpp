// Convolution on maia. PyTorch routes convolutions of a backend without a
// native convolution to convolution_overrideable (its default kernel raises
// instead of reaching the boxed fallback).
//
// 1-D and 2-D convolutions (any stride, padding, dilation, groups) run on the
// device. fp32 ones without groups take the implicit-GEMM kernel
// (runtime/kernels/gemm/conv.h): the GEMM's microkernel over blocks of the
// column matrix gathered from the image in cache, the bias added as the
// output is stored, in either layout. The others run as im2col + GEMM: the
// im2col kernel gathers the columns (padding implicit), one batched GEMM per
// group multiplies (the kernel broadcast over the images) straight into the
// output in the layout PyTorch promises, accumulating onto the bias. The
// backward is im2col + GEMM, and its col2im kernel folds the column
// gradient back (runtime/kernels/nn/im2col.h). A transposed convolution is
// the input gradient of the convolution with the same weight, so it runs on
// the same kernels with the roles swapped (forward: GEMM + col2im; input
// gradient: a convolution; weight gradient: im2col + GEMM). Integer
// convolutions run on the same kernels (exact, wrapping as the CPU). 3-D
// convolutions are sums of these 2-D ones over the kernel's depth taps
// (Convolution3d.cpp).
#include <ATen/native/ConvUtils.h>
#include <ATen/ops/convolution.h>
#include <ATen/ops/convolution_backward.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/zeros.h>
#include <torch/library.h>

#include <algorithm>

#include "MaiaCheck.h"
#include "MaiaStream.h"
#include "WorkSplit.h"
#include "conv_launch.h"
#include "ops/ConvGeometry.h"
#include "ops/Convolution.h"
#include "ops/EagerKernels.h"
#include "ops/Fallback.h"
#include "ops/HostRouting.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;

Tensor toDeviceOf(const Tensor& t, const Tensor& like) {
  return t.defined() ? t.to(like.device()) : t;
}

// The layout PyTorch's fake kernel promises for this device's backend
// (compiled graphs assert it).
at::MemoryFormat outputFormat(const Tensor& input, const Tensor& weight) {
  return at::native::_determine_backend_memory_format(input, weight,
                                                      at::native::ConvBackend::Overrideable);
}

// 1-D convolutions as 2-D ones of height 1.
Tensor as2d(const Tensor& t) { return t.dim() == 3 ? t.unsqueeze(2) : t; }
std::vector<int64_t> params2d(c10::IntArrayRef values, int64_t fill) {
  return values.size() == 1 ? std::vector<int64_t>{fill, values[0]} : values.vec();
}

// 1-D and 2-D convolutions of the floating and integer dtypes run on the
// device, 3-D ones of the floating dtypes and int64. The CPU has transposed
// and dilated integer convolutions for int64 only: the others take the
// host path, which raises the CPU's error.
bool runsOnDevice(const Tensor& input, bool transposed, c10::IntArrayRef dilation) {
  const c10::ScalarType dtype = input.scalar_type();
  if (input.dim() == 5) return at::isFloatingType(dtype) || dtype == at::kLong;
  if (input.dim() != 3 && input.dim() != 4) return false;
  if (at::isFloatingType(dtype) || dtype == at::kLong) return true;
  const bool dilated =
      std::any_of(dilation.begin(), dilation.end(), [](int64_t d) { return d != 1; });
  return at::isIntegralType(dtype, /*includeBool=*/false) && !transposed && !dilated;
}

// A transposed convolution's backward runs on the device when the forward
// was exactly the input gradient of a convolution: an output padding below
// the stride (PyTorch also allows one below the dilation; that backward
// takes the counted host path).
bool backwardRunsOnDevice(const Tensor& input, bool transposed, c10::IntArrayRef stride,
                          c10::IntArrayRef dilation, c10::IntArrayRef output_padding) {
  if (!runsOnDevice(input, transposed, dilation)) return false;
  if (!transposed) return true;
  for (size_t d = 0; d < output_padding.size(); ++d)
    if (output_padding[d] >= stride[d]) return false;
  return true;
}

/// The largest element offset of t from its first element.
int64_t maxOffset(const Tensor& t) {
  int64_t offset = 0;
  for (int64_t d = 0; d < t.dim(); ++d) offset += (t.size(d) - 1) * t.stride(d);
  return offset;
}

// The implicit-GEMM kernel exists for fp32 and one group; it addresses the
// input with 32-bit offsets (its gathers).
bool takesImplicitGemm(const Tensor& x, int64_t groups) {
  return x.scalar_type() == at::kFloat && groups == 1 && x.numel() > 0 &&
         maxOffset(x) < (int64_t{1} << 31) && x.size(1) > 0;
}

/// out = conv(x, wt) + bias by the implicit-GEMM kernel: x, wt 4-D, out
/// allocated in its promised layout. x is read in place in any layout. The
/// reduction runs over (tap, channel) for a channels-last weight, else over
/// (channel, tap): either way the weight's [K, O] matrix is a view of it.
/// A channels-last input packs by transposes only with the reduction over
/// (tap, channel), else it gathers each element; with a contiguous weight
/// that is small next to the pixels (O * 12 <= pixels: ResNet's 56x56 and
/// 28x28 layers) the weight is made channels-last first. Copying a large
/// one costs more than the gathers (the 7x7 layer's 512 x 4608 weight: 6
/// ms, twice the convolution).
void implicitGemmConvolution(const Tensor& x, const Tensor& wt, const Tensor& bias,
                             const Conv2d& conv, const Tensor& out) {
  const int64_t k = conv.c * conv.taps();
  const bool weight_cl = wt.is_contiguous(at::MemoryFormat::ChannelsLast);
  const bool copy_weight = x.stride(1) == 1 && conv.o * 12 <= conv.columns();
  const bool channels_inner = conv.c > 1 && conv.taps() > 1 && (weight_cl || copy_weight);
  Tensor matrix = channels_inner ? wt.contiguous(at::MemoryFormat::ChannelsLast)
                                       .permute({2, 3, 1, 0})
                                       .reshape({k, conv.o})
                                 : wt.reshape({conv.o, k}).t();
  maiaKernelArg bias_arg;
  if (bias.defined()) {
    bias_arg = memrefOf(bias);
  } else {
    bias_arg = unshapedMemref(out, 1);  // never read
    bias_arg.sizes[0] = 0;
    bias_arg.strides[0] = 1;
  }
  std::vector<maiaKernelArg> args = {memrefOf(out), memrefOf(x), memrefOf(matrix), bias_arg};
  for (int64_t v : {conv.kh, conv.kw, conv.sh, conv.sw, conv.ph, conv.pw, conv.dh, conv.dw})
    args.push_back(intArg(v));
  args.push_back(intArg(channels_inner ? 1 : 0));
  args.push_back(intArg(bias.defined() ? 1 : 0));
  int64_t grid[3] = {1, 1, 1};
  maia_conv_grid(conv.columns(), conv.o, k, deviceCores(), grid);
  MAIA_CHECK(maiaLaunchKernel(convKernel(out.scalar_type()), grid, args.data(),
                              static_cast<int>(args.size()),
                              currentDriverStream(out.device().index())));
}

}  // namespace

Tensor deviceConvolution(const Tensor& input, const Tensor& weight, const Tensor& bias,
                         c10::IntArrayRef stride, c10::IntArrayRef padding,
                         c10::IntArrayRef dilation, int64_t groups) {
  bool one_d = input.dim() == 3;
  at::MemoryFormat format = one_d ? at::MemoryFormat::Contiguous : outputFormat(input, weight);
  if (takesImplicitGemm(input, groups)) {
    Tensor x = as2d(input), wt = as2d(weight);
    Conv2d conv(x, wt, params2d(stride, 1), params2d(padding, 0), params2d(dilation, 1), groups);
    Tensor out =
        at::empty({conv.n, conv.o, conv.oh, conv.ow}, input.options().memory_format(format));
    if (out.numel() > 0)
      implicitGemmConvolution(x, wt, bias, conv, out);
    return one_d ? out.squeeze(2) : out;
  }
  // im2col reads rows of input planes: a channels-last input would be
  // gathered with a stride of C elements, which perf showed as the hottest
  // loop of the compiled zoo CNN (Inductor makes convolution inputs
  // channels-last); one contiguous copy first costs less.
  Tensor x = as2d(input).contiguous(), wt = as2d(weight);
  Conv2d conv(x, wt, params2d(stride, 1), params2d(padding, 0), params2d(dilation, 1), groups);
  // The GEMMs write the promised layout directly: no permute/copy after.
  Tensor out = at::empty({conv.n, conv.o, conv.oh, conv.ow}, input.options().memory_format(format));
  double beta = 0.0;
  if (bias.defined()) {
    out.copy_(bias.view({1, conv.o, 1, 1}).expand_as(out));
    beta = 1.0;  // the GEMMs accumulate onto the bias
  }
  const int64_t cg = conv.groupInputs(), og = conv.groupOutputs(), pixels = conv.oh * conv.ow;
  for (int64_t g = 0; g < groups; ++g) {
    Tensor cols = conv.im2col(x.narrow(1, g * cg, cg));
    // Per image n: out[n] = kernel @ cols[:, n] as [og, pixels]: one batched
    // GEMM, the kernel broadcast over the batch. A channels-last out is
    // column-major per image; the GEMM then computes the transposed product.
    Tensor kernel = wt.narrow(0, g * og, og).reshape({1, og, cg * conv.taps()});
    Tensor image_cols = cols.view({cg * conv.taps(), conv.n, pixels}).permute({1, 0, 2});
    gemm(kernel, image_cols, out.narrow(1, g * og, og).view({conv.n, og, pixels}), 1.0, beta,
         "aten::convolution_overrideable");
  }
  return one_d ? out.squeeze(2) : out;
}

std::tuple<Tensor, Tensor, Tensor> deviceConvolutionBackward(
    const Tensor& grad_output, const Tensor& input, const Tensor& weight,
    c10::IntArrayRef stride, c10::IntArrayRef padding, c10::IntArrayRef dilation,
    int64_t groups, std::array<bool, 3> output_mask) {
  Tensor x = as2d(input), wt = as2d(weight), gy = as2d(grad_output);
  Conv2d conv(x, wt, params2d(stride, 1), params2d(padding, 0), params2d(dilation, 1), groups);
  int64_t cg = conv.groupInputs(), og = conv.groupOutputs();
  // [O, N * OH * OW], the layout of the forward GEMM's result
  Tensor grad_columns = gy.permute({1, 0, 2, 3}).reshape({conv.o, conv.columns()});
  Tensor grad_input, grad_weight, grad_bias;
  if (output_mask[0]) grad_input = at::empty({conv.n, conv.c, conv.h, conv.w}, input.options());
  if (output_mask[1]) grad_weight = at::empty_like(wt, at::MemoryFormat::Contiguous);
  for (int64_t g = 0; g < groups; ++g) {
    Tensor gy_g = grad_columns.narrow(0, g * og, og);
    Tensor kernel = wt.narrow(0, g * og, og).reshape({og, cg * conv.taps()});
    if (output_mask[0]) conv.col2im(kernel.t().mm(gy_g), grad_input.narrow(1, g * cg, cg));
    if (output_mask[1]) {
      Tensor cols = conv.im2col(x.narrow(1, g * cg, cg));
      grad_weight.narrow(0, g * og, og).view({og, cg * conv.taps()}).copy_(gy_g.mm(cols.t()));
    }
  }
  if (output_mask[0]) {
    if (input.dim() == 3) grad_input = grad_input.squeeze(2);
    grad_input = grad_input.contiguous(input.suggest_memory_format());
  }
  if (output_mask[1] && weight.dim() == 3) grad_weight = grad_weight.squeeze(2);
  if (output_mask[2]) grad_bias = gy.sum({0, 2, 3});
  return {grad_input, grad_weight, grad_bias};
}

/// The transposed convolution of input by weight ([C_in, C_out / groups,
/// kh, kw]): the input gradient of the convolution `conv` whose input is the
/// result and whose output is `input`, col2im of the weight's columns times
/// input's pixels, then the bias.
Tensor deviceTransposedConvolution(const Tensor& input, const Tensor& weight, const Tensor& bias,
                                   c10::IntArrayRef stride, c10::IntArrayRef padding,
                                   c10::IntArrayRef output_padding, c10::IntArrayRef dilation,
                                   int64_t groups) {
  if (at::isReducedFloatingType(input.scalar_type())) {
    // col2im sums the GEMM's columns: in float, as the CPU sums them, with
    // one rounding at the end; columns rounded to the 16-bit type first
    // would add a rounding error per overlapping tap.
    return deviceTransposedConvolution(input.to(at::kFloat), weight.to(at::kFloat),
                                       bias.defined() ? bias.to(at::kFloat) : bias, stride,
                                       padding, output_padding, dilation, groups)
        .to(input.scalar_type());
  }
  Tensor x = as2d(input), wt = as2d(weight);
  const std::vector<int64_t> s = params2d(stride, 1), p = params2d(padding, 0),
                             d = params2d(dilation, 1), op = params2d(output_padding, 0);
  std::vector<int64_t> size = {x.size(0), wt.size(1) * groups};
  for (int i = 0; i < 2; ++i)
    size.push_back((x.size(2 + i) - 1) * s[i] - 2 * p[i] + d[i] * (wt.size(2 + i) - 1) + op[i] +
                   1);
  Tensor out;
  if (op[0] >= s[0] || op[1] >= s[1]) {
    // Not the input gradient of any convolution (PyTorch allows an output
    // padding below the dilation): the full, uncropped transposed
    // convolution, cropped by the padding and extended with zeros.
    Tensor full = deviceTransposedConvolution(x, wt, Tensor(), {s[0], s[1]}, {0, 0}, {0, 0},
                                              {d[0], d[1]}, groups);
    out = at::zeros(size, x.options());
    const int64_t rows = std::min(size[2], full.size(2) - p[0]);
    const int64_t cols = std::min(size[3], full.size(3) - p[1]);
    out.narrow(2, 0, rows).narrow(3, 0, cols).copy_(full.narrow(2, p[0], rows).narrow(3, p[1],
                                                                                   cols));
  } else {
    out = at::empty(size, x.options());
    Conv2d conv(out, wt, s, p, d, groups);
    TORCH_INTERNAL_ASSERT(conv.oh == x.size(2) && conv.ow == x.size(3));
    const int64_t cg = conv.groupInputs(), og = conv.groupOutputs();
    if (out.numel() > 0) {
      Tensor pixels = x.permute({1, 0, 2, 3}).reshape({conv.o, conv.columns()});
      for (int64_t g = 0; g < groups; ++g) {
        Tensor kernel = wt.narrow(0, g * og, og).reshape({og, cg * conv.taps()});
        conv.col2im(kernel.t().mm(pixels.narrow(0, g * og, og)), out.narrow(1, g * cg, cg));
      }
    }
  }
  if (bias.defined()) out.add_(bias.view({1, -1, 1, 1}));
  if (input.dim() == 3) out = out.squeeze(2);
  return out.contiguous(input.dim() == 3 ? at::MemoryFormat::Contiguous
                                         : outputFormat(input, weight));
}

/// A transposed convolution's gradients: the input's is the convolution of
/// the output gradient by the weight; the weight's is the weight gradient of
/// that convolution with input as its output gradient.
std::tuple<Tensor, Tensor, Tensor> deviceTransposedConvolutionBackward(
    const Tensor& grad_output, const Tensor& input, const Tensor& weight,
    c10::IntArrayRef stride, c10::IntArrayRef padding, c10::IntArrayRef dilation,
    int64_t groups, std::array<bool, 3> output_mask) {
  Tensor grad_input, grad_weight, grad_bias;
  if (output_mask[0])
    grad_input = deviceConvolution(grad_output, weight, Tensor(), stride, padding, dilation,
                                   groups).contiguous(input.suggest_memory_format());
  if (output_mask[1])
    grad_weight = std::get<1>(deviceConvolutionBackward(input, grad_output, weight, stride,
                                                        padding, dilation, groups,
                                                        {false, true, false}));
  if (output_mask[2])
    grad_bias = grad_output.dim() == 3 ? grad_output.sum({0, 2}) : grad_output.sum({0, 2, 3});
  return {grad_input, grad_weight, grad_bias};
}

namespace {

Tensor convolution(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                   c10::IntArrayRef stride, c10::IntArrayRef padding, c10::IntArrayRef dilation,
                   bool transposed, c10::IntArrayRef output_padding, int64_t groups) {
  if (runsOnDevice(input, transposed, dilation)) {
    const Tensor b = bias.value_or(Tensor());
    if (input.dim() == 5) {
      if (transposed)
        return deviceTransposedConvolution3d(input, weight, b, stride, padding, output_padding,
                                             dilation, groups);
      return deviceConvolution3d(input, weight, b, stride, padding, dilation, groups);
    }
    if (transposed)
      return deviceTransposedConvolution(input, weight, b, stride, padding, output_padding,
                                         dilation, groups);
    return deviceConvolution(input, weight, b, stride, padding, dilation, groups);
  }
  noteHostFallback("aten::convolution_overrideable");
  std::optional<Tensor> host_bias;
  if (bias.has_value() && bias->defined()) host_bias = bias->cpu();
  Tensor out = at::convolution(input.cpu(), weight.cpu(), host_bias, stride, padding, dilation,
                               transposed, output_padding, groups);
  return out.to(input.device()).contiguous(outputFormat(input, weight));
}

std::tuple<Tensor, Tensor, Tensor> convolutionBackward(
    const Tensor& grad_output, const Tensor& input, const Tensor& weight,
    c10::IntArrayRef stride, c10::IntArrayRef padding, c10::IntArrayRef dilation,
    bool transposed, c10::IntArrayRef output_padding, int64_t groups,
    std::array<bool, 3> output_mask) {
  if (backwardRunsOnDevice(input, transposed, stride, dilation, output_padding)) {
    const c10::ScalarType dtype = input.scalar_type();
    if (at::isReducedFloatingType(dtype)) {
      // In float, rounded once: col2im sums GEMM columns (see the forward).
      auto [grad_input, grad_weight, grad_bias] = convolutionBackward(
          grad_output.to(at::kFloat), input.to(at::kFloat), weight.to(at::kFloat), stride,
          padding, dilation, transposed, output_padding, groups, output_mask);
      auto narrow = [dtype](const Tensor& t) { return t.defined() ? t.to(dtype) : t; };
      return {narrow(grad_input), narrow(grad_weight), narrow(grad_bias)};
    }
    if (input.dim() == 5) {
      if (transposed)
        return deviceTransposedConvolution3dBackward(grad_output, input, weight, stride,
                                                     padding, dilation, groups, output_mask);
      return deviceConvolution3dBackward(grad_output, input, weight, stride, padding, dilation,
                                         groups, output_mask);
    }
    if (transposed)
      return deviceTransposedConvolutionBackward(grad_output, input, weight, stride, padding,
                                                 dilation, groups, output_mask);
    return deviceConvolutionBackward(grad_output, input, weight, stride, padding, dilation,
                                     groups, output_mask);
  }
  noteHostFallback("aten::convolution_backward_overrideable");
  std::vector<int64_t> bias_sizes = {weight.size(transposed ? 1 : 0) *
                                     (transposed ? groups : 1)};
  auto [grad_input, grad_weight, grad_bias] = at::convolution_backward(
      grad_output.cpu(), input.cpu(), weight.cpu(), bias_sizes, stride, padding, dilation,
      transposed, output_padding, groups, output_mask);
  return {toDeviceOf(grad_input, input), toDeviceOf(grad_weight, weight),
          toDeviceOf(grad_bias, weight)};
}

MAIA_NATIVE_KERNELS(m) {
  m.impl("convolution_overrideable", TORCH_FN(convolution));
  m.impl("convolution_backward_overrideable", TORCH_FN(convolutionBackward));
}

}  // namespace
}  // namespace torch_maia::ops
