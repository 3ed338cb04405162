// 3-D pooling on maia: max_pool3d_with_indices, avg_pool3d,
// _adaptive_avg_pool3d, adaptive_max_pool3d and their backwards (so
// F.max_pool3d, avg_pool3d, the adaptive 3-D pools and interpolate's "area"
// mode on volumes), each one launch of the NN kernel binary
// (runtime/kernels/nn/pooling3d.h; the max pools' backward is the 2-D
// kernel over (N, C, D * H, W) views, whose flat plane indices are the
// same).
//
// Checks and shapes: the structured operators run ATen's meta functions;
// the others repeat the CPU's checks (ATen/native/Pool.h). Layouts are the
// CPU's: max pooling keeps channels-last-3d, the others return contiguous
// tensors. Dtypes are the CPU kernels': max pooling every numeric dtype,
// average pooling float32/float64/int64, adaptive pooling the floats.
#include <ATen/native/Pool.h>
#include <ATen/ops/adaptive_max_pool3d_backward_meta.h>
#include <ATen/ops/adaptive_max_pool3d_meta.h>
#include <ATen/ops/avg_pool3d_backward_meta.h>
#include <ATen/ops/avg_pool3d_meta.h>
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
namespace {

using at::IntArrayRef;
using at::Tensor;
using c10::ScalarType;

/// (depth, height, width) from a list of 1 or 3 values (empty: fallback).
std::array<int64_t, 3> triple(IntArrayRef values, std::array<int64_t, 3> fallback) {
  if (values.empty()) return fallback;
  if (values.size() == 1) return {values[0], values[0], values[0]};
  return {values[0], values[1], values[2]};
}

void appendTriple(std::vector<maiaKernelArg>& args, const std::array<int64_t, 3>& v) {
  for (int64_t x : v) args.push_back(intArg(x));
}

// ---- max_pool3d ------------------------------------------------------------

struct MaxPool3dArgs {
  std::array<int64_t, 3> kernel, stride, padding, dilation;
};

/// The CPU's argument parsing and checks (DilatedMaxPool3d.cpp); returns
/// the output's sizes.
std::vector<int64_t> maxPool3dShape(const Tensor& input, IntArrayRef kernel_size,
                                    IntArrayRef stride, IntArrayRef padding,
                                    IntArrayRef dilation, bool ceil_mode, MaxPool3dArgs& a) {
  TORCH_CHECK(kernel_size.size() == 1 || kernel_size.size() == 3,
              "max_pool3d: kernel_size must either be a single int, or a tuple of three ints");
  TORCH_CHECK(stride.empty() || stride.size() == 1 || stride.size() == 3,
              "max_pool3d: stride must either be omitted, a single int, or a tuple of three "
              "ints");
  TORCH_CHECK(padding.size() == 1 || padding.size() == 3,
              "max_pool3d: padding must either be a single int, or a tuple of three ints");
  TORCH_CHECK(dilation.size() == 1 || dilation.size() == 3,
              "max_pool3d: dilation must be either a single int, or a tuple of three ints");
  a.kernel = triple(kernel_size, {});
  a.stride = triple(stride, a.kernel);
  a.padding = triple(padding, {});
  a.dilation = triple(dilation, {});
  const auto format = input.suggest_memory_format();
  if (format == at::MemoryFormat::ChannelsLast3d) {
    TORCH_CHECK(input.dim() == 5,
                "non-empty 5D (batch mode) tensor expected for input with channels_last_3d "
                "layout");
  } else {
    TORCH_CHECK(input.dim() == 4 || input.dim() == 5,
                "non-empty 4D or 5D (batch mode) tensor expected for input");
  }
  const int64_t slices = input.size(-4), t = input.size(-3), h = input.size(-2),
                w = input.size(-1);
  std::array<int64_t, 3> out;
  const int64_t in[3] = {t, h, w};
  for (int d = 0; d < 3; ++d)
    out[d] = at::native::pooling_output_shape<int64_t>(in[d], a.kernel[d], a.padding[d],
                                                       a.stride[d], a.dilation[d], ceil_mode);
  at::native::pool3d_shape_check(input, slices, a.kernel[0], a.kernel[1], a.kernel[2],
                                 a.stride[0], a.stride[1], a.stride[2], a.padding[0],
                                 a.padding[1], a.padding[2], a.dilation[0], a.dilation[1],
                                 a.dilation[2], t, h, w, out[0], out[1], out[2],
                                 "max_pool3d_with_indices_out_cpu_template()");
  std::vector<int64_t> shape(input.sizes().begin(), input.sizes().end() - 3);
  shape.insert(shape.end(), out.begin(), out.end());
  return shape;
}

std::tuple<Tensor&, Tensor&> maxPool3dOut(const Tensor& self, IntArrayRef kernel_size,
                                          IntArrayRef stride, IntArrayRef padding,
                                          IntArrayRef dilation, bool ceil_mode, Tensor& out,
                                          Tensor& indices) {
  MaxPool3dArgs a;
  const auto shape = maxPool3dShape(self, kernel_size, stride, padding, dilation, ceil_mode, a);
  checkDtype("max_pool3d", self.scalar_type(),
             at::isFloatingType(self.scalar_type()) ||
                 at::isIntegralType(self.scalar_type(), /*includeBool=*/false));
  const auto format =
      self.dim() == 5 ? self.suggest_memory_format() : at::MemoryFormat::Contiguous;
  out.resize_(shape, format);
  indices.resize_(shape, format);
  if (out.numel() == 0) return {out, indices};
  std::vector<maiaKernelArg> args{memrefOf(out, 5), memrefOf(indices, 5), memrefOf(self, 5)};
  for (const auto& v : {a.kernel, a.stride, a.padding, a.dilation}) appendTriple(args, v);
  launchNn("max_pool3d", self.scalar_type(), args,
           programsFor(rowsOf(out), out.numel() * a.kernel[0] * a.kernel[1] * a.kernel[2]),
           self.device());
  return {out, indices};
}

std::tuple<Tensor, Tensor> maxPool3d(const Tensor& self, IntArrayRef kernel_size,
                                     IntArrayRef stride, IntArrayRef padding,
                                     IntArrayRef dilation, bool ceil_mode) {
  Tensor out = newEmpty({0}, self.options());
  Tensor indices = newEmpty({0}, self.options().dtype(ScalarType::Long));
  maxPool3dOut(self, kernel_size, stride, padding, dilation, ceil_mode, out, indices);
  return {out, indices};
}

/// grad_input (self's shape and layout) from grad_output through the
/// indices of a 3-D max pool: the 2-D kernel over (.., D * H, W) views.
void maxPool3dBackwardInto(const char* op, const Tensor& grad_output, const Tensor& indices,
                           const Tensor& self, Tensor& grad_input) {
  grad_input.resize_(self.sizes(), self.dim() == 5 ? self.suggest_memory_format()
                                                   : at::MemoryFormat::Contiguous);
  if (grad_input.numel() == 0) return;
  auto flatten = [](const Tensor& t) {  // (.., D, H, W) -> (.., D * H, W)
    std::vector<int64_t> shape(t.sizes().begin(), t.sizes().end() - 3);
    shape.push_back(t.size(-3) * t.size(-2));
    shape.push_back(t.size(-1));
    return t.reshape(shape);
  };
  Tensor target = grad_input.is_contiguous() ? grad_input : newEmpty(self.sizes(),
                                                                     grad_input.options());
  maxPoolBackwardKernel(op, flatten(grad_output), flatten(indices), flatten(target));
  if (!target.is_same(grad_input)) grad_input.copy_(target);
}

Tensor& maxPool3dBackwardOut(const Tensor& grad_output, const Tensor& self,
                             IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                             IntArrayRef dilation, bool ceil_mode, const Tensor& indices,
                             Tensor& grad_input) {
  MaxPool3dArgs a;
  const auto shape = maxPool3dShape(self, kernel_size, stride, padding, dilation, ceil_mode, a);
  at::native::max_pool3d_backward_shape_check(
      self, grad_output, indices, self.size(-4), a.kernel[0], a.kernel[1], a.kernel[2],
      a.stride[0], a.stride[1], a.stride[2], a.padding[0], a.padding[1], a.padding[2],
      a.dilation[0], a.dilation[1], a.dilation[2], self.size(-3), self.size(-2), self.size(-1),
      shape[shape.size() - 3], shape[shape.size() - 2], shape[shape.size() - 1],
      "max_pool3d_with_indices_backward_out_cpu_template()");
  checkNoWindowInPadding("max_pool3d_with_indices_backward",
                         {{self.size(-3), grad_output.size(-3), a.kernel[0], a.stride[0],
                           a.padding[0], a.dilation[0]},
                          {self.size(-2), grad_output.size(-2), a.kernel[1], a.stride[1],
                           a.padding[1], a.dilation[1]},
                          {self.size(-1), grad_output.size(-1), a.kernel[2], a.stride[2],
                           a.padding[2], a.dilation[2]}});
  maxPool3dBackwardInto("max_pool3d_with_indices_backward", grad_output, indices, self,
                        grad_input);
  return grad_input;
}

Tensor maxPool3dBackward(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size,
                         IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                         bool ceil_mode, const Tensor& indices) {
  Tensor grad_input = newEmpty({0}, self.options());
  return maxPool3dBackwardOut(grad_output, self, kernel_size, stride, padding, dilation,
                              ceil_mode, indices, grad_input);
}

// ---- avg_pool3d ------------------------------------------------------------

void appendAvgArgs(std::vector<maiaKernelArg>& args, IntArrayRef kernel_size,
                   IntArrayRef stride, IntArrayRef padding, bool count_include_pad,
                   std::optional<int64_t> divisor_override) {
  const auto kernel = triple(kernel_size, {});
  appendTriple(args, kernel);
  appendTriple(args, triple(stride, kernel));
  appendTriple(args, triple(padding, {}));
  args.push_back(intArg(count_include_pad ? 1 : 0));
  args.push_back(intArg(divisor_override.value_or(0)));
}

/// The CPU's avg_pool3d dtypes (its avg_pool3d_out_frame kernels).
bool avgPool3dDtype(ScalarType t) {
  return t == ScalarType::Float || t == ScalarType::Double || t == ScalarType::Long;
}

void avgPool3dKernel(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                     IntArrayRef padding, bool count_include_pad,
                     std::optional<int64_t> divisor_override, const Tensor& out) {
  checkDtype("avg_pool3d_out_frame", self.scalar_type(), avgPool3dDtype(self.scalar_type()));
  if (out.numel() == 0) return;
  std::vector<maiaKernelArg> args{memrefOf(out, 5), memrefOf(self, 5)};
  appendAvgArgs(args, kernel_size, stride, padding, count_include_pad, divisor_override);
  launchNn("avg_pool3d", self.scalar_type(), args, programsFor(rowsOf(out), self.numel()),
           self.device());
}

Tensor& avgPool3dOut(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                     IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                     std::optional<int64_t> divisor_override, Tensor& out) {
  Structured<at::meta::structured_avg_pool3d, 1> op({&out});
  op.meta(self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override);
  avgPool3dKernel(self, kernel_size, stride, padding, count_include_pad, divisor_override, out);
  return out;
}

Tensor avgPool3d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                 IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                 std::optional<int64_t> divisor_override) {
  Structured<at::meta::structured_avg_pool3d, 1> op;
  op.meta(self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override);
  avgPool3dKernel(self, kernel_size, stride, padding, count_include_pad, divisor_override,
                  op.outputs[0]);
  return op.outputs[0];
}

