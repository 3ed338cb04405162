// torch.nn.functional.unfold and fold on maia: aten::im2col and aten::col2im
// on the convolution's im2col/col2im kernels (ops/ConvGeometry.h), whose
// columns are [C * kh * kw, N * L]; the operators' are [N, C * kh * kw, L],
// a transpose away, with the CPU's checks. Floating dtypes only: the kernels
// have no integer or bool forms, which take the counted host path.
#include <ATen/ops/col2im.h>
#include <ATen/ops/im2col.h>
#include <torch/library.h>

#include <vector>

#include "ops/ConvGeometry.h"
#include "ops/Fallback.h"
#include "ops/HostRouting.h"
#include "ops/MaiaOps.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;
using IntList = c10::IntArrayRef;

void checkPairs(IntList kernel, IntList dilation, IntList padding, IntList stride) {
  TORCH_CHECK(kernel.size() == 2 && dilation.size() == 2 && padding.size() == 2 &&
                  stride.size() == 2,
              "It is expected kernel_size, dilation, padding and stride to have 2 elements");
  TORCH_CHECK(kernel[0] > 0 && kernel[1] > 0, "kernel size should be greater than zero, but got "
              "kernel_height: ", kernel[0], " kernel_width: ", kernel[1]);
  TORCH_CHECK(dilation[0] > 0 && dilation[1] > 0, "dilation should be greater than zero, but "
              "got dilation_height: ", dilation[0], " dilation_width: ", dilation[1]);
  TORCH_CHECK(padding[0] >= 0 && padding[1] >= 0, "padding should be non-negative, but got "
              "pad_height: ", padding[0], " pad_width: ", padding[1]);
  TORCH_CHECK(stride[0] > 0 && stride[1] > 0, "stride should be greater than zero, but got "
              "stride_height: ", stride[0], " stride_width: ", stride[1]);
}

void checkBlocks(const Conv2d& conv, IntList kernel, IntList dilation, IntList padding) {
  TORCH_CHECK(conv.oh >= 1 && conv.ow >= 1, "Given input with spatial size (", conv.h, ", ",
              conv.w, "), kernel_size=(", kernel[0], ", ", kernel[1], "), dilation=(",
              dilation[0], ", ", dilation[1], "), padding=(", padding[0], ", ", padding[1],
              "), calculated shape of the array of sliding blocks as (", conv.oh, ", ", conv.ow,
              "), but its components must be at least one.");
}

/// [C, H, W] or [N, C, H, W] -> [C * kh * kw, L] or [N, C * kh * kw, L].
Tensor unfoldOp(const Tensor& self, IntList kernel, IntList dilation, IntList padding,
              IntList stride) {
  checkPairs(kernel, dilation, padding, stride);
  TORCH_CHECK(self.dim() == 4 || (self.dim() == 3 && self.numel() > 0),
              "Expected 3D or 4D (batch mode) tensor for input with possibly 0 batch size and "
              "non-zero dimensions for input, but got: ", self.sizes());
  if (!at::isFloatingType(self.scalar_type())) {  // no integer kernels: the counted host path
    noteHostFallback("aten::im2col");
    return at::im2col(self.cpu(), kernel, dilation, padding, stride).to(self.device());
  }
  const bool batched = self.dim() == 4;
  Tensor x = (batched ? self : self.unsqueeze(0)).contiguous();
  Conv2d conv(x.sizes(), 0, kernel, stride, padding, dilation, 1);
  checkBlocks(conv, kernel, dilation, padding);
  const int64_t rows = conv.c * conv.taps(), blocks = conv.oh * conv.ow;
  Tensor out;
  if (conv.n == 0) {
    out = newEmpty({0, rows, blocks}, x.options());
  } else {
    out = conv.im2col(x).view({rows, conv.n, blocks}).permute({1, 0, 2}).contiguous();
  }
  return batched ? out : out.squeeze(0);
}

/// [C * kh * kw, L] or [N, C * kh * kw, L] -> [C, H, W] or [N, C, H, W],
/// the overlapping blocks summed.
Tensor foldOp(const Tensor& self, IntList output_size, IntList kernel, IntList dilation,
              IntList padding, IntList stride) {
  checkPairs(kernel, dilation, padding, stride);
  TORCH_CHECK(output_size.size() == 2, "It is expected output_size equals to 2, but got size ",
              output_size.size());
  TORCH_CHECK((self.dim() == 2 || self.dim() == 3) && self.size(-1) > 0 && self.size(-2) > 0,
              "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and "
              "non-zero dimensions for input, but got: ", self.sizes());
  if (!at::isFloatingType(self.scalar_type())) {
    noteHostFallback("aten::col2im");
    return at::col2im(self.cpu(), output_size, kernel, dilation, padding, stride)
        .to(self.device());
  }
  const bool batched = self.dim() == 3;
  Tensor cols = batched ? self : self.unsqueeze(0);
  const int64_t taps = kernel[0] * kernel[1];
  TORCH_CHECK(cols.size(1) % taps == 0, "Expected size of input's dimension 1 to be divisible "
              "by the product of kernel_size, but got input.size(1)=", cols.size(1),
              " and kernel_size=(", kernel[0], ", ", kernel[1], ")");
  const std::vector<int64_t> image = {cols.size(0), cols.size(1) / taps, output_size[0],
                                      output_size[1]};
  Conv2d conv(image, 0, kernel, stride, padding, dilation, 1);
  checkBlocks(conv, kernel, dilation, padding);
  TORCH_CHECK(cols.size(2) == conv.oh * conv.ow, "Given output_size=(", output_size[0], ", ",
              output_size[1], "), kernel_size=(", kernel[0], ", ", kernel[1], "), dilation=(",
              dilation[0], ", ", dilation[1], "), padding=(", padding[0], ", ", padding[1],
              "), stride=(", stride[0], ", ", stride[1], "), expected size of input's dimension "
              "2 to match the calculated number of sliding blocks ", conv.oh, " * ", conv.ow,
              " = ", conv.oh * conv.ow, ", but got input.size(2)=", cols.size(2), ".");
  Tensor out = newEmpty(image, cols.options());
  if (conv.n > 0) {
    Tensor columns = cols.permute({1, 0, 2}).reshape({cols.size(1), conv.columns()});
    conv.col2im(columns, out);
  }
  return batched ? out : out.squeeze(0);
}

}  // namespace

MAIA_NATIVE_KERNELS(m) {
  m.impl("im2col", TORCH_FN(unfoldOp));
  m.impl("im2col.out", [](const Tensor& self, IntList kernel, IntList dilation, IntList padding,
                          IntList stride, Tensor& out) -> Tensor& {
    return resultInto(out, unfoldOp(self, kernel, dilation, padding, stride));
  });
  m.impl("col2im", TORCH_FN(foldOp));
  m.impl("col2im.out", [](const Tensor& self, IntList output_size, IntList kernel,
                          IntList dilation, IntList padding, IntList stride,
                          Tensor& out) -> Tensor& {
    return resultInto(out, foldOp(self, output_size, kernel, dilation, padding, stride));
  });
}

}  // namespace torch_maia::ops
