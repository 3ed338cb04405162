// Antialiased upsampling on maia (F.interpolate(..., antialias=True) with
// bilinear or bicubic mode): _upsample_bilinear2d_aa and
// _upsample_bicubic2d_aa, their out= forms and backwards, float32/float64.
//
// The windows and weights of each output index are computed on the host,
// in the input's dtype with the CPU's promotions (Pillow's filters, a
// support widened by the scale when downsampling, weights normalized per
// window), and uploaded once per axis; the device runs one pass per
// resized axis, width first, as the CPU's separable kernel does (an axis
// whose size does not change is not resampled), and the backward scatters
// each output gradient over the product of its two windows in the CPU's
// order (runtime/kernels/nn/upsample_aa.h). ATen's structured meta
// functions check the arguments and lay out the results.
#include <ATen/native/UpSample.h>
#include <ATen/ops/_upsample_bicubic2d_aa_backward_meta.h>
#include <ATen/ops/_upsample_bicubic2d_aa_meta.h>
#include <ATen/ops/_upsample_bilinear2d_aa_backward_meta.h>
#include <ATen/ops/_upsample_bilinear2d_aa_meta.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>
#include <c10/core/SymIntArrayRef.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "WorkSplit.h"
#include "ops/EagerKernels.h"
#include "ops/HostRouting.h"
#include "ops/MaiaOps.h"
#include "ops/OpUtils.h"
#include "ops/Structured.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;
using c10::SymIntArrayRef;
using Scale = std::optional<double>;

enum class Filter { Linear, Cubic };

/// Pillow's filters, in S as the CPU evaluates them (Keys' cubic with
/// a = -0.5, not the -0.75 of bicubic without antialiasing).
template <typename S>
S filterAt(Filter filter, S x) {
  x = std::abs(x);
  if (filter == Filter::Linear) return x < 1.0 ? S(1.0 - x) : S(0);
  const S a = -0.5;
  if (x < 1.0) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2.0) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

/// One axis's windows on the device: output index i reads `size[i]` inputs
/// from `start[i]` with weights[i, :size[i]].
struct AxisWindows {
  Tensor start, size, weights;
};

/// The CPU's _compute_indices_min_size_weights_aa for every output index,
/// in S (float for float32 inputs, double for float64), with its mixed
/// float/double promotions.
template <typename S>
AxisWindows axisWindows(Filter filter, int64_t in, int64_t out, bool align, Scale scale,
                        const Tensor& like) {
  const S s = at::native::area_pixel_compute_scale<S>(in, out, align, scale);
  const int interp_size = filter == Filter::Linear ? 2 : 4;
  const S support = (s >= 1.0) ? (interp_size * 0.5) * s : interp_size * 0.5;
  const int64_t taps = static_cast<int64_t>(std::ceil(support)) * 2 + 1;
  const S invscale = (s >= 1.0) ? 1.0 / s : 1.0;
  std::vector<int64_t> start(out), size(out);
  std::vector<S> weights(out * taps, S(0));
  for (int64_t i = 0; i < out; ++i) {
    const S center = s * (i + 0.5);
    const int64_t xmin = std::max(static_cast<int64_t>(center - support + 0.5), int64_t{0});
    const int64_t xsize = std::clamp(
        std::min(static_cast<int64_t>(center + support + 0.5), in) - xmin, int64_t{0}, taps);
    S* w = weights.data() + i * taps;
    S total = 0;
    for (int64_t j = 0; j < xsize; ++j) {
      w[j] = filterAt<S>(filter, (j + xmin - center + 0.5) * invscale);
      total += w[j];
    }
    if (total != 0.0)
      for (int64_t j = 0; j < xsize; ++j) w[j] /= total;
    start[i] = xmin;
    size[i] = xsize;
  }
  return {int64Tensor(start, like.device()), int64Tensor(size, like.device()),
          at::tensor(weights, like.scalar_type()).view({out, taps}).to(like.device())};
}

AxisWindows windowsFor(Filter filter, int64_t in, int64_t out, bool align, Scale scale,
                       const Tensor& like) {
  return like.scalar_type() == at::kDouble
             ? axisWindows<double>(filter, in, out, align, scale, like)
             : axisWindows<float>(filter, in, out, align, scale, like);
}

/// One pass along dim (2: height, 3: width) from in into out.
void resamplePass(Filter filter, const Tensor& in, const Tensor& out, int64_t dim, bool align,
                  Scale scale) {
  const AxisWindows axis = windowsFor(filter, in.size(dim), out.size(dim), align, scale, in);
  launchNn("upsample_aa", in.scalar_type(),
           {memrefOf(out), memrefOf(in), memrefOf(axis.start), memrefOf(axis.size),
            memrefOf(axis.weights), intArg(dim)},
           programsFor(out.numel(), out.numel() * axis.weights.size(1)), in.device());
}

