// Trilinear (N, C, D, H, W) and bicubic (N, C, H, W) upsampling and their
// backwards, following the CPU's generic kernels (UpSampleKernel.cpp, over
// UpSample.h's index and weight helpers): weights computed in the compute
// type and stored in the storage type (Rounded<T>), the outermost dimension
// interpolated last, each dimension's taps summed in order; bicubic's
// source indices are not clamped at 0 before the floor (its taps clamp
// instead) and its weights are the cubic convolution with A = -0.75. The
// backwards accumulate weight products times the gradient in the compute
// type, as the CPU's. Results agree with the CPU's to rounding (its
// channels-last kernels order the products differently).
//
// Programs own output rows (forward) or whole (n, c) planes of grad_input
// (backward), as in upsample.h.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include <maia/kernel_abi.h>

#include "nn.h"
#include "pooling.h"
#include "upsample.h"

namespace maia_nn {

/// The four taps of a bicubic interpolation: clamped source indices and
/// the cubic convolution weights (of type W, computed in C).
template <typename W>
struct CubicTaps {
  int64_t index[4];
  W weight[4];
};

template <typename C>
C cubicNear(C x, C a) { return ((a + C(2)) * x - (a + C(3))) * x * x + C(1); }
template <typename C>
C cubicFar(C x, C a) { return ((a * x - C(5) * a) * x + C(8) * a) * x - C(4) * a; }

/// get_cubic_upsample_coefficients: the four tap weights (A = -0.75) at
/// fraction t (bicubic upsampling and grid_sample share them).
template <typename C>
void cubicCoefficients(C t, C (&w)[4]) {
  const C a = C(-0.75);
  w[0] = cubicFar(t + C(1), a);
  w[1] = cubicNear(t, a);
  w[2] = cubicNear(C(1) - t, a);
  w[3] = cubicFar(C(1) - t + C(1), a);
}

/// area_pixel_compute_source_index with cubic = true, guard_index_and_lambda
/// and get_cubic_upsample_coefficients for output o of `out` from `in`.
template <typename W, typename C>
CubicTaps<W> cubicTaps(C scale, int64_t o, int64_t in, bool align_corners) {
  const C real = align_corners ? scale * static_cast<C>(o)
                               : scale * (static_cast<C>(o) + C(0.5)) - C(0.5);
  const int64_t base = std::min(static_cast<int64_t>(floorf(static_cast<float>(real))), in - 1);
  const C t = std::min(std::max(real - static_cast<C>(base), C(0)), C(1));
  C w[4];
  cubicCoefficients(t, w);
  CubicTaps<W> taps;
  for (int k = 0; k < 4; ++k) {
    taps.index[k] = std::clamp<int64_t>(base - 1 + k, 0, in - 1);
    taps.weight[k] = static_cast<W>(w[k]);
  }
  return taps;
}

// args: out (N, C, OH, OW), in (N, C, H, W), scale_h, scale_w (of the
// compute type), align_corners.
template <typename T>
void upsampleBicubic2d(void* const* args, const maia_grid_t* grid) {
  using C = compute_t<T>;
  const auto& out = memref<T, 4>(args, 0);
  const auto& in = memref<T, 4>(args, 1);
  const auto scale_h = static_cast<C>(scalar<double>(args, 2));
  const auto scale_w = static_cast<C>(scalar<double>(args, 3));
  const bool align = scalar<int64_t>(args, 4) != 0;
  const int64_t channels = out.sizes[1], oh = out.sizes[2], ow = out.sizes[3];
  const int64_t h = in.sizes[2], w = in.sizes[3];
  auto slice = maia_kernel::programSlice(grid, out.sizes[0] * channels * oh);
  for (int64_t row = slice.begin; row < slice.end; ++row) {
    const auto [n, c, oy] = rowIndex(out, row, channels, oh);
    const auto ty = cubicTaps<Rounded<T>>(scale_h, oy, h, align);
    for (int64_t ox = 0; ox < ow; ++ox) {
      const auto tx = cubicTaps<Rounded<T>>(scale_w, ox, w, align);
      C value = 0;
      for (int j = 0; j < 4; ++j) {
        C line = 0;
        for (int i = 0; i < 4; ++i)
          line += load(at4(in, n, c, ty.index[j], tx.index[i])) * static_cast<C>(tx.weight[i]);
        value += line * static_cast<C>(ty.weight[j]);
      }
      at4(out, n, c, oy, ox) = store<T>(value);
    }
  }
}

// args: grad_input (N, C, H, W; compute type), grad_output (N, C, OH, OW),
// scale_h, scale_w (of the compute type), align_corners.
template <typename T>
void upsampleBicubic2dBackward(void* const* args, const maia_grid_t* grid) {
  using C = compute_t<T>;
  const auto& gi = memref<C, 4>(args, 0);
  const auto& go = memref<T, 4>(args, 1);
  const auto scale_h = static_cast<C>(scalar<double>(args, 2));
  const auto scale_w = static_cast<C>(scalar<double>(args, 3));
  const bool align = scalar<int64_t>(args, 4) != 0;
  const int64_t h = gi.sizes[2], w = gi.sizes[3];
  scatterIntoPlanes(gi, go, grid, [&](int64_t n, int64_t c, int64_t oy, int64_t ox, C g) {
    const auto ty = cubicTaps<C>(scale_h, oy, h, align);
    const auto tx = cubicTaps<C>(scale_w, ox, w, align);
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j)
        at4(gi, n, c, ty.index[j], tx.index[i]) += g * ty.weight[j] * tx.weight[i];
  });
}

