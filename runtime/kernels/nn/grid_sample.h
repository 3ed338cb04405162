// grid_sampler_2d/3d and their backwards: the input sampled at the grid's
// normalized coordinates in [-1, 1], as PyTorch defines it (GridSampler.h):
// unnormalized by align_corners, padded by zeros (out-of-bounds taps add
// nothing), border (clipped) or reflection (reflected, then clipped);
// bilinear (2^D corners, weights the products of the distances to the
// opposite corner), nearest (round half to even) or, in 2-D, bicubic (the
// unpadded source, A = -0.75 coefficients, each tap padded and truncated
// on its own). The backward scatters gradient times weight into the input
// gradient and accumulates the grid gradient from the weights' derivatives
// times the unnormalize/clip/reflect multipliers.
//
// The forward computes float16/bfloat16 with every step rounded to their
// type (GridCompute: the CPU's fallback kernel for them works in scalar_t);
// the backward computes in float (their input gradient accumulates in a
// float buffer). Memrefs are rank 5 (N, C, D, H, W) for
// input/output and (N, D, H, W, dims) for the grid; 2-D operators have
// D = 1 and a 2-component grid. Forward programs own output rows (n, d, h),
// backward programs own whole batch entries n (grad_input of n is only
// touched by n's outputs).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include <maia/kernel_abi.h>

#include "nn.h"
#include "pooling.h"
#include "upsample_trilinear_bicubic.h"

namespace maia_nn {

// Unqualified, so StorageArithmetic's own versions are found too.
using std::floor;
using std::fmod;
using std::nearbyint;
using maia_eager::StorageArithmetic;

/// The forward's arithmetic: float16/bfloat16 round every step to their
/// type, as the CPU's fallback kernel computing in scalar_t (so the same
/// pixels are picked and weighted); float32/float64 compute in themselves.
template <typename T>
using GridCompute =
    std::conditional_t<maia_eager::kIsReducedFloat<T>, StorageArithmetic<T>, compute_t<T>>;

enum GridMode : int64_t { kGridBilinear = 0, kGridNearest = 1, kGridBicubic = 2 };
enum GridPadding : int64_t { kPadZeros = 0, kPadBorder = 1, kPadReflection = 2 };

/// Coordinate, and the derivative of the source coordinate with respect to
/// the normalized one (the product of the steps' multipliers).
template <typename C>
struct SourceCoordinate {
  C value, slope;
};

template <typename C>
C unnormalize(C coord, int64_t size, bool align, C* slope) {
  if (align) {
    *slope = static_cast<C>(size - 1) / C(2);
    return ((coord + C(1)) / C(2)) * static_cast<C>(size - 1);
  }
  *slope = static_cast<C>(size) / C(2);
  return ((coord + C(1)) * static_cast<C>(size) - C(1)) / C(2);
}

template <typename C>
C clipCoordinate(C in, int64_t size, C* slope) {
  const C high = static_cast<C>(size - 1);
  if (in <= C(0)) {
    *slope = C(0);
    return C(0);
  }
  if (in >= high) {
    *slope = C(0);
    return high;
  }
  *slope = C(1);
  return in;
}

/// Reflection of `in` into [twice_low / 2, twice_high / 2].
template <typename C>
C reflectCoordinate(C in, int64_t twice_low, int64_t twice_high, C* slope) {
  if (twice_low == twice_high) {
    *slope = C(0);
    return C(0);
  }
  const C low = static_cast<C>(twice_low) / C(2);
  const C span = static_cast<C>(twice_high - twice_low) / C(2);
  in = in - low;
  C sign = C(1);
  if (in < C(0)) {
    sign = C(-1);
    in = -in;
  }
  const C extra = fmod(in, span);
  const int flips = static_cast<int>(floor(in / span));
  if (flips % 2 == 0) {
    *slope = sign;
    return extra + low;
  }
  *slope = -sign;
  return span - extra + low;
}

/// The padding step on an unnormalized coordinate.
template <typename C>
C padCoordinate(C coord, int64_t size, int64_t padding, bool align, C* slope) {
  *slope = C(1);
  if (padding == kPadBorder) return clipCoordinate(coord, size, slope);
  if (padding == kPadReflection) {
    C reflect_slope, clip_slope;
    coord = align ? reflectCoordinate(coord, 0, 2 * (size - 1), &reflect_slope)
                  : reflectCoordinate(coord, -1, 2 * size - 1, &reflect_slope);
    coord = clipCoordinate(coord, size, &clip_slope);
    *slope = reflect_slope * clip_slope;
  }
  return coord;
}

template <typename C>
SourceCoordinate<C> sourceCoordinate(C coord, int64_t size, int64_t padding, bool align) {
  C unnormalize_slope, pad_slope;
  const C value = padCoordinate(unnormalize(coord, size, align, &unnormalize_slope), size,
                                padding, align, &pad_slope);
  return {value, unnormalize_slope * pad_slope};
}

/// Bilinear corners of one point: for corner bits k (bit d: the high side
/// of dimension d), the integer position and the weight factors.
template <typename C>
struct Corners {
  int64_t low[3];
  C to_high[3], from_low[3];  // high - x and x - low per dimension

