// Upsampling over memrefs of any strides: nearest and nearest-exact over
// (N, C, D, H, W), bilinear (align_corners either way) over (N, C, H, W),
// and their backwards. Lower-dimensional upsampling is the same with D (and
// H) = 1, which the host adds: a size kept copies its index through
// unchanged in both modes.
// Templated over the storage type, instantiated by gen_nn_kernels.py.
//
// The source indices and weights are PyTorch's CPU ones (UpSample.h:
// nearest_idx, nearest_exact_idx, area_pixel_compute_source_index,
// guard_index_and_lambda): the same float arithmetic, the scales computed
// on the host in the same type, so nearest results equal the CPU's bit for
// bit. Bilinear computes in the compute type (float for float16/bfloat16)
// and follows whichever of its two kernels the CPU would run for the shape
// (the host decides): the generic one (weights rounded to the storage type,
// each of the two source rows interpolated first) or the channels-last one
// (products of the weights, its vector arithmetic for the channels its
// vectors cover and its scalar loop for the rest).
//
// Forward kernels: programs own output rows (n, c, [oz,] oy). Backward kernels
// scatter into planes: a program owns whole (n, c) planes of grad_input
// (of the compute type, so float16/bfloat16 accumulate in float as the
// CPU's do) and adds each output's gradient in output order.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include <immintrin.h>

#include <maia/kernel_abi.h>

#include "nn.h"
#include "pooling.h"

namespace maia_nn {

/// The source index of output o of nearest (exact = false) or nearest-exact
/// upsampling from `in` to `out` elements, with the CPU's float scale.
inline int64_t nearestSource(int64_t o, int64_t in, int64_t out, float scale, bool exact) {
  if (exact) {
    // (o + 0.5) is a double, the product too; floorf rounds it to float first.
    return std::min(static_cast<int64_t>(floorf(static_cast<float>((o + 0.5) * scale))),
                    in - 1);
  }
  if (out == in) return o;
  if (out == 2 * in) return o >> 1;
  return std::min(static_cast<int64_t>(floorf(static_cast<float>(o) * scale)), in - 1);
}

/// The float scales of nearest upsampling (depth, height, width) and its mode.
struct NearestScales {
  float d, h, w;
  bool exact;