void avgPool3dBackwardKernel(const Tensor& grad_output, IntArrayRef kernel_size,
                             IntArrayRef stride, IntArrayRef padding, bool count_include_pad,
                             std::optional<int64_t> divisor_override, const Tensor& grad_input) {
  const ScalarType dtype = grad_input.scalar_type();
  checkDtype("avg_pool3d_backward_out_frame", dtype, avgPool3dDtype(dtype));
  if (grad_input.numel() == 0) return;
  std::vector<maiaKernelArg> args{memrefOf(grad_input, 5), memrefOf(grad_output, 5)};
  appendAvgArgs(args, kernel_size, stride, padding, count_include_pad, divisor_override);
  launchNn("avg_pool3d_bwd", dtype, args,
           programsFor(rowsOf(grad_input), grad_input.numel() + grad_output.numel()),
           grad_input.device());
}

Tensor& avgPool3dBackwardOut(const Tensor& grad_output, const Tensor& self,
                             IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                             bool ceil_mode, bool count_include_pad,
                             std::optional<int64_t> divisor_override, Tensor& grad_input) {
  Structured<at::meta::structured_avg_pool3d_backward, 1> op({&grad_input});
  op.meta(grad_output, self, kernel_size, stride, padding, ceil_mode, count_include_pad,
          divisor_override);
  avgPool3dBackwardKernel(grad_output, kernel_size, stride, padding, count_include_pad,
                          divisor_override, grad_input);
  return grad_input;
}