// args: out (N, C, OD, OH, OW), in (N, C, D, H, W), scale_d, scale_h,
// scale_w (of the compute type), align_corners.
template <typename T>
void upsampleTrilinear3d(void* const* args, const maia_grid_t* grid) {
  using C = compute_t<T>;
  using W = Rounded<T>;
  const auto& out = memref<T, 5>(args, 0);
  const auto& in = memref<T, 5>(args, 1);
  const auto scale_d = static_cast<C>(scalar<double>(args, 2));
  const auto scale_h = static_cast<C>(scalar<double>(args, 3));
  const auto scale_w = static_cast<C>(scalar<double>(args, 4));
  const bool align = scalar<int64_t>(args, 5) != 0;
  const int64_t channels = out.sizes[1], od = out.sizes[2], oh = out.sizes[3];
  const int64_t ow = out.sizes[4], d = in.sizes[2], h = in.sizes[3], w = in.sizes[4];
  auto slice = maia_kernel::programSlice(grid, out.sizes[0] * channels * od * oh);
  for (int64_t row = slice.begin; row < slice.end; ++row) {
    const int64_t oy = row % oh, oz = row / oh % od, c = row / oh / od % channels;
    const int64_t n = row / oh / od / channels;
    const auto tz = linearTap<W>(scale_d, oz, d, od, align);
    const auto ty = linearTap<W>(scale_h, oy, h, oh, align);
    for (int64_t ox = 0; ox < ow; ++ox) {
      const auto tx = linearTap<W>(scale_w, ox, w, ow, align);
      auto plane = [&](int64_t z) {
        const auto line = [&](int64_t y) {
          return load(at5(in, n, c, z, y, tx.i0)) * static_cast<C>(tx.w0) +
                 load(at5(in, n, c, z, y, tx.i1)) * static_cast<C>(tx.w1);
        };
        return line(ty.i0) * static_cast<C>(ty.w0) + line(ty.i1) * static_cast<C>(ty.w1);
      };
      at5(out, n, c, oz, oy, ox) =
          store<T>(plane(tz.i0) * static_cast<C>(tz.w0) + plane(tz.i1) * static_cast<C>(tz.w1));
    }
  }
}

// args: grad_input (N, C, D, H, W; compute type), grad_output (N, C, OD,
// OH, OW), scale_d, scale_h, scale_w (of the compute type), align_corners.
template <typename T>
void upsampleTrilinear3dBackward(void* const* args, const maia_grid_t* grid) {
  using C = compute_t<T>;
  const auto& gi = memref<C, 5>(args, 0);
  const auto& go = memref<T, 5>(args, 1);
  const auto scale_d = static_cast<C>(scalar<double>(args, 2));
  const auto scale_h = static_cast<C>(scalar<double>(args, 3));
  const auto scale_w = static_cast<C>(scalar<double>(args, 4));
  const bool align = scalar<int64_t>(args, 5) != 0;
  const int64_t d = gi.sizes[2], h = gi.sizes[3], w = gi.sizes[4];
  const int64_t od = go.sizes[2], oh = go.sizes[3], ow = go.sizes[4];
  scatterIntoVolumes(gi, go, grid,
                     [&](int64_t n, int64_t c, int64_t oz, int64_t oy, int64_t ox, C g) {
    const auto tz = linearTap<C>(scale_d, oz, d, od, align);
    const auto ty = linearTap<C>(scale_h, oy, h, oh, align);
    const auto tx = linearTap<C>(scale_w, ox, w, ow, align);
    const int64_t zs[2] = {tz.i0, tz.i1}, ys[2] = {ty.i0, ty.i1}, xs[2] = {tx.i0, tx.i1};
    const C wz[2] = {tz.w0, tz.w1}, wy[2] = {ty.w0, ty.w1}, wx[2] = {tx.w0, tx.w1};
    for (int a = 0; a < 2; ++a)
      for (int b = 0; b < 2; ++b)
        for (int e = 0; e < 2; ++e) at5(gi, n, c, zs[a], ys[b], xs[e]) += wz[a] * wy[b] * wx[e] * g;
  });
}

}  // namespace maia_nn
