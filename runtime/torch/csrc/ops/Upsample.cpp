// Upsampling on maia (F.interpolate's nearest, nearest-exact, linear,
// bilinear, trilinear and bicubic modes, nn.Upsample):
// upsample_nearest1d/2d/3d, _upsample_nearest_exact1d/2d/3d,
// upsample_linear1d, upsample_bilinear2d, upsample_trilinear3d,
// upsample_bicubic2d, their out= forms and backwards, each one launch of
// the NN kernel binary (runtime/kernels/nn/upsample.h,
// upsample_trilinear_bicubic.h). Nearest modes run one 3-D kernel, linear
// modes one 2-D kernel; lower-dimensional operators add size-1 dimensions,
// which both modes copy through unchanged.
//
// ATen's structured meta functions check the arguments and shape (and lay
// out) the results (Structured.h); the scales the kernels use are computed
// here exactly as the CPU's compute_scales_value/area_pixel_compute_scale
// do, in the type the CPU computes them in. uint8 bilinear and bicubic
// images (CPU kernels with integer weights) run on the counted host
// fallback.
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <ATen/ops/_upsample_nearest_exact1d_backward_meta.h>
#include <ATen/ops/_upsample_nearest_exact1d_meta.h>
#include <ATen/ops/_upsample_nearest_exact2d_backward_meta.h>
#include <ATen/ops/_upsample_nearest_exact2d_meta.h>
#include <ATen/ops/_upsample_nearest_exact3d_backward_meta.h>
#include <ATen/ops/_upsample_nearest_exact3d_meta.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/upsample_bicubic2d.h>
#include <ATen/ops/upsample_bicubic2d_backward_meta.h>
#include <ATen/ops/upsample_bicubic2d_meta.h>
#include <ATen/ops/upsample_bilinear2d.h>
#include <ATen/ops/upsample_bilinear2d_backward_meta.h>
#include <ATen/ops/upsample_bilinear2d_meta.h>
#include <ATen/ops/upsample_linear1d_backward_meta.h>
#include <ATen/ops/upsample_linear1d_meta.h>
#include <ATen/ops/upsample_nearest1d_backward_meta.h>
#include <ATen/ops/upsample_nearest1d_meta.h>
#include <ATen/ops/upsample_nearest2d_backward_meta.h>
#include <ATen/ops/upsample_nearest2d_meta.h>
#include <ATen/ops/upsample_nearest3d_backward_meta.h>
#include <ATen/ops/upsample_nearest3d_meta.h>
#include <ATen/ops/upsample_trilinear3d_backward_meta.h>
#include <ATen/ops/upsample_trilinear3d_meta.h>
#include <c10/core/SymIntArrayRef.h>
#include <torch/library.h>

#include <optional>
#include <string>
#include <vector>

#include "WorkSplit.h"
#include "ops/EagerKernels.h"
#include "ops/HostRouting.h"
#include "ops/Fallback.h"
#include "ops/MaiaOps.h"
#include "ops/OpUtils.h"
#include "ops/Structured.h"

