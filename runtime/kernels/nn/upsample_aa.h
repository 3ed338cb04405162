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
#include "pooling.h"

namespace maia_nn {

/// One axis's windows, three consecutive arguments: start i64 (L'), size
/// i64 (L'), weights (L', taps). Output index i reads size[i] inputs from
/// start[i] with weights[i, :size[i]].
template <typename T>
struct ResampleWindows {
  const MemRef<int64_t, 1>& start;
  const MemRef<int64_t, 1>& size;
  const MemRef<T, 2>& weights;

  ResampleWindows(void* const* args, int first)
      : start(memref<int64_t, 1>(args, first)), size(memref<int64_t, 1>(args, first + 1)),
        weights(memref<T, 2>(args, first + 2)) {}
};

// args: out (N, C, H', W'), in (N, C, H, W), the windows of dim (start,
// size, weights), dim (2: height, 3: width). out and in differ only
// along dim; out[..., i, ...] = sum over j < size[i] of
// in[..., start[i] + j, ...] * weights[i, j].
template <typename T>
void upsampleAaPass(void* const* args, const maia_grid_t* grid) {
  const auto& out = memref<T, 4>(args, 0);
  const auto& in = memref<T, 4>(args, 1);
  const ResampleWindows<T> axis(args, 2);
  const bool along_width = scalar<int64_t>(args, 5) == 3;
  const int64_t C = out.sizes[1], H = out.sizes[2], W = out.sizes[3];
  auto slice = maia_kernel::programSlice(grid, out.sizes[0] * C * H * W);
  for (int64_t index = slice.begin; index < slice.end; ++index) {
    const int64_t w = index % W, h = index / W % H, c = index / W / H % C, n = index / W / H / C;
    const int64_t i = along_width ? w : h;
    const int64_t count = axis.size.at(i);
    T sum = 0;
    for (int64_t j = 0; j < count; ++j) {
      const int64_t k = axis.start.at(i) + j;
      const T value = along_width ? at4(in, n, c, h, k) : at4(in, n, c, k, w);
      sum = j == 0 ? value * axis.weights.at(i, 0) : sum + value * axis.weights.at(i, j);
    }
    at4(out, n, c, h, w) = sum;
  }
}

// args: grad_input (N, C, H, W; zero, accumulated), grad_output (N, C, H',
// W'), the row windows (over H'), the column windows (over W'). One
// program per block of (n, c) planes, output positions in row-major order.
template <typename T>
void upsampleAaBackward(void* const* args, const maia_grid_t* grid) {
  const auto& grad_input = memref<T, 4>(args, 0);
  const auto& grad_output = memref<T, 4>(args, 1);
  const ResampleWindows<T> rows(args, 2), columns(args, 5);
  const int64_t C = grad_output.sizes[1], OH = grad_output.sizes[2], OW = grad_output.sizes[3];
  auto slice = maia_kernel::programSlice(grid, grad_output.sizes[0] * C);
  for (int64_t plane = slice.begin; plane < slice.end; ++plane) {
    const int64_t n = plane / C, c = plane % C;
    for (int64_t oh = 0; oh < OH; ++oh) {
      for (int64_t ow = 0; ow < OW; ++ow) {
        const T g = at4(grad_output, n, c, oh, ow);
        for (int64_t y = 0; y < rows.size.at(oh); ++y)
          for (int64_t x = 0; x < columns.size.at(ow); ++x)
            at4(grad_input, n, c, rows.start.at(oh) + y, columns.start.at(ow) + x) +=
                columns.weights.at(ow, x) * rows.weights.at(oh, y) * g;
      }
    }
  }
}

}  // namespace maia_nn