void forward(Filter filter, const Tensor& self, const Tensor& out, bool align, Scale scale_h,
             Scale scale_w) {
  checkSingleOrDouble("compute_index_ranges_weights", self);
  if (out.numel() == 0) return;
  const bool resize_w = self.size(3) != out.size(3), resize_h = self.size(2) != out.size(2);
  if (!resize_w && !resize_h) {
    out.copy_(self);
    return;
  }
  Tensor source = self;
  if (resize_w) {
    const Tensor target =
        resize_h ? at::empty({self.size(0), self.size(1), self.size(2), out.size(3)},
                             self.options())
                 : out;
    resamplePass(filter, source, target, 3, align, scale_w);
    source = target;
  }
  if (resize_h) resamplePass(filter, source, out, 2, align, scale_h);
}

void backward(Filter filter, const Tensor& grad_output, const Tensor& grad_input, bool align,
              Scale scale_h, Scale scale_w) {
  checkSingleOrDouble("compute_index_ranges_weights", grad_output);
  const bool dense = grad_input.is_contiguous();
  const Tensor target = dense ? grad_input : at::empty(grad_input.sizes(), grad_input.options());
  target.zero_();
  if (grad_output.numel() > 0 && target.numel() > 0) {
    const AxisWindows y =
        windowsFor(filter, target.size(2), grad_output.size(2), align, scale_h, grad_output);
    const AxisWindows x =
        windowsFor(filter, target.size(3), grad_output.size(3), align, scale_w, grad_output);
    launchNn("upsample_aa_bwd", grad_output.scalar_type(),
             {memrefOf(target), memrefOf(grad_output), memrefOf(y.start), memrefOf(y.size),
              memrefOf(y.weights), memrefOf(x.start), memrefOf(x.size), memrefOf(x.weights)},
             programsFor(grad_output.size(0) * grad_output.size(1),
                         grad_output.numel() * y.weights.size(1) * x.weights.size(1)),
             grad_output.device());
  }
  if (!dense) grad_input.copy_(target);
}

c10::IntArrayRef ints(SymIntArrayRef s) { return C10_AS_INTARRAYREF_SLOW(s); }

template <class Meta>
Tensor resample(Filter filter, const Tensor& self, SymIntArrayRef size, bool align, Scale h,
                Scale w, Tensor* out) {
  Structured<Meta, 1> op(std::array<Tensor*, 1>{out});
  op.meta(self, ints(size), align, h, w);
  forward(filter, self, op.outputs[0], align, h, w);
  return op.outputs[0];
}

template <class Meta>
Tensor resampleBackward(Filter filter, const Tensor& grad_output, SymIntArrayRef output_size,
                        SymIntArrayRef input_size, bool align, Scale h, Scale w,
                        Tensor* grad_input) {
  Structured<Meta, 1> op(std::array<Tensor*, 1>{grad_input});
  op.meta(grad_output, ints(output_size), ints(input_size), align, h, w);
  backward(filter, grad_output, op.outputs[0], align, h, w);
  return op.outputs[0];
}

/// Registers an antialiased family: functional, out=, backward and its
/// grad_input form.
#define MAIA_ANTIALIAS_FAMILY(op, filter, Meta, BackwardMeta)                                 \
  m.impl(#op, [](const Tensor& x, SymIntArrayRef s, bool align, Scale h, Scale w) {          \
    return resample<at::meta::Meta>(filter, x, s, align, h, w, nullptr);                     \
  });                                                                                        \
  m.impl(#op ".out", [](const Tensor& x, SymIntArrayRef s, bool align, Scale h, Scale w,     \
                        Tensor& out) -> Tensor& {                                            \
    resample<at::meta::Meta>(filter, x, s, align, h, w, &out);                               \
    return out;                                                                              \
  });                                                                                        \
  m.impl(#op "_backward", [](const Tensor& g, SymIntArrayRef os, SymIntArrayRef is,          \
                             bool align, Scale h, Scale w) {                                 \
    return resampleBackward<at::meta::BackwardMeta>(filter, g, os, is, align, h, w, nullptr); \
  });                                                                                        \
  m.impl(#op "_backward.grad_input",                                                         \
         [](const Tensor& g, SymIntArrayRef os, SymIntArrayRef is, bool align, Scale h,      \
            Scale w, Tensor& gi) -> Tensor& {                                                \
           resampleBackward<at::meta::BackwardMeta>(filter, g, os, is, align, h, w, &gi);    \
           return gi;                                                                        \
         })

constexpr Filter kLinear = Filter::Linear, kCubic = Filter::Cubic;

MAIA_NATIVE_KERNELS(m) {
  MAIA_ANTIALIAS_FAMILY(_upsample_bilinear2d_aa, kLinear, structured__upsample_bilinear2d_aa,
                        structured__upsample_bilinear2d_aa_backward);
  MAIA_ANTIALIAS_FAMILY(_upsample_bicubic2d_aa, kCubic, structured__upsample_bicubic2d_aa,
                        structured__upsample_bicubic2d_aa_backward);
}

#undef MAIA_ANTIALIAS_FAMILY

}  // namespace
}  // namespace torch_maia::ops