Tensor avgPool3dBackward(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size,
                         IntArrayRef stride, IntArrayRef padding, bool ceil_mode,
                         bool count_include_pad, std::optional<int64_t> divisor_override) {
  Structured<at::meta::structured_avg_pool3d_backward, 1> op;
  op.meta(grad_output, self, kernel_size, stride, padding, ceil_mode, count_include_pad,
          divisor_override);
  avgPool3dBackwardKernel(grad_output, kernel_size, stride, padding, count_include_pad,
                          divisor_override, op.outputs[0]);
  return op.outputs[0];
}

// ---- adaptive pooling ----------------------------------------------------

/// The CPU's _adaptive_avg_pool3d checks (AdaptiveAveragePooling3d.cpp).
void checkAdaptiveAvg(const Tensor& input, IntArrayRef output_size) {
  TORCH_CHECK(output_size.size() == 3, "adaptive_avg_pool3d: output_size must be 3");
  for (int64_t i = 1; i < input.dim(); ++i)
    TORCH_CHECK(input.size(i) > 0,
                "adaptive_avg_pool3d(): Expected input to have non-zero size for non-batch "
                "dimensions, but input has sizes ", input.sizes(), " with dimension ", i,
                " being empty");
  TORCH_CHECK(input.dim() == 4 || input.dim() == 5,
              "adaptive_avg_pool3d(): Expected 4D or 5D tensor, but got ", input.sizes());
  checkDtype("adaptive_avg_pool3d_cpu", input.scalar_type(),
             at::isFloatingType(input.scalar_type()));
}