namespace torch_maia::ops {
namespace {

using at::IntArrayRef;
using at::Tensor;
using c10::ScalarType;
using c10::SymIntArrayRef;
using Scale = std::optional<double>;

enum class Mode { Nearest, NearestExact, Linear, Trilinear, Bicubic };

/// The modes that interpolate (take align_corners), as opposed to copying.
bool interpolates(Mode mode) { return mode != Mode::Nearest && mode != Mode::NearestExact; }

maiaKernelArg doubleArg(double v) {
  maiaKernelArg arg{};
  arg.kind = maiaArgScalar;
  arg.dtype = maiaDtypeF64;
  arg.scalar.f = v;
  return arg;
}

/// The CPU's compute_scales_value: 1 / scale when given (and positive),
/// else in / out, in type S.
template <typename S>
S scalesValue(Scale scale, int64_t in, int64_t out) {
  return scale.has_value() && *scale > 0. ? static_cast<S>(1.0 / *scale)
                                          : static_cast<S>(in) / static_cast<S>(out);
}

/// The CPU's area_pixel_compute_scale in type S.
template <typename S>
S linearScale(int64_t in, int64_t out, bool align_corners, Scale scale) {
  if (!align_corners) return scalesValue<S>(scale, in, out);
  return out > 1 ? static_cast<S>(in - 1) / static_cast<S>(out - 1) : S(0);
}

/// The kernels' scale of one dimension: nearest modes use float; linear the
/// compute type (float, or double for float64).
double kernelScale(Mode mode, ScalarType dtype, int64_t in, int64_t out, bool align,
                   Scale scale) {
  if (!interpolates(mode)) return scalesValue<float>(scale, in, out);
  if (dtype == ScalarType::Double) return linearScale<double>(in, out, align, scale);
  return linearScale<float>(in, out, align, scale);
}

/// t with size-1 dimensions inserted after (N, C) up to `rank` dimensions:
/// the kernels' view of lower-dimensional upsampling.
Tensor withSpatialDims(const Tensor& t, int64_t rank) {
  Tensor v = t;
  while (v.dim() < rank) v = v.unsqueeze(2);
  return v;
}

/// An operator's scales, (depth, height, width); the ones a lower-dimensional
/// operator does not have stay empty.
struct Scales {
  Scale d, h, w;
};

/// The kernel arguments after the two memrefs: the scales of the spatial
/// dimensions of the (input-sized, output-sized) views, then the mode flag.
std::vector<maiaKernelArg> trailingArgs(Mode mode, bool align, ScalarType dtype,
                                        const Tensor& in, const Tensor& out,
                                        const Scales& scales) {
  const Scale all[] = {scales.d, scales.h, scales.w};  // of the last 3 dimensions
  std::vector<maiaKernelArg> args;
  for (int64_t d = 2; d < in.dim(); ++d) {
    args.push_back(doubleArg(
        kernelScale(mode, dtype, in.size(d), out.size(d), align, all[d - in.dim() + 3])));
  }
  args.push_back(intArg(interpolates(mode) ? align : mode == Mode::NearestExact));
  return args;
}

/// The kernels' rank: nearest modes and trilinear take (N, C, D, H, W),
/// linear and bicubic (N, C, H, W).
int64_t kernelRank(Mode mode) { return mode == Mode::Linear || mode == Mode::Bicubic ? 4 : 5; }

/// The forward kernel of a mode (the backward's adds "_bwd").
std::string kernelName(Mode mode) {
  switch (mode) {
    case Mode::Linear: return "upsample_bilinear2d";
    case Mode::Trilinear: return "upsample_trilinear3d";
    case Mode::Bicubic: return "upsample_bicubic2d";
    default: return "upsample_nearest";
  }
}

/// Which of the CPU's kernels computes a linear upsampling of self into
/// out (upsample_bilinear2d_kernel_impl_float's choice): 0 for its generic
/// kernel, -1 for it on a 1-D operator (no height at all), else its
/// channels-last kernel, given as the element count of its vectors (64
/// bytes on an AVX-512 CPU, else 32).
int64_t cpuVectorWidth(const Tensor& self, const Tensor& out) {
  if (self.dim() != 4) return -1;
  const bool channels_last_kernel =
      (self.is_contiguous(c10::MemoryFormat::ChannelsLast) && self.size(1) > 3) ||
      out.size(-2) + out.size(-1) <= 128 || (at::get_num_threads() == 1 && self.size(1) == 3);
  if (!channels_last_kernel) return 0;
  const int64_t bytes = at::get_cpu_capability() == "AVX512" ? 64 : 32;
  return bytes / static_cast<int64_t>(self.element_size());
}

void forward(const char* op, Mode mode, bool align, const Tensor& self, const Tensor& out,
             const Scales& scales) {
  const ScalarType dtype = self.scalar_type();
  checkDtype(op, dtype,
             at::isFloatingType(dtype) || (!interpolates(mode) && dtype == ScalarType::Byte));
  if (out.numel() == 0) return;
  const Tensor in_view = withSpatialDims(self, kernelRank(mode));
  const Tensor out_view = withSpatialDims(out, kernelRank(mode));
  const int64_t rows = out.numel() / out.size(-1);
  std::vector<maiaKernelArg> args{memrefOf(out_view), memrefOf(in_view)};
  for (const maiaKernelArg& arg : trailingArgs(mode, align, dtype, in_view, out_view, scales))
    args.push_back(arg);
  if (mode == Mode::Linear) args.push_back(intArg(cpuVectorWidth(self, out)));
  const int64_t taps = mode == Mode::Bicubic ? 16 : mode == Mode::Trilinear ? 8 : 4;
  launchNn(kernelName(mode).c_str(), dtype, args,
           programsFor(rows, out.numel() * (interpolates(mode) ? taps : 1)), self.device());
}

/// grad_input from grad_output. The kernels accumulate in the compute type:
/// float16/bfloat16 gradients go through a float32 buffer cast back on the
/// device.
void backward(const char* op, Mode mode, bool align, const Tensor& grad_output,
              const Tensor& grad_input, const Scales& scales) {
  const ScalarType dtype = grad_output.scalar_type();
  checkDtype(op, dtype, at::isFloatingType(dtype));
  if (grad_input.numel() == 0) return;
  const Tensor target = computeTypeTarget(grad_input);
  const Tensor in_view = withSpatialDims(target, kernelRank(mode));
  const Tensor out_view = withSpatialDims(grad_output, kernelRank(mode));
  std::vector<maiaKernelArg> args{memrefOf(in_view), memrefOf(out_view)};
  for (const maiaKernelArg& arg : trailingArgs(mode, align, dtype, in_view, out_view, scales))
    args.push_back(arg);
  if (mode == Mode::Linear) args.push_back(intArg(grad_input.dim() == 3 ? 1 : 0));
  launchNn((kernelName(mode) + "_bwd").c_str(), dtype, args,
           programsFor(grad_input.size(0) * grad_input.size(1),
                       grad_input.numel() + grad_output.numel()),
           grad_input.device());
  if (!target.is_same(grad_input)) grad_input.copy_(target);
}

// ---- the operators: meta function, then the kernel ------------------------

IntArrayRef ints(SymIntArrayRef s) { return C10_AS_INTARRAYREF_SLOW(s); }

/// A nearest-mode forward: Meta's meta function over (self, size,
/// meta_scales...), then the kernel; out given for out= variants.
template <class Meta, class... MetaScales>
Tensor nearest(const char* name, Mode mode, const Tensor& self, SymIntArrayRef size,
               const Scales& scales, Tensor* out, MetaScales... meta_scales) {
  Structured<Meta, 1> op(std::array<Tensor*, 1>{out});
  op.meta(self, ints(size), meta_scales...);
  forward(name, mode, false, self, op.outputs[0], scales);
  return op.outputs[0];
}

template <class Meta, class... MetaScales>
Tensor nearestBackward(const char* name, Mode mode, const Tensor& grad_output,
                       SymIntArrayRef output_size, SymIntArrayRef input_size,
                       const Scales& scales, Tensor* grad_input, MetaScales... meta_scales) {
  Structured<Meta, 1> op(std::array<Tensor*, 1>{grad_input});
  op.meta(grad_output, ints(output_size), ints(input_size), meta_scales...);
  backward(name, mode, false, grad_output, op.outputs[0], scales);
  return op.outputs[0];
}

/// An interpolating forward (mode Linear, Trilinear or Bicubic): Meta's
/// meta function, then the kernel. `name` is the CPU kernel its dtype
/// errors name.
template <class Meta, class... MetaScales>
Tensor interpolate(const char* name, Mode mode, const Tensor& self, SymIntArrayRef size,
                   bool align, const Scales& scales, Tensor* out, MetaScales... meta_scales) {
  Structured<Meta, 1> op(std::array<Tensor*, 1>{out});
  op.meta(self, ints(size), align, meta_scales...);
  if (self.scalar_type() == ScalarType::Byte && self.dim() == 4) {
    // The CPU's uint8 kernels round integer weights: computed there.
    const bool cubic = mode == Mode::Bicubic;
    noteHostFallback(cubic ? "aten::upsample_bicubic2d" : "aten::upsample_bilinear2d");
    const Tensor cpu = self.cpu();
    op.outputs[0].copy_(cubic
                            ? at::upsample_bicubic2d(cpu, ints(size), align, scales.h, scales.w)
                            : at::upsample_bilinear2d(cpu, ints(size), align, scales.h, scales.w));
    return op.outputs[0];
  }
  forward(name, mode, align, self, op.outputs[0], scales);
  return op.outputs[0];
}

template <class Meta, class... MetaScales>
Tensor interpolateBackward(const char* name, Mode mode, const Tensor& grad_output,
                           SymIntArrayRef output_size, SymIntArrayRef input_size, bool align,
                           const Scales& scales, Tensor* grad_input,
                           MetaScales... meta_scales) {
  Structured<Meta, 1> op(std::array<Tensor*, 1>{grad_input});
  op.meta(grad_output, ints(output_size), ints(input_size), align, meta_scales...);
  backward(name, mode, align, grad_output, op.outputs[0], scales);
  return op.outputs[0];
}

namespace meta = at::meta;
constexpr Mode kNearest = Mode::Nearest, kExact = Mode::NearestExact, kLinear = Mode::Linear,
               kTrilinear = Mode::Trilinear, kBicubic = Mode::Bicubic;

/// Registers a nearest-mode operator family of `dims` spatial dimensions:
/// functional, out=, backward and backward's grad_input, each with the
/// schema's trailing scales.
#define MAIA_NEAREST_FAMILY(op, mode, Meta, BackwardMeta, PARAMS, ARGS, SCALES)              \
  m.impl(#op, [](const Tensor& x, SymIntArrayRef s PARAMS) {                                 \
    return nearest<meta::Meta>(#op, mode, x, s, SCALES, nullptr ARGS);                       \
  });                                                                                        \
  m.impl(#op ".out", [](const Tensor& x, SymIntArrayRef s PARAMS, Tensor& out) -> Tensor& {  \
    nearest<meta::Meta>(#op, mode, x, s, SCALES, &out ARGS);                                 \
    return out;                                                                              \
  });                                                                                        \
  m.impl(#op "_backward",                                                                    \
         [](const Tensor& g, SymIntArrayRef os, SymIntArrayRef is PARAMS) {                  \
           return nearestBackward<meta::BackwardMeta>(#op "_backward", mode, g, os, is,      \
                                                      SCALES, nullptr ARGS);                 \
         });                                                                                 \
  m.impl(#op "_backward.grad_input",                                                         \
         [](const Tensor& g, SymIntArrayRef os, SymIntArrayRef is PARAMS,                    \
            Tensor& gi) -> Tensor& {                                                         \
           nearestBackward<meta::BackwardMeta>(#op "_backward", mode, g, os, is, SCALES,     \
                                               &gi ARGS);                                    \
           return gi;                                                                        \
         })

/// The same for an interpolating mode (align_corners after the size);
/// CPU_NAME is the CPU kernel its dtype errors name.
#define MAIA_INTERPOLATE_FAMILY(op, mode, CPU_NAME, Meta, BackwardMeta, PARAMS, ARGS, SCALES) \
  m.impl(#op, [](const Tensor& x, SymIntArrayRef s, bool align PARAMS) {                     \
    return interpolate<meta::Meta>(CPU_NAME, mode, x, s, align, SCALES, nullptr ARGS);       \
  });                                                                                        \
  m.impl(#op ".out",                                                                         \
         [](const Tensor& x, SymIntArrayRef s, bool align PARAMS, Tensor& out) -> Tensor& {  \
           interpolate<meta::Meta>(CPU_NAME, mode, x, s, align, SCALES, &out ARGS);          \
           return out;                                                                       \
         });                                                                                 \
  m.impl(#op "_backward", [](const Tensor& g, SymIntArrayRef os, SymIntArrayRef is,          \
                             bool align PARAMS) {                                            \
    return interpolateBackward<meta::BackwardMeta>(#op "_backward", mode, g, os, is, align,  \
                                                   SCALES, nullptr ARGS);                    \
  });                                                                                        \
  m.impl(#op "_backward.grad_input",                                                         \
         [](const Tensor& g, SymIntArrayRef os, SymIntArrayRef is, bool align PARAMS,        \
            Tensor& gi) -> Tensor& {                                                         \
           interpolateBackward<meta::BackwardMeta>(#op "_backward", mode, g, os, is, align,  \
                                                   SCALES, &gi ARGS);                        \
           return gi;                                                                        \
         })