  Corners(const C (&x)[3], int64_t dims) {
    for (int64_t d = 0; d < 3; ++d) {
      if (d < 3 - dims) {  // the missing depth of 2-D: one plane, weight 1
        low[d] = 0;
        to_high[d] = C(1);
        from_low[d] = C(0);
        continue;
      }
      const C floor_x = floor(x[d]);
      low[d] = static_cast<int64_t>(floor_x);
      to_high[d] = floor_x + C(1) - x[d];
      from_low[d] = x[d] - floor_x;
    }
  }
  int64_t position(int k, int64_t d) const { return low[d] + ((k >> (2 - d)) & 1); }
  C factor(int k, int64_t d) const { return ((k >> (2 - d)) & 1) ? from_low[d] : to_high[d]; }
  // (x * y) * z, the CPU's association (it matters when rounding each step).
  C weight(int k) const { return factor(k, 2) * factor(k, 1) * factor(k, 0); }
  bool inside(int k, const int64_t (&size)[3]) const {
    for (int64_t d = 0; d < 3; ++d) {
      const int64_t p = position(k, d);
      if (p < 0 || p >= size[d]) return false;
    }
    return true;
  }
  int cornerCount(int64_t dims) const { return dims == 3 ? 8 : 4; }
};

/// The tap of bicubic: coordinate padded on its own, truncated, in bounds.
template <typename C>
bool cubicTap(C coord, int64_t size, int64_t padding, bool align, int64_t* index) {
  C slope;
  const int64_t i = static_cast<int64_t>(padCoordinate(coord, size, padding, align, &slope));
  *index = i;
  return i >= 0 && i < size;
}

/// The derivatives of the cubic coefficients with respect to t.
template <typename C>
void cubicCoefficientSlopes(C t, C (&slopes)[4]) {
  const C a = C(-0.75);
  C x = C(-1) - t;
  slopes[0] = (C(-3) * a * x - C(10) * a) * x - C(8) * a;
  x = -t;
  slopes[1] = (C(-3) * (a + C(2)) * x - C(2) * (a + C(3))) * x;
  x = C(1) - t;
  slopes[2] = (C(3) * (a + C(2)) * x - C(2) * (a + C(3))) * x;
  x = C(2) - t;
  slopes[3] = (C(3) * a * x - C(10) * a) * x + C(8) * a;
}

// args: out (N, C, OD, OH, OW), input (N, C, D, H, W), grid (N, OD, OH,
// OW, dims), mode, padding, align_corners.
template <typename T>
void gridSample(void* const* args, const maia_grid_t* grid_info) {
  using C = GridCompute<T>;
  const auto& out = memref<T, 5>(args, 0);
  const auto& in = memref<T, 5>(args, 1);
  const auto& grid = memref<T, 5>(args, 2);
  const int64_t mode = scalar<int64_t>(args, 3);
  const int64_t padding = scalar<int64_t>(args, 4);
  const bool align = scalar<int64_t>(args, 5) != 0;
  const int64_t dims = grid.sizes[4];
  const int64_t size[3] = {in.sizes[2], in.sizes[3], in.sizes[4]};
  const int64_t channels = out.sizes[1], od = out.sizes[2], oh = out.sizes[3];
  const int64_t ow = out.sizes[4];
  auto slice = maia_kernel::programSlice(grid_info, out.sizes[0] * od * oh);
  for (int64_t row = slice.begin; row < slice.end; ++row) {
    const int64_t y = row % oh, z = row / oh % od, n = row / oh / od;
    for (int64_t x = 0; x < ow; ++x) {
      // Grid components are (x, y[, z]); coordinates here are (z, y, x).
      C coord[3] = {C(0), C(0), C(0)};
      for (int64_t d = 0; d < dims; ++d)
        coord[2 - d] = static_cast<C>(load(at5(grid, n, z, y, x, d)));
      if (mode == kGridBicubic) {
        C slope;
        const C ix = unnormalize(coord[2], size[2], align, &slope);
        const C iy = unnormalize(coord[1], size[1], align, &slope);
        const C fx = floor(ix), fy = floor(iy);
        C wx[4], wy[4];
        cubicCoefficients(ix - fx, wx);
        cubicCoefficients(iy - fy, wy);
        for (int64_t c = 0; c < channels; ++c) {
          C value = 0;
          for (int i = 0; i < 4; ++i) {
            C line = 0;
            int64_t ty;
            const bool row_in = cubicTap(fy - C(1) + C(i), size[1], padding, align, &ty);
            for (int j = 0; j < 4; ++j) {
              int64_t tx;
              const bool col_in = cubicTap(fx - C(1) + C(j), size[2], padding, align, &tx);
              const C v =
                  row_in && col_in ? static_cast<C>(load(at5(in, n, c, 0, ty, tx))) : C(0);
              line += v * wx[j];
            }
            value += line * wy[i];
          }
          at5(out, n, c, z, y, x) = store<T>(value);
        }
        continue;
      }
      C source[3] = {C(0), C(0), C(0)};
      for (int64_t d = 3 - dims; d < 3; ++d)
        source[d] = sourceCoordinate(coord[d], size[d], padding, align).value;
      if (mode == kGridNearest) {
        int64_t index[3];
        bool inside = true;
        for (int64_t d = 0; d < 3; ++d) {
          index[d] = static_cast<int64_t>(nearbyint(source[d]));
          inside = inside && index[d] >= 0 && index[d] < size[d];
        }
        for (int64_t c = 0; c < channels; ++c)
          at5(out, n, c, z, y, x) =
              inside ? at5(in, n, c, index[0], index[1], index[2]) : store<T>(C(0));
        continue;
      }
      const Corners<C> corners(source, dims);
      for (int64_t c = 0; c < channels; ++c) {
        C value = 0;
        for (int k = 0; k < corners.cornerCount(dims); ++k) {
          if (!corners.inside(k, size)) continue;
          value += static_cast<C>(load(at5(in, n, c, corners.position(k, 0),
                                          corners.position(k, 1), corners.position(k, 2)))) *
                   corners.weight(k);
        }
        at5(out, n, c, z, y, x) = store<T>(value);
      }
    }
  }
}

// args: grad_input (N, C, D, H, W; compute type), grad_grid (N, OD, OH, OW,
// dims), grad_output (N, C, OD, OH, OW), input, grid, mode, padding,
// align_corners, input_grad (0: grad_input is not written).
template <typename T>
void gridSampleBackward(void* const* args, const maia_grid_t* grid_info) {
  using C = compute_t<T>;
  const auto& grad_in = memref<C, 5>(args, 0);
  const auto& grad_grid = memref<T, 5>(args, 1);
  const auto& grad_out = memref<T, 5>(args, 2);
  const auto& in = memref<T, 5>(args, 3);
  const auto& grid = memref<T, 5>(args, 4);
  const int64_t mode = scalar<int64_t>(args, 5);
  const int64_t padding = scalar<int64_t>(args, 6);
  const bool align = scalar<int64_t>(args, 7) != 0;
  const bool input_grad = scalar<int64_t>(args, 8) != 0;
  const int64_t dims = grid.sizes[4];
  const int64_t size[3] = {in.sizes[2], in.sizes[3], in.sizes[4]};
  const int64_t channels = grad_out.sizes[1], od = grad_out.sizes[2];
  const int64_t oh = grad_out.sizes[3], ow = grad_out.sizes[4];
  auto slice = maia_kernel::programSlice(grid_info, grad_out.sizes[0]);
  for (int64_t n = slice.begin; n < slice.end; ++n) {
    if (input_grad)
      for (int64_t c = 0; c < channels; ++c)
        for (int64_t a = 0; a < size[0]; ++a)
          for (int64_t b = 0; b < size[1]; ++b)
            for (int64_t e = 0; e < size[2]; ++e) at5(grad_in, n, c, a, b, e) = C(0);
    for (int64_t z = 0; z < od; ++z)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t x = 0; x < ow; ++x) {
          C coord[3] = {C(0), C(0), C(0)};
          for (int64_t d = 0; d < dims; ++d)
            coord[2 - d] = static_cast<C>(load(at5(grid, n, z, y, x, d)));
          C gradient[3] = {C(0), C(0), C(0)};  // with respect to (z, y, x) sources
          C slope[3] = {C(0), C(0), C(0)};
          if (mode == kGridBicubic) {
            const C ix = unnormalize(coord[2], size[2], align, &slope[2]);
            const C iy = unnormalize(coord[1], size[1], align, &slope[1]);
            const C fx = floor(ix), fy = floor(iy);
            C wx[4], wy[4], dwx[4], dwy[4];
            cubicCoefficients(ix - fx, wx);
            cubicCoefficients(iy - fy, wy);
            cubicCoefficientSlopes(ix - fx, dwx);
            cubicCoefficientSlopes(iy - fy, dwy);
            for (int64_t c = 0; c < channels; ++c) {
              const C g = static_cast<C>(load(at5(grad_out, n, c, z, y, x)));
              for (int i = 0; i < 4; ++i) {  // width taps
                int64_t tx;
                const bool col_in = cubicTap(fx - C(1) + C(i), size[2], padding, align, &tx);
                for (int j = 0; j < 4; ++j) {  // height taps
                  int64_t ty;
                  const bool row_in = cubicTap(fy - C(1) + C(j), size[1], padding, align, &ty);
                  if (!(row_in && col_in)) continue;
                  if (input_grad) at5(grad_in, n, c, 0, ty, tx) += g * wx[i] * wy[j];
                  const C v = static_cast<C>(load(at5(in, n, c, 0, ty, tx)));
                  gradient[2] -= v * dwx[i] * wy[j] * g;
                  gradient[1] -= v * dwy[j] * wx[i] * g;
                }
              }
            }
          } else {
            C source[3] = {C(0), C(0), C(0)};
            for (int64_t d = 3 - dims; d < 3; ++d) {
              const auto s = sourceCoordinate(coord[d], size[d], padding, align);
              source[d] = s.value;
              slope[d] = s.slope;
            }
            if (mode == kGridNearest) {
              if (input_grad) {
                int64_t index[3];
                bool inside = true;
                for (int64_t d = 0; d < 3; ++d) {
                  index[d] = static_cast<int64_t>(nearbyint(source[d]));
                  inside = inside && index[d] >= 0 && index[d] < size[d];
                }
                if (inside)
                  for (int64_t c = 0; c < channels; ++c)
                    at5(grad_in, n, c, index[0], index[1], index[2]) +=
                        static_cast<C>(load(at5(grad_out, n, c, z, y, x)));
              }
            } else {
              const Corners<C> corners(source, dims);
              for (int64_t c = 0; c < channels; ++c) {
                const C g = static_cast<C>(load(at5(grad_out, n, c, z, y, x)));
                for (int k = 0; k < corners.cornerCount(dims); ++k) {
                  if (!corners.inside(k, size)) continue;
                  const int64_t p0 = corners.position(k, 0), p1 = corners.position(k, 1);
                  const int64_t p2 = corners.position(k, 2);
                  if (input_grad) at5(grad_in, n, c, p0, p1, p2) += corners.weight(k) * g;
                  const C v = static_cast<C>(load(at5(in, n, c, p0, p1, p2)));
                  for (int64_t d = 3 - dims; d < 3; ++d) {
                    // d weight / d source(d): +1 on the high side, -1 on the low.
                    C others = v * g;
                    for (int64_t e = 0; e < 3; ++e)
                      if (e != d) others *= corners.factor(k, e);
                    gradient[d] += ((k >> (2 - d)) & 1) ? others : -others;
                  }
                }
              }
            }
          }
          for (int64_t d = 0; d < dims; ++d)
            at5(grad_grid, n, z, y, x, d) = store<T>(slope[2 - d] * gradient[2 - d]);
        }
  }
}

}  // namespace maia_nn