Tensor adaptiveAvgPool3d(const Tensor& self, IntArrayRef output_size) {
  checkAdaptiveAvg(self, output_size);
  std::vector<int64_t> shape(self.sizes().begin(), self.sizes().end() - 3);
  shape.insert(shape.end(), output_size.begin(), output_size.end());
  Tensor out = newEmpty(shape, self.options());
  if (out.numel() > 0)
    launchNn("adaptive_avg_pool3d", self.scalar_type(), {memrefOf(out, 5), memrefOf(self, 5)},
             programsFor(rowsOf(out), self.numel()), self.device());
  return out;
}

Tensor adaptiveAvgPool3dBackward(const Tensor& grad_output, const Tensor& self) {
  checkDtype("adaptive_avg_pool3d_backward_cpu", self.scalar_type(),
             at::isFloatingType(self.scalar_type()));
  Tensor grad_input = newEmpty(self.sizes(), self.options());
  if (grad_input.numel() > 0)
    launchNn("adaptive_avg_pool3d_bwd", self.scalar_type(),
             {memrefOf(grad_input, 5), memrefOf(grad_output, 5)},
             programsFor(rowsOf(grad_input), grad_input.numel() + grad_output.numel()),
             self.device());
  return grad_input;
}

void adaptiveMaxPool3dKernel(const Tensor& self, const Tensor& out, const Tensor& indices) {
  checkDtype("adaptive_max_pool3d_cpu", self.scalar_type(),
             at::isFloatingType(self.scalar_type()));
  if (out.numel() == 0) return;
  launchNn("adaptive_max_pool3d", self.scalar_type(),
           {memrefOf(out, 5), memrefOf(indices, 5), memrefOf(self, 5)},
           programsFor(rowsOf(out), self.numel()), self.device());
}

