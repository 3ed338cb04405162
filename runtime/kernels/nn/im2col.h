// im2col and its adjoint col2im: the column matrix of a 2-D convolution,
// cols[(c * KH + i) * KW + j, (n * OH + y) * OW + x] = input[n, c, y*sh - ph + i*dh, x*sw - pw + j*dw]
// (0 outside the input: the padding is implicit). One launch each, where the
// composite version took one strided copy per kernel tap.
#pragma once

#include <algorithm>
#include <cstdint>

#include <maia/kernel_abi.h>

#include "scalar_types.h"

namespace maia_nn {

/// The geometry scalars shared by both kernels (args 2..11).
struct ConvGeometry {
  int64_t kh, kw, sh, sw, ph, pw, dh, dw, oh, ow;

  static ConvGeometry from(void* const* args, int first) {
    using maia_kernel::scalar;
    ConvGeometry g;
    int64_t* fields[] = {&g.kh, &g.kw, &g.sh, &g.sw, &g.ph, &g.pw, &g.dh, &g.dw, &g.oh, &g.ow};
    for (int k = 0; k < 10; ++k) *fields[k] = scalar<int64_t>(args, first + k);
    return g;
  }
};

// args: cols [C*KH*KW, N*OH*OW], input [N, C, H, W], geometry. Programs own
// rows of cols (one input channel and kernel tap each).
template <typename T>
void im2col(void* const* args, const maia_grid_t* grid) {
  const auto& cols = maia_kernel::memref<T, 2>(args, 0);
  const auto& in = maia_kernel::memref<T, 4>(args, 1);
  const ConvGeometry g = ConvGeometry::from(args, 2);
  const int64_t n_batch = in.sizes[0], h = in.sizes[2], w = in.sizes[3];
  const T zero = maia_eager::store<T>(0.0f);
  auto slice = maia_kernel::programSlice(grid, cols.sizes[0]);
  const int64_t so = cols.strides[1], sx = in.strides[3];
  for (int64_t row = slice.begin; row < slice.end; ++row) {
    const int64_t c = row / (g.kh * g.kw), i = row / g.kw % g.kh, j = row % g.kw;
    T* out = cols.aligned + cols.offset + row * cols.strides[0];
    // ix = x * sw + shift: zeros left and right of the columns inside the
    // input, a plain (vectorizable) copy in between. The same for every
    // image and output row: computed once per row of cols (the divisions
    // per output row cost more than the copy of a small image's row).
    const int64_t shift = j * g.dw - g.pw;
    const int64_t x_lo = shift >= 0 ? 0 : std::min(g.ow, (-shift + g.sw - 1) / g.sw);
    const int64_t x_hi =
        w - 1 - shift < 0 ? x_lo : std::max(x_lo, std::min(g.ow, (w - 1 - shift) / g.sw + 1));
    const bool unit_strides = so == 1 && g.sw == 1 && sx == 1;
    for (int64_t n = 0; n < n_batch; ++n) {
      const T* plane = in.aligned + in.offset + n * in.strides[0] + c * in.strides[1];
      for (int64_t y = 0; y < g.oh; ++y) {
        const int64_t iy = y * g.sh - g.ph + i * g.dh;
        T* dst = out + ((n * g.oh + y) * g.ow) * so;
        if (iy < 0 || iy >= h) {
          for (int64_t x = 0; x < g.ow; ++x) dst[x * so] = zero;
          continue;
        }
        const T* src = plane + iy * in.strides[2] + shift * sx;
        for (int64_t x = 0; x < x_lo; ++x) dst[x * so] = zero;
        if (unit_strides) {
          for (int64_t x = x_lo; x < x_hi; ++x) dst[x] = src[x];
        } else {
          for (int64_t x = x_lo; x < x_hi; ++x) dst[x * so] = src[x * g.sw * sx];
        }
        for (int64_t x = x_hi; x < g.ow; ++x) dst[x * so] = zero;
      }
    }
  }
}

// args: input_grad [N, C, H, W] (written), cols [C*KH*KW, N*OH*OW], geometry.
// Programs own (n, c) planes; each element gathers its taps and rounds once.
template <typename T>
void col2im(void* const* args, const maia_grid_t* grid) {
  using maia_eager::compute_t;
  const auto& out = maia_kernel::memref<T, 4>(args, 0);
  const auto& cols = maia_kernel::memref<T, 2>(args, 1);
  const ConvGeometry g = ConvGeometry::from(args, 2);
  const int64_t channels = out.sizes[1], h = out.sizes[2], w = out.sizes[3];
  auto slice = maia_kernel::programSlice(grid, out.sizes[0] * channels);
  for (int64_t plane = slice.begin; plane < slice.end; ++plane) {
    const int64_t n = plane / channels, c = plane % channels;
    T* dst = out.aligned + out.offset + n * out.strides[0] + c * out.strides[1];
    for (int64_t iy = 0; iy < h; ++iy) {
      for (int64_t ix = 0; ix < w; ++ix) {
        compute_t<T> acc = 0;  // rounds once, as a sum in the compute type
        for (int64_t i = 0; i < g.kh; ++i) {
          const int64_t ty = iy + g.ph - i * g.dh;
          if (ty < 0 || ty % g.sh != 0 || ty / g.sh >= g.oh) continue;
          const int64_t y = ty / g.sh;
          for (int64_t j = 0; j < g.kw; ++j) {
            const int64_t tx = ix + g.pw - j * g.dw;
            if (tx < 0 || tx % g.sw != 0 || tx / g.sw >= g.ow) continue;
            const int64_t row = (c * g.kh + i) * g.kw + j;
            const int64_t col = (n * g.oh + y) * g.ow + tx / g.sw;
            acc += maia_eager::load(
                cols.aligned[cols.offset + row * cols.strides[0] + col * cols.strides[1]]);
          }
        }
        dst[iy * out.strides[2] + ix * out.strides[3]] = maia_eager::store<T>(acc);
      }
    }
  }
}

}  // namespace maia_nn
