// The geometry of a 2-D convolution (1-D ones are 2-D with a height of 1)
// and its im2col/col2im kernels (runtime/kernels/nn/im2col.h): shared by
// Convolution.cpp and Unfold.cpp (torch.nn.functional.unfold/fold).
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>

#include <vector>

#include "WorkSplit.h"
#include "ops/EagerKernels.h"

namespace torch_maia::ops {

/// A 2-D convolution problem (1-D ones are 2-D with a height of 1).
struct Conv2d {
  int64_t n, c, h, w;        // input
  int64_t o, kh, kw;         // weight (o output channels)
  int64_t sh, sw, ph, pw, dh, dw, groups;
  int64_t oh, ow;            // output

  Conv2d(const at::Tensor& input, const at::Tensor& weight, c10::IntArrayRef stride,
         c10::IntArrayRef padding, c10::IntArrayRef dilation, int64_t groups_)
      : Conv2d(input.sizes(), weight.size(0), {weight.size(2), weight.size(3)}, stride, padding,
               dilation, groups_) {}
  /// input_sizes [N, C, H, W]; o output channels (0 for im2col alone).
  Conv2d(c10::IntArrayRef input_sizes, int64_t o_, c10::IntArrayRef kernel,
         c10::IntArrayRef stride, c10::IntArrayRef padding, c10::IntArrayRef dilation,
         int64_t groups_)
      : n(input_sizes[0]), c(input_sizes[1]), h(input_sizes[2]), w(input_sizes[3]),
        o(o_), kh(kernel[0]), kw(kernel[1]),
        sh(stride[0]), sw(stride[1]), ph(padding[0]), pw(padding[1]),
        dh(dilation[0]), dw(dilation[1]), groups(groups_) {
    oh = (h + 2 * ph - dh * (kh - 1) - 1) / sh + 1;
    ow = (w + 2 * pw - dw * (kw - 1) - 1) / sw + 1;
  }
  int64_t groupInputs() const { return c / groups; }
  int64_t groupOutputs() const { return o / groups; }
  int64_t taps() const { return kh * kw; }
  int64_t columns() const { return n * oh * ow; }

  /// The arguments of the im2col/col2im kernels: two memrefs, the geometry.
  std::vector<maiaKernelArg> kernelArgs(const at::Tensor& first,
                                         const at::Tensor& second) const {
    std::vector<maiaKernelArg> args = {memrefOf(first), memrefOf(second)};
    for (int64_t v : {kh, kw, sh, sw, ph, pw, dh, dw, oh, ow}) args.push_back(intArg(v));
    return args;
  }

  /// cols[(c * KH + i) * KW + j, (n * OH + y) * OW + x] =
  ///     input[n, c, y * sh - ph + i * dh, x * sw - pw + j * dw],
  /// zero in the padding: one kernel launch.
  at::Tensor im2col(const at::Tensor& input) const {
    int64_t rows = input.size(1) * taps();
    at::Tensor cols = at::empty({rows, columns()}, input.options());
    launchNn("im2col", input.scalar_type(), kernelArgs(cols, input),
             programsFor(rows, cols.numel()), input.device());
    return cols;
  }

  /// The adjoint of im2col: the input gradient of the columns' gradient.
  void col2im(const at::Tensor& cols, const at::Tensor& input_grad) const {
    int64_t planes = input_grad.size(0) * input_grad.size(1);
    launchNn("col2im", input_grad.scalar_type(), kernelArgs(input_grad, cols),
             programsFor(planes, input_grad.numel()), input_grad.device());
  }
};

}  // namespace torch_maia::ops