#define MAIA_SCALE_PARAMS_1D , Scale w
#define MAIA_SCALE_ARGS_1D , w
#define MAIA_SCALES_1D (Scales{{}, {}, w})
#define MAIA_SCALE_PARAMS_2D , Scale h, Scale w
#define MAIA_SCALE_ARGS_2D , h, w
#define MAIA_SCALES_2D (Scales{{}, h, w})
#define MAIA_SCALE_PARAMS_3D , Scale d, Scale h, Scale w
#define MAIA_SCALE_ARGS_3D , d, h, w
#define MAIA_SCALES_3D (Scales{d, h, w})

MAIA_NATIVE_KERNELS(m) {
  MAIA_NEAREST_FAMILY(upsample_nearest1d, kNearest, structured_upsample_nearest1d,
                      structured_upsample_nearest1d_backward, MAIA_SCALE_PARAMS_1D,
                      MAIA_SCALE_ARGS_1D, MAIA_SCALES_1D);
  MAIA_NEAREST_FAMILY(upsample_nearest2d, kNearest, structured_upsample_nearest2d,
                      structured_upsample_nearest2d_backward, MAIA_SCALE_PARAMS_2D,
                      MAIA_SCALE_ARGS_2D, MAIA_SCALES_2D);
  MAIA_NEAREST_FAMILY(upsample_nearest3d, kNearest, structured_upsample_nearest3d,
                      structured_upsample_nearest3d_backward, MAIA_SCALE_PARAMS_3D,
                      MAIA_SCALE_ARGS_3D, MAIA_SCALES_3D);
  MAIA_NEAREST_FAMILY(_upsample_nearest_exact1d, kExact, structured__upsample_nearest_exact1d,
                      structured__upsample_nearest_exact1d_backward, MAIA_SCALE_PARAMS_1D,
                      MAIA_SCALE_ARGS_1D, MAIA_SCALES_1D);
  MAIA_NEAREST_FAMILY(_upsample_nearest_exact2d, kExact, structured__upsample_nearest_exact2d,
                      structured__upsample_nearest_exact2d_backward, MAIA_SCALE_PARAMS_2D,
                      MAIA_SCALE_ARGS_2D, MAIA_SCALES_2D);
  MAIA_NEAREST_FAMILY(_upsample_nearest_exact3d, kExact, structured__upsample_nearest_exact3d,
                      structured__upsample_nearest_exact3d_backward, MAIA_SCALE_PARAMS_3D,
                      MAIA_SCALE_ARGS_3D, MAIA_SCALES_3D);
  MAIA_INTERPOLATE_FAMILY(upsample_linear1d, kLinear, "upsample_linear1d",
                          structured_upsample_linear1d, structured_upsample_linear1d_backward,
                          MAIA_SCALE_PARAMS_1D, MAIA_SCALE_ARGS_1D, MAIA_SCALES_1D);
  MAIA_INTERPOLATE_FAMILY(upsample_bilinear2d, kLinear, "upsample_bilinear2d_channels_last",
                          structured_upsample_bilinear2d,
                          structured_upsample_bilinear2d_backward, MAIA_SCALE_PARAMS_2D,
                          MAIA_SCALE_ARGS_2D, MAIA_SCALES_2D);
  MAIA_INTERPOLATE_FAMILY(upsample_trilinear3d, kTrilinear, "compute_indices_weights_linear",
                          structured_upsample_trilinear3d,
                          structured_upsample_trilinear3d_backward, MAIA_SCALE_PARAMS_3D,
                          MAIA_SCALE_ARGS_3D, MAIA_SCALES_3D);
  MAIA_INTERPOLATE_FAMILY(upsample_bicubic2d, kBicubic, "compute_indices_weights_cubic",
                          structured_upsample_bicubic2d, structured_upsample_bicubic2d_backward,
                          MAIA_SCALE_PARAMS_2D, MAIA_SCALE_ARGS_2D, MAIA_SCALES_2D);
}

}  // namespace
}  // namespace torch_maia::ops