  static NearestScales from(void* const* args, int first) {
    return {static_cast<float>(scalar<double>(args, first)),
            static_cast<float>(scalar<double>(args, first + 1)),
            static_cast<float>(scalar<double>(args, first + 2)),
            scalar<int64_t>(args, first + 3) != 0};
  }
};

// args: out (N, C, OD, OH, OW), in (N, C, D, H, W), scale_d, scale_h,
// scale_w (float), exact. 1-D and 2-D upsampling have D (and H) = 1.
template <typename T>
void upsampleNearest(void* const* args, const maia_grid_t* grid) {
  const auto& out = memref<T, 5>(args, 0);
  const auto& in = memref<T, 5>(args, 1);
  const NearestScales s = NearestScales::from(args, 2);
  const int64_t channels = out.sizes[1], od = out.sizes[2], oh = out.sizes[3];
  const int64_t ow = out.sizes[4], d = in.sizes[2], h = in.sizes[3], w = in.sizes[4];
  auto slice = maia_kernel::programSlice(grid, out.sizes[0] * channels * od * oh);
  for (int64_t row = slice.begin; row < slice.end; ++row) {
    const int64_t oy = row % oh, oz = row / oh % od, c = row / oh / od % channels;
    const int64_t n = row / oh / od / channels;
    const int64_t z = nearestSource(oz, d, od, s.d, s.exact);
    const int64_t y = nearestSource(oy, h, oh, s.h, s.exact);
    T* dst = &at5(out, n, c, oz, oy, 0);
    const T* src = &at5(in, n, c, z, y, 0);
    const int64_t so = out.strides[4], si = in.strides[4];
    for (int64_t ox = 0; ox < ow; ++ox)
      dst[ox * so] = src[nearestSource(ox, w, ow, s.w, s.exact) * si];
  }
}

// args: grad_input (N, C, D, H, W; compute type), grad_output (N, C, OD,
// OH, OW), scale_d, scale_h, scale_w (float), exact.
/// The backward skeleton of 3-D upsampling: programs own whole (n, c)
/// volumes of grad_input (compute type, zeroed first); each output
/// (oz, oy, ox) adds its taps through scatter(n, c, oz, oy, ox, gradient).
template <typename T, typename Scatter>
void scatterIntoVolumes(const MemRef<compute_t<T>, 5>& gi, const MemRef<T, 5>& go,
                        const maia_grid_t* grid, Scatter scatter) {
  using C = compute_t<T>;
  const int64_t channels = gi.sizes[1];
  auto slice = maia_kernel::programSlice(grid, gi.sizes[0] * channels);
  for (int64_t plane = slice.begin; plane < slice.end; ++plane) {
    const int64_t n = plane / channels, c = plane % channels;
    for (int64_t z = 0; z < gi.sizes[2]; ++z)
      for (int64_t y = 0; y < gi.sizes[3]; ++y)
        for (int64_t x = 0; x < gi.sizes[4]; ++x) at5(gi, n, c, z, y, x) = C(0);
    for (int64_t oz = 0; oz < go.sizes[2]; ++oz)
      for (int64_t oy = 0; oy < go.sizes[3]; ++oy)
        for (int64_t ox = 0; ox < go.sizes[4]; ++ox)
          scatter(n, c, oz, oy, ox, static_cast<C>(load(at5(go, n, c, oz, oy, ox))));
  }
}

template <typename T>
void upsampleNearestBackward(void* const* args, const maia_grid_t* grid) {
  using C = compute_t<T>;
  const auto& gi = memref<C, 5>(args, 0);
  const auto& go = memref<T, 5>(args, 1);
  const NearestScales s = NearestScales::from(args, 2);
  const int64_t d = gi.sizes[2], h = gi.sizes[3], w = gi.sizes[4];
  const int64_t od = go.sizes[2], oh = go.sizes[3], ow = go.sizes[4];
  scatterIntoVolumes(gi, go, grid,
                     [&](int64_t n, int64_t c, int64_t oz, int64_t oy, int64_t ox, C g) {
                       at5(gi, n, c, nearestSource(oz, d, od, s.d, s.exact),
                           nearestSource(oy, h, oh, s.h, s.exact),
                           nearestSource(ox, w, ow, s.w, s.exact)) += g;
                     });
}

/// The two source indices of a linear interpolation and their weights.
template <typename W>
struct LinearTap {
  int64_t i0, i1;
  W w0, w1;
};

/// PyTorch's compute_source_index_and_lambda: output o of `out` from `in`
/// elements with scale (of the compute type C). The weights are of type W:
/// the storage type where the CPU stores them so (the generic forward
/// kernel), else C.
template <typename W, typename C>
LinearTap<W> linearTap(C scale, int64_t o, int64_t in, int64_t out, bool align_corners) {
  if (out == in) return {o, o, W(1), W(0)};
  C real = align_corners ? scale * static_cast<C>(o)
                         : scale * (static_cast<C>(o) + static_cast<C>(0.5)) -
                               static_cast<C>(0.5);
  if (!align_corners && real < C(0)) real = C(0);
  const int64_t i0 = std::min(static_cast<int64_t>(floorf(static_cast<float>(real))), in - 1);
  const C lambda = std::min(std::max(real - static_cast<C>(i0), C(0)), C(1));
  const W w1 = static_cast<W>(lambda);
  const W w0 = static_cast<W>(C(1) - static_cast<C>(w1));
  return {i0, i0 + (i0 < in - 1 ? 1 : 0), w0, w1};
}

/// A weight of type C rounded through storage type T (float16/bfloat16).
template <typename T>
struct Rounded {
  using C = compute_t<T>;
  C value;
  Rounded() = default;
  explicit Rounded(C v) : value(load(store<T>(v))) {}
  explicit operator C() const { return value; }
};

/// a * b rounded on its own: the CPU's vector kernels multiply and add in
/// separate instructions, which the compiler must not fuse here either.
inline float separateMul(float a, float b) {
  return _mm_cvtss_f32(_mm_mul_ss(_mm_set_ss(a), _mm_set_ss(b)));
}
inline double separateMul(double a, double b) {
  return _mm_cvtsd_f64(_mm_mul_sd(_mm_set_sd(a), _mm_set_sd(b)));
}

/// One channel in the vector loop of the CPU's channels-last bilinear
/// kernel: x0 * w0 + (x1 * w1 + (x2 * w2 + x3 * w3)) in the storage type's
/// vector arithmetic, where float16/bfloat16 round the broadcast weights and
/// every product and sum.
template <typename T>
compute_t<T> vectorLane(const T* x[4], const compute_t<T> w[4]) {
  using C = compute_t<T>;
  if constexpr (std::is_same_v<C, T>) {
    C p[4];
    for (int k = 0; k < 4; ++k) p[k] = separateMul(load(*x[k]), w[k]);
    return p[0] + (p[1] + (p[2] + p[3]));
  } else {
    auto round = [](C v) { return load(store<T>(v)); };
    C p[4];
    for (int k = 0; k < 4; ++k) p[k] = round(load(*x[k]) * round(w[k]));
    return round(p[0] + round(p[1] + round(p[2] + p[3])));
  }
}

/// The CPU's generic kernel for one output: weights of the storage type,
/// each row of the two source rows interpolated first.
template <typename T>
compute_t<T> genericBilinear(const MemRef<T, 4>& in, int64_t n, int64_t c,
                             const LinearTap<Rounded<T>>& ty,
                             const LinearTap<Rounded<T>>& tx) {
  using C = compute_t<T>;
  const C wx0 = static_cast<C>(tx.w0), wx1 = static_cast<C>(tx.w1);
  const C top = load(at4(in, n, c, ty.i0, tx.i0)) * wx0 + load(at4(in, n, c, ty.i0, tx.i1)) * wx1;
  const C bottom =
      load(at4(in, n, c, ty.i1, tx.i0)) * wx0 + load(at4(in, n, c, ty.i1, tx.i1)) * wx1;
  return top * static_cast<C>(ty.w0) + bottom * static_cast<C>(ty.w1);
}

// args: out (N, C, OH, OW), in (N, C, H, W), scale_h, scale_w (of the
// compute type), align_corners, vector (0: the CPU's generic kernel; -1:
// the same for a 1-D operator, whose H = 1 is not interpolated at all (an
// infinity times a zero weight would be NaN); else its channels-last
// kernel, whose vectors hold `vector` elements: the channels below
// C - C % vector take its vector arithmetic, the rest its scalar loop). The
// host picks the kernel the CPU would.
template <typename T>
void upsampleBilinear2d(void* const* args, const maia_grid_t* grid) {
  using C = compute_t<T>;
  const auto& out = memref<T, 4>(args, 0);
  const auto& in = memref<T, 4>(args, 1);
  const auto scale_h = static_cast<C>(scalar<double>(args, 2));
  const auto scale_w = static_cast<C>(scalar<double>(args, 3));
  const bool align = scalar<int64_t>(args, 4) != 0;
  const int64_t vector = scalar<int64_t>(args, 5);
  const int64_t channels = out.sizes[1], oh = out.sizes[2], ow = out.sizes[3];
  const int64_t h = in.sizes[2], w = in.sizes[3];
  const int64_t vector_channels = vector <= 0 ? 0 : channels - channels % vector;
  auto slice = maia_kernel::programSlice(grid, out.sizes[0] * channels * oh);
  for (int64_t row = slice.begin; row < slice.end; ++row) {
    const auto [n, c, oy] = rowIndex(out, row, channels, oh);
    if (vector < 0) {  // 1-D: the width only
      for (int64_t ox = 0; ox < ow; ++ox) {
        const auto tx = linearTap<Rounded<T>>(scale_w, ox, w, ow, align);
        at4(out, n, c, 0, ox) = store<T>(load(at4(in, n, c, 0, tx.i0)) * static_cast<C>(tx.w0) +
                                         load(at4(in, n, c, 0, tx.i1)) * static_cast<C>(tx.w1));
      }
      continue;
    }
    if (vector == 0) {
      const auto ty = linearTap<Rounded<T>>(scale_h, oy, h, oh, align);
      for (int64_t ox = 0; ox < ow; ++ox) {
        const auto tx = linearTap<Rounded<T>>(scale_w, ox, w, ow, align);
        at4(out, n, c, oy, ox) = store<T>(genericBilinear(in, n, c, ty, tx));
      }
      continue;
    }
    const auto ty = linearTap<C>(scale_h, oy, h, oh, align);
    for (int64_t ox = 0; ox < ow; ++ox) {
      const auto tx = linearTap<C>(scale_w, ox, w, ow, align);
      const C weights[4] = {ty.w0 * tx.w0, ty.w0 * tx.w1, ty.w1 * tx.w0, ty.w1 * tx.w1};
      const T* x[4] = {&at4(in, n, c, ty.i0, tx.i0), &at4(in, n, c, ty.i0, tx.i1),
                       &at4(in, n, c, ty.i1, tx.i0), &at4(in, n, c, ty.i1, tx.i1)};
      C value;
      if (c < vector_channels) {
        value = vectorLane<T>(x, weights);
      } else {
        value = load(*x[0]) * weights[0] + load(*x[1]) * weights[1] +
                load(*x[2]) * weights[2] + load(*x[3]) * weights[3];
      }
      at4(out, n, c, oy, ox) = store<T>(value);
    }
  }
}

/// The backward skeleton of 2-D interpolation: programs own whole (n, c)
/// planes of grad_input (compute type, zeroed first); each output (oy, ox)
/// of the plane adds its taps through scatter(n, c, oy, ox, gradient).
template <typename T, typename Scatter>
void scatterIntoPlanes(const MemRef<compute_t<T>, 4>& gi, const MemRef<T, 4>& go,
                       const maia_grid_t* grid, Scatter scatter) {
  using C = compute_t<T>;
  const int64_t channels = gi.sizes[1], h = gi.sizes[2], w = gi.sizes[3];
  auto slice = maia_kernel::programSlice(grid, gi.sizes[0] * channels);
  for (int64_t plane = slice.begin; plane < slice.end; ++plane) {
    const int64_t n = plane / channels, c = plane % channels;
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x) at4(gi, n, c, y, x) = C(0);
    for (int64_t oy = 0; oy < go.sizes[2]; ++oy)
      for (int64_t ox = 0; ox < go.sizes[3]; ++ox)
        scatter(n, c, oy, ox, static_cast<C>(load(at4(go, n, c, oy, ox))));
  }
}

