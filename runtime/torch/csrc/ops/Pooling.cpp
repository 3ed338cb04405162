// 2-D pooling on maia: max_pool2d_with_indices, avg_pool2d,
// _adaptive_avg_pool2d, adaptive_max_pool2d and their backwards (so
// F.max_pool1d/2d, avg_pool1d/2d, the adaptive pools and interpolate's
// "area" mode), each one launch of the NN kernel binary
// (runtime/kernels/nn/pooling.h).
//
// Checks, output shapes and memory formats come from ATen itself: the
// structured operators run their own meta functions here, and
// _adaptive_avg_pool2d (not structured) repeats the CPU's checks. So maia
// raises the CPU's errors and returns the layouts compiled graphs expect
// (channels-last in, channels-last out). The kernels read and write any
// strides, so no input is copied first.
#include <ATen/OpMathType.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/adaptive_max_pool2d_backward_meta.h>
#include <ATen/ops/adaptive_max_pool2d_meta.h>
#include <ATen/ops/avg_pool2d_backward_meta.h>
#include <ATen/ops/avg_pool2d_meta.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/max_pool2d_with_indices_backward_meta.h>
#include <ATen/ops/max_pool2d_with_indices_meta.h>
#include <c10/core/SymIntArrayRef.h>
#include <torch/library.h>

#include <array>
#include <optional>
#include <tuple>
#include <vector>

#include "WorkSplit.h"
#include "ops/EagerKernels.h"
#include "ops/HostRouting.h"
#include "ops/MaiaOps.h"
#include "ops/OpUtils.h"
#include "ops/Pooling.h"
#include "ops/Structured.h"

namespace torch_maia::ops {

using at::Tensor;
using c10::ScalarType;

void maxPoolBackwardKernel(const char* op, const Tensor& grad_output, const Tensor& indices,
                           const Tensor& grad_input) {
  const ScalarType dtype = grad_input.scalar_type();
  checkFloatDtype(op, dtype);
  if (grad_input.numel() == 0) return;
  const Tensor target = computeTypeTarget(grad_input);
  launchNn("max_pool2d_bwd", dtype,
           {memrefOf(target, 4), memrefOf(grad_output, 4), memrefOf(indices, 4)},
           programsFor(grad_input.numel() / (grad_input.size(-1) * grad_input.size(-2)),
                       grad_input.numel() + grad_output.numel()),
           grad_input.device());
  if (!target.is_same(grad_input)) grad_input.copy_(target);
}

void checkNoWindowInPadding(const char* op, std::initializer_list<PoolDim> dims) {
  for (const PoolDim& d : dims) {
    for (int64_t i = 0; i < d.output; ++i) {
      const int64_t first = i * d.stride - d.padding;
      bool covers_input = false;
      for (int64_t j = 0; j < d.kernel && !covers_input; ++j) {
        const int64_t at = first + j * d.dilation;
        covers_input = at >= 0 && at < d.input;
      }
      TORCH_CHECK_VALUE(covers_input, op, ": pooling window ", i,
                        " lies entirely in the padding (a dimension of size ", d.input,
                        ", kernel_size ", d.kernel, ", stride ", d.stride, ", padding ",
                        d.padding, ", dilation ", d.dilation,
                        "): its forward output is -inf with no input element behind it, "
                        "so it has no gradient to route back");
    }
  }
}

namespace {

using at::IntArrayRef;

bool isFloat(ScalarType t) { return at::isFloatingType(t); }
bool isFloatOrLong(ScalarType t) { return isFloat(t) || t == ScalarType::Long; }

/// Kernel size, stride (default: the kernel's), padding and dilation as
/// (height, width) pairs, from the 1- or 2-element lists the schemas take;
/// the meta functions have checked their lengths.
struct Window {
  int64_t kh, kw, sh, sw, ph, pw, dh = 1, dw = 1;