std::tuple<Tensor&, Tensor&> adaptiveMaxPool3dOut(const Tensor& self, IntArrayRef output_size,
                                                  Tensor& out, Tensor& indices) {
  Structured<at::meta::structured_adaptive_max_pool3d, 2> op({&out, &indices});
  op.meta(self, output_size);
  adaptiveMaxPool3dKernel(self, out, indices);
  return {out, indices};
}

std::tuple<Tensor, Tensor> adaptiveMaxPool3d(const Tensor& self, IntArrayRef output_size) {
  Structured<at::meta::structured_adaptive_max_pool3d, 2> op;
  op.meta(self, output_size);
  adaptiveMaxPool3dKernel(self, op.outputs[0], op.outputs[1]);
  return {op.outputs[0], op.outputs[1]};
}

Tensor& adaptiveMaxPool3dBackwardOut(const Tensor& grad_output, const Tensor& self,
                                     const Tensor& indices, Tensor& grad_input) {
  Structured<at::meta::structured_adaptive_max_pool3d_backward, 1> op({&grad_input});
  op.meta(grad_output, self, indices);
  maxPool3dBackwardInto("adaptive_max_pool3d_backward", grad_output, indices, self, grad_input);
  return grad_input;
}

Tensor adaptiveMaxPool3dBackward(const Tensor& grad_output, const Tensor& self,
                                 const Tensor& indices) {
  Structured<at::meta::structured_adaptive_max_pool3d_backward, 1> op;
  op.meta(grad_output, self, indices);
  maxPool3dBackwardInto("adaptive_max_pool3d_backward", grad_output, indices, self,
                        op.outputs[0]);
  return op.outputs[0];
}

MAIA_NATIVE_KERNELS(m) {
  m.impl("max_pool3d_with_indices", TORCH_FN(maxPool3d));
  m.impl("max_pool3d_with_indices.out", TORCH_FN(maxPool3dOut));
  m.impl("max_pool3d_with_indices_backward", TORCH_FN(maxPool3dBackward));
  m.impl("max_pool3d_with_indices_backward.grad_input", TORCH_FN(maxPool3dBackwardOut));
  m.impl("avg_pool3d", TORCH_FN(avgPool3d));
  m.impl("avg_pool3d.out", TORCH_FN(avgPool3dOut));
  m.impl("avg_pool3d_backward", TORCH_FN(avgPool3dBackward));
  m.impl("avg_pool3d_backward.grad_input", TORCH_FN(avgPool3dBackwardOut));
  m.impl("_adaptive_avg_pool3d", TORCH_FN(adaptiveAvgPool3d));
  m.impl("_adaptive_avg_pool3d_backward", TORCH_FN(adaptiveAvgPool3dBackward));
  m.impl("adaptive_max_pool3d", TORCH_FN(adaptiveMaxPool3d));
  m.impl("adaptive_max_pool3d.out", TORCH_FN(adaptiveMaxPool3dOut));
  m.impl("adaptive_max_pool3d_backward", TORCH_FN(adaptiveMaxPool3dBackward));
  m.impl("adaptive_max_pool3d_backward.grad_input", TORCH_FN(adaptiveMaxPool3dBackwardOut));
}

}  // namespace
}  // namespace torch_maia::ops