// args: grad_input (N, C, H, W; compute type), grad_output (N, C, OH, OW),
// scale_h, scale_w (of the compute type), align_corners, one_d (a 1-D
// operator: no height taps, so a zero height weight adds no 0 * inf).
template <typename T>
void upsampleBilinear2dBackward(void* const* args, const maia_grid_t* grid) {
  using C = compute_t<T>;
  const auto& gi = memref<C, 4>(args, 0);
  const auto& go = memref<T, 4>(args, 1);
  const auto scale_h = static_cast<C>(scalar<double>(args, 2));
  const auto scale_w = static_cast<C>(scalar<double>(args, 3));
  const bool align = scalar<int64_t>(args, 4) != 0;
  const bool one_d = scalar<int64_t>(args, 5) != 0;
  const int64_t h = gi.sizes[2], w = gi.sizes[3], oh = go.sizes[2], ow = go.sizes[3];
  scatterIntoPlanes(gi, go, grid, [&](int64_t n, int64_t c, int64_t oy, int64_t ox, C g) {
    const auto tx = linearTap<C>(scale_w, ox, w, ow, align);
    if (one_d) {
      at4(gi, n, c, 0, tx.i0) += tx.w0 * g;
      at4(gi, n, c, 0, tx.i1) += tx.w1 * g;
      return;
    }
    const auto ty = linearTap<C>(scale_h, oy, h, oh, align);
    at4(gi, n, c, ty.i0, tx.i0) += ty.w0 * tx.w0 * g;
    at4(gi, n, c, ty.i0, tx.i1) += ty.w0 * tx.w1 * g;
    at4(gi, n, c, ty.i1, tx.i0) += ty.w1 * tx.w0 * g;
    at4(gi, n, c, ty.i1, tx.i1) += ty.w1 * tx.w1 * g;
  });
}

}  // namespace maia_nn
