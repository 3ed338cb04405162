// tril/triu: keep the lower (upper) triangle of the last two dimensions,
// zero the rest. Templated over the storage type, instantiated for every
// dtype by gen_nn_kernels.py.
//
// Each program owns a contiguous block of rows of the (batch * rows) matrix
// rows. out and in may be the same memref (tril_/triu_): every element is
// read before it is written, by the same program.
#pragma once

#include <algorithm>
#include <cstdint>

#include <maia/kernel_abi.h>

#include "nn.h"

namespace maia_nn {

// args: out (batch, rows, cols), in (the same shape, any strides),
// diagonal, upper (0: tril keeps j - i <= diagonal; 1: triu keeps
// j - i >= diagonal).
template <typename T>
void triangular(void* const* args, const maia_grid_t* grid) {
  const auto& out = memref<T, 3>(args, 0);
  const auto& in = memref<T, 3>(args, 1);
  const int64_t diagonal = scalar<int64_t>(args, 2);
  const bool upper = scalar<int64_t>(args, 3) != 0;
  const int64_t rows = out.sizes[1], cols = out.sizes[2];
  const T zero = store<T>(0);
  auto slice = maia_kernel::programSlice(grid, out.sizes[0] * rows);
  for (int64_t r = slice.begin; r < slice.end; ++r) {
    const int64_t b = r / rows, i = r % rows;
    T* dst = out.aligned + out.offset + b * out.strides[0] + i * out.strides[1];
    const T* src = in.aligned + in.offset + b * in.strides[0] + i * in.strides[1];
    const int64_t sd = out.strides[2], ss = in.strides[2];
    // Columns [keep_begin, keep_end) are kept; the bounds are clamped so a
    // diagonal far outside the matrix cannot overflow.
    const int64_t edge = std::clamp<int64_t>(i + diagonal + (upper ? 0 : 1), 0, cols);
    const int64_t keep_begin = upper ? edge : 0, keep_end = upper ? cols : edge;
    for (int64_t j = 0; j < keep_begin; ++j) dst[j * sd] = zero;
    for (int64_t j = keep_begin; j < keep_end; ++j) dst[j * sd] = src[j * ss];
    for (int64_t j = keep_end; j < cols; ++j) dst[j * sd] = zero;
  }
}

}  // namespace maia_nn
