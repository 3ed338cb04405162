// Antialiased bilinear and bicubic resampling (F.interpolate with
// antialias=True), float32/float64: separable passes, each a weighted sum
// of a window of input rows or columns per output index, with the window
// starts, sizes and weights the host computes as the CPU does; and the
// backward, which scatters each output gradient over its windows' product.
// Sums in the storage type, in the CPU's order.
#pragma once

#include <cstdint>

#include <maia/kernel_abi.h>

#include "nn.h"

namespace maia_nn {

namespace upsample_aa_detail {

template <typename T>
T& at4(const MemRef<T, 4>& m, int64_t n, int64_t c, int64_t h, int64_t w) {
  return m.aligned[m.offset + n * m.strides[0] + c * m.strides[1] + h * m.strides[2] +
                   w * m.strides[3]];
}

}  // namespace upsample_aa_detail

// args: out (N, C, H', W'), in (N, C, H, W), start i64 (L'), size i64 (L'),
// weights (L', taps), dim (2: height, 3: width). out and in differ only
// along dim; out[..., i, ...] = sum over j < size[i] of
// in[..., start[i] + j, ...] * weights[i, j].
template <typename T>
void upsampleAaPass(void* const* args, const maia_grid_t* grid) {
  using upsample_aa_detail::at4;
  const auto& out = memref<T, 4>(args, 0);
  const auto& in = memref<T, 4>(args, 1);
  const auto& start = memref<int64_t, 1>(args, 2);
  const auto& size = memref<int64_t, 1>(args, 3);
  const auto& weights = memref<T, 2>(args, 4);
  const bool along_width = scalar<int64_t>(args, 5) == 3;
  const int64_t C = out.sizes[1], H = out.sizes[2], W = out.sizes[3];
  auto slice = maia_kernel::programSlice(grid, out.sizes[0] * C * H * W);
  for (int64_t index = slice.begin; index < slice.end; ++index) {
    const int64_t w = index % W, h = index / W % H, c = index / W / H % C, n = index / W / H / C;
    const int64_t i = along_width ? w : h;
    const int64_t count = size.at(i);
    T sum = 0;
    for (int64_t j = 0; j < count; ++j) {
      const int64_t k = start.at(i) + j;
      const T value = along_width ? at4(in, n, c, h, k) : at4(in, n, c, k, w);
      sum = j == 0 ? value * weights.at(i, 0) : sum + value * weights.at(i, j);
    }
    at4(out, n, c, h, w) = sum;
  }
}

// args: grad_input (N, C, H, W; zero, accumulated), grad_output (N, C, H',
// W'), ystart, ysize, wy (H', taps), xstart, xsize, wx (W', taps). One
// program per block of (n, c) planes, output positions in row-major order.
template <typename T>
void upsampleAaBackward(void* const* args, const maia_grid_t* grid) {
  using upsample_aa_detail::at4;
  const auto& grad_input = memref<T, 4>(args, 0);
  const auto& grad_output = memref<T, 4>(args, 1);
  const auto& ystart = memref<int64_t, 1>(args, 2);
  const auto& ysize = memref<int64_t, 1>(args, 3);
  const auto& wy = memref<T, 2>(args, 4);
  const auto& xstart = memref<int64_t, 1>(args, 5);
  const auto& xsize = memref<int64_t, 1>(args, 6);
  const auto& wx = memref<T, 2>(args, 7);
  const int64_t C = grad_output.sizes[1], OH = grad_output.sizes[2], OW = grad_output.sizes[3];
  auto slice = maia_kernel::programSlice(grid, grad_output.sizes[0] * C);
  for (int64_t plane = slice.begin; plane < slice.end; ++plane) {
    const int64_t n = plane / C, c = plane % C;
    for (int64_t oh = 0; oh < OH; ++oh) {
      for (int64_t ow = 0; ow < OW; ++ow) {
        const T g = at4(grad_output, n, c, oh, ow);
        for (int64_t y = 0; y < ysize.at(oh); ++y)
          for (int64_t x = 0; x < xsize.at(ow); ++x)
            at4(grad_input, n, c, ystart.at(oh) + y, xstart.at(ow) + x) +=
                wx.at(ow, x) * wy.at(oh, y) * g;
      }
    }
  }
}

}  // namespace maia_nn
