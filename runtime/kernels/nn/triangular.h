// tril/triu: keep the lower (upper) triangle of the last two dimensions,
// zero the rest; tril_indices/triu_indices: the coordinates they keep. Templated over the storage type, instantiated for every
// dtype by gen_nn_kernels.py.
//
// Each program owns a contiguous block of rows of the (batch * rows) matrix
// rows. out and in may be the same memref (tril_/triu_): every element is
// read before it is written, by the same program.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>

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


// tril_indices/triu_indices: args out i64 (2, count), row, col, offset,
// upper. Row i holds the columns [0, edge) (tril) or [edge, col) (triu) with
// edge the clamped i + offset (+ 1 for tril), the rule of triangular()
// above; indices are listed row by row. Each program owns a block of rows
// and finds where its first row starts by counting the rows before it.
inline void triIndices(void* const* args, const maia_grid_t* grid) {
  const auto& out = memref<int64_t, 2>(args, 0);
  const int64_t row = scalar<int64_t>(args, 1), col = scalar<int64_t>(args, 2);
  const int64_t offset = scalar<int64_t>(args, 3);
  const bool upper = scalar<int64_t>(args, 4) != 0;
  auto columns = [&](int64_t i) {  // [begin, end) of row i
    const int64_t edge = std::clamp<int64_t>(i + offset + (upper ? 0 : 1), 0, col);
    return upper ? std::pair<int64_t, int64_t>{edge, col} : std::pair<int64_t, int64_t>{0, edge};
  };
  auto slice = maia_kernel::programSlice(grid, row);
  int64_t position = 0;
  for (int64_t i = 0; i < slice.begin; ++i) position += columns(i).second - columns(i).first;
  int64_t* rows_out = out.aligned + out.offset;
  int64_t* cols_out = rows_out + out.strides[0];
  for (int64_t i = slice.begin; i < slice.end; ++i) {
    const auto [begin, end] = columns(i);
    for (int64_t j = begin; j < end; ++j, ++position) {
      rows_out[position * out.strides[1]] = i;
      cols_out[position * out.strides[1]] = j;
    }
  }
}

}  // namespace maia_nn