  Window(IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation = {})
      : kh(kernel[0]), kw(kernel.size() == 1 ? kh : kernel[1]),
        sh(stride.empty() ? kh : stride[0]),
        sw(stride.empty() ? kw : stride.size() == 1 ? sh : stride[1]),
        ph(padding[0]), pw(padding.size() == 1 ? ph : padding[1]) {
    if (!dilation.empty()) {
      dh = dilation[0];
      dw = dilation.size() == 1 ? dh : dilation[1];
    }
  }
  void append(std::vector<maiaKernelArg>& args) const {
    for (int64_t v : {kh, kw, sh, sw, ph, pw, dh, dw}) args.push_back(intArg(v));
  }
};

// ---- max_pool2d ----------------------------------------------------------

void checkWindows(const Tensor& self, const Tensor& grad_output, const Window& w) {
  checkNoWindowInPadding("max_pool2d_with_indices_backward",
                         {{self.size(-2), grad_output.size(-2), w.kh, w.sh, w.ph, w.dh},
                          {self.size(-1), grad_output.size(-1), w.kw, w.sw, w.pw, w.dw}});
}

void maxPoolKernel(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                   IntArrayRef padding, IntArrayRef dilation, const Tensor& out,
                   const Tensor& indices) {
  checkDtype("max_pool2d", self.scalar_type(),
             at::isFloatingType(self.scalar_type()) ||
                 at::isIntegralType(self.scalar_type(), /*includeBool=*/false));
  if (out.numel() == 0) return;
  const Window w(kernel_size, stride, padding, dilation);
  std::vector<maiaKernelArg> args{memrefOf(out, 4), memrefOf(indices, 4), memrefOf(self, 4)};
  w.append(args);
  launchNn("max_pool2d", self.scalar_type(), args,
           programsFor(rowsOf(out), out.numel() * w.kh * w.kw), self.device());
}

std::tuple<Tensor, Tensor> maxPool2d(const Tensor& self, IntArrayRef kernel_size,
                                     IntArrayRef stride, IntArrayRef padding,
                                     IntArrayRef dilation, bool ceil_mode) {
  Structured<at::meta::structured_max_pool2d_with_indices, 2> op;
  op.meta(self, kernel_size, stride, padding, dilation, ceil_mode);
  maxPoolKernel(self, kernel_size, stride, padding, dilation, op.outputs[0], op.outputs[1]);
  return {op.outputs[0], op.outputs[1]};
}

std::tuple<Tensor&, Tensor&> maxPool2dOut(const Tensor& self, IntArrayRef kernel_size,
                                          IntArrayRef stride, IntArrayRef padding,
                                          IntArrayRef dilation, bool ceil_mode, Tensor& out,
                                          Tensor& indices) {
  Structured<at::meta::structured_max_pool2d_with_indices, 2> op({&out, &indices});
  op.meta(self, kernel_size, stride, padding, dilation, ceil_mode);
  maxPoolKernel(self, kernel_size, stride, padding, dilation, out, indices);
  return {out, indices};
}

Tensor maxPool2dBackward(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size,
                         IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                         bool ceil_mode, const Tensor& indices) {
  Structured<at::meta::structured_max_pool2d_with_indices_backward, 1> op;
  op.meta(grad_output, self, kernel_size, stride, padding, dilation, ceil_mode, indices);
  checkWindows(self, grad_output, Window(kernel_size, stride, padding, dilation));
  maxPoolBackwardKernel("max_pool2d_backward", grad_output, indices, op.outputs[0]);
  return op.outputs[0];
}

Tensor& maxPool2dBackwardOut(const Tensor& grad_output, const Tensor& self,
                             IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                             IntArrayRef dilation, bool ceil_mode, const Tensor& indices,
                             Tensor& grad_input) {
  Structured<at::meta::structured_max_pool2d_with_indices_backward, 1> op({&grad_input});
  op.meta(grad_output, self, kernel_size, stride, padding, dilation, ceil_mode, indices);
  checkWindows(self, grad_output, Window(kernel_size, stride, padding, dilation));
  maxPoolBackwardKernel("max_pool2d_backward", grad_output, indices, grad_input);
  return grad_input;
}

// ---- avg_pool2d ----------------------------------------------------------

/// The avg kernels' trailing arguments: count_include_pad and the divisor
/// override (0 for none; the meta functions refuse an override of 0).
void appendAvgFlags(std::vector<maiaKernelArg>& args, bool count_include_pad,
                    std::optional<int64_t> divisor_override) {
  args.push_back(intArg(count_include_pad ? 1 : 0));
  args.push_back(intArg(divisor_override.value_or(0)));
}

void avgPoolKernel(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                   IntArrayRef padding, bool count_include_pad,
                   std::optional<int64_t> divisor_override, const Tensor& out) {
  checkDtype("avg_pool2d", self.scalar_type(), isFloatOrLong(self.scalar_type()));
  if (out.numel() == 0) return;
  const Window w(kernel_size, stride, padding);
  std::vector<maiaKernelArg> args{memrefOf(out, 4), memrefOf(self, 4)};
  w.append(args);
  appendAvgFlags(args, count_include_pad, divisor_override);
  launchNn("avg_pool2d", self.scalar_type(), args,
           programsFor(rowsOf(out), out.numel() * w.kh * w.kw), self.device());
}

Tensor avgPool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                 IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                 std::optional<int64_t> divisor_override) {
  Structured<at::meta::structured_avg_pool2d, 1> op;
  op.meta(self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override);
  avgPoolKernel(self, kernel_size, stride, padding, count_include_pad, divisor_override,
                op.outputs[0]);
  return op.outputs[0];
}

Tensor& avgPool2dOut(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                     IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                     std::optional<int64_t> divisor_override, Tensor& out) {
  Structured<at::meta::structured_avg_pool2d, 1> op({&out});
  op.meta(self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override);
  avgPoolKernel(self, kernel_size, stride, padding, count_include_pad, divisor_override, out);
  return out;
}

void avgPoolBackwardKernel(const Tensor& grad_output, IntArrayRef kernel_size,
                           IntArrayRef stride, IntArrayRef padding, bool count_include_pad,
                           std::optional<int64_t> divisor_override, const Tensor& grad_input) {
  const ScalarType dtype = grad_input.scalar_type();
  checkDtype("avg_pool2d_backward", dtype, isFloatOrLong(dtype));
  if (grad_input.numel() == 0) return;
  const Window w(kernel_size, stride, padding);
  std::vector<maiaKernelArg> args{memrefOf(grad_input, 4), memrefOf(grad_output, 4)};
  w.append(args);
  appendAvgFlags(args, count_include_pad, divisor_override);
  // Each input element reads the outputs whose windows cover it.
  const int64_t reads =
      grad_input.numel() * ((w.kh + w.sh - 1) / w.sh) * ((w.kw + w.sw - 1) / w.sw);
  launchNn("avg_pool2d_bwd", dtype, args, programsFor(rowsOf(grad_input), reads),
           grad_input.device());
}

Tensor avgPool2dBackward(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size,
                         IntArrayRef stride, IntArrayRef padding, bool ceil_mode,
                         bool count_include_pad, std::optional<int64_t> divisor_override) {
  Structured<at::meta::structured_avg_pool2d_backward, 1> op;
  op.meta(grad_output, self, kernel_size, stride, padding, ceil_mode, count_include_pad,
          divisor_override);
  avgPoolBackwardKernel(grad_output, kernel_size, stride, padding, count_include_pad,
                        divisor_override, op.outputs[0]);
  return op.outputs[0];
}

Tensor& avgPool2dBackwardOut(const Tensor& grad_output, const Tensor& self,
                             IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                             bool ceil_mode, bool count_include_pad,
                             std::optional<int64_t> divisor_override, Tensor& grad_input) {
  Structured<at::meta::structured_avg_pool2d_backward, 1> op({&grad_input});
  op.meta(grad_output, self, kernel_size, stride, padding, ceil_mode, count_include_pad,
          divisor_override);
  avgPoolBackwardKernel(grad_output, kernel_size, stride, padding, count_include_pad,
                        divisor_override, grad_input);
  return grad_input;
}

// ---- adaptive_avg_pool2d (not structured: the CPU's checks) ---------------

void adaptiveAvgPoolInto(const Tensor& self, IntArrayRef output_size, Tensor& out) {
  TORCH_CHECK(output_size.size() == 2, "adaptive_avg_pool2d: output_size must be 2");
  const int64_t ndim = self.dim();
  TORCH_CHECK(ndim == 3 || ndim == 4, "adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got ",
              self.sizes());
  for (const int64_t i : {-2, -1}) {
    TORCH_CHECK(self.size(i) > 0,
                "adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch "
                "dimensions, but input has sizes ",
                self.sizes(), " with dimension ", i + ndim, " being empty");
  }
  TORCH_CHECK(self.dtype() == out.dtype(), "expected dtype ", self.dtype(),
              " for `output` but got dtype ", out.dtype());
  const int64_t channels = self.size(-3);
  if (ndim == 3) {
    out.resize_({channels, output_size[0], output_size[1]});
  } else {
    out.resize_({self.size(0), channels, output_size[0], output_size[1]},
                self.suggest_memory_format());
  }
  if (out.numel() == 0) return;
  checkDtype("adaptive_avg_pool2d", self.scalar_type(), isFloat(self.scalar_type()));
  // Windows overlap by at most one element: about ceil(H / OH) * ceil(W / OW) reads each.
  const int64_t reads = out.numel() * (self.size(-2) / output_size[0] + 1) *
                        (self.size(-1) / output_size[1] + 1);
  launchNn("adaptive_avg_pool2d", self.scalar_type(), {memrefOf(out, 4), memrefOf(self, 4)},
           programsFor(rowsOf(out), reads), self.device());
}

Tensor adaptiveAvgPool2d(const Tensor& self, c10::SymIntArrayRef output_size) {
  Tensor out = newEmpty({0}, self.options());
  adaptiveAvgPoolInto(self, C10_AS_INTARRAYREF_SLOW(output_size), out);
  return out;
}

Tensor& adaptiveAvgPool2dOut(const Tensor& self, c10::SymIntArrayRef output_size, Tensor& out) {
  adaptiveAvgPoolInto(self, C10_AS_INTARRAYREF_SLOW(output_size), out);
  return out;
}

Tensor adaptiveAvgPool2dBackward(const Tensor& grad_output, const Tensor& self) {
  const int64_t ndim = grad_output.dim();
  for (int64_t i = 1; i < ndim; ++i) {
    TORCH_CHECK(grad_output.size(i) > 0,
                "adaptive_avg_pool2d_backward(): Expected grad_output to have non-zero size "
                "for non-batch dimensions, but grad_output has sizes ",
                grad_output.sizes(), " with dimension ", i, " being empty");
  }
  TORCH_CHECK(self.dim() == ndim, "adaptive_avg_pool2d_backward(): Expected dimensions ",
              self.dim(), " for `grad_output` but got dimensions ", ndim);
  TORCH_CHECK(ndim == 3 || ndim == 4,
              "adaptive_avg_pool2d_backward(): Expected 3D or 4D tensor, but got ",
              self.sizes());
  TORCH_CHECK(self.dtype() == grad_output.dtype(), "expected dtype ", self.dtype(),
              " for `grad_output` but got dtype ", grad_output.dtype());
  Tensor grad_input = allocateOutput(
      self.sizes(), {}, self.options().memory_format(self.suggest_memory_format()));
  if (grad_input.numel() == 0) return grad_input;
  checkDtype("adaptive_avg_pool2d_backward", self.scalar_type(), isFloat(self.scalar_type()));
  const int64_t reads = grad_input.numel() * (grad_output.size(-2) / self.size(-2) + 2) *
                        (grad_output.size(-1) / self.size(-1) + 2);
  launchNn("adaptive_avg_pool2d_bwd", self.scalar_type(),
           {memrefOf(grad_input, 4), memrefOf(grad_output, 4)},
           programsFor(rowsOf(grad_input), reads), self.device());
  return grad_input;
}

// ---- adaptive_max_pool2d -------------------------------------------------

void adaptiveMaxPoolKernel(const Tensor& self, const Tensor& out, const Tensor& indices) {
  checkDtype("adaptive_max_pool2d", self.scalar_type(), isFloat(self.scalar_type()));
  if (out.numel() == 0) return;
  const int64_t reads = out.numel() * (self.size(-2) / out.size(-2) + 1) *
                        (self.size(-1) / out.size(-1) + 1);
  launchNn("adaptive_max_pool2d", self.scalar_type(),
           {memrefOf(out, 4), memrefOf(indices, 4), memrefOf(self, 4)},
           programsFor(rowsOf(out), reads), self.device());
}

std::tuple<Tensor, Tensor> adaptiveMaxPool2d(const Tensor& self, IntArrayRef output_size) {
  Structured<at::meta::structured_adaptive_max_pool2d, 2> op;
  op.meta(self, output_size);
  adaptiveMaxPoolKernel(self, op.outputs[0], op.outputs[1]);
  return {op.outputs[0], op.outputs[1]};
}

std::tuple<Tensor&, Tensor&> adaptiveMaxPool2dOut(const Tensor& self, IntArrayRef output_size,
                                                  Tensor& out, Tensor& indices) {
  Structured<at::meta::structured_adaptive_max_pool2d, 2> op({&out, &indices});
  op.meta(self, output_size);
  adaptiveMaxPoolKernel(self, out, indices);
  return {out, indices};
}

Tensor adaptiveMaxPool2dBackward(const Tensor& grad_output, const Tensor& self,
                                 const Tensor& indices) {
  Structured<at::meta::structured_adaptive_max_pool2d_backward, 1> op;
  op.meta(grad_output, self, indices);
  maxPoolBackwardKernel("adaptive_max_pool2d_backward", grad_output, indices, op.outputs[0]);
  return op.outputs[0];
}

Tensor& adaptiveMaxPool2dBackwardOut(const Tensor& grad_output, const Tensor& self,
                                     const Tensor& indices, Tensor& grad_input) {
  Structured<at::meta::structured_adaptive_max_pool2d_backward, 1> op({&grad_input});
  op.meta(grad_output, self, indices);
  maxPoolBackwardKernel("adaptive_max_pool2d_backward", grad_output, indices, grad_input);
  return grad_input;
}

MAIA_NATIVE_KERNELS(m) {
  m.impl("max_pool2d_with_indices", TORCH_FN(maxPool2d));
  m.impl("max_pool2d_with_indices.out", TORCH_FN(maxPool2dOut));
  m.impl("max_pool2d_with_indices_backward", TORCH_FN(maxPool2dBackward));
  m.impl("max_pool2d_with_indices_backward.grad_input", TORCH_FN(maxPool2dBackwardOut));
  m.impl("avg_pool2d", TORCH_FN(avgPool2d));
  m.impl("avg_pool2d.out", TORCH_FN(avgPool2dOut));
  m.impl("avg_pool2d_backward", TORCH_FN(avgPool2dBackward));
  m.impl("avg_pool2d_backward.grad_input", TORCH_FN(avgPool2dBackwardOut));
  m.impl("_adaptive_avg_pool2d", TORCH_FN(adaptiveAvgPool2d));
  m.impl("adaptive_avg_pool2d.out", TORCH_FN(adaptiveAvgPool2dOut));
  m.impl("_adaptive_avg_pool2d_backward", TORCH_FN(adaptiveAvgPool2dBackward));
  m.impl("adaptive_max_pool2d", TORCH_FN(adaptiveMaxPool2d));
  m.impl("adaptive_max_pool2d.out", TORCH_FN(adaptiveMaxPool2dOut));
  m.impl("adaptive_max_pool2d_backward", TORCH_FN(adaptiveMaxPool2dBackward));
  m.impl("adaptive_max_pool2d_backward.grad_input", TORCH_FN(adaptiveMaxPool2dBackwardOut));
}

}  // namespace
}  // namespace torch_maia::ops
