// Placing values among ordered boundaries: searchsorted (and bucketize)
// and histc's bin counting, each as the CPU computes it.
#pragma once

#include <cstdint>

#include <maia/kernel_abi.h>

#include "nn.h"

namespace maia_nn {

// args: out i64 (rows, count), boundaries (rows or 1, length), values
// (rows, count), sorter i64 (like boundaries; read only if has_sorter),
// has_sorter, right. Each value's position: the first boundary >= it
// (> it with right), by the CPU's bisection, whose tests are written
// !(boundary >= value): a NaN value lands after every boundary, and NaN
// boundaries steer the search exactly as on the CPU. With a sorter, the
// row's k-th smallest boundary is boundaries[sorter[k]].
template <typename T>
void searchsorted(void* const* args, const maia_grid_t* grid) {
  const auto& out = memref<int64_t, 2>(args, 0);
  const auto& boundaries = memref<T, 2>(args, 1);
  const auto& values = memref<T, 2>(args, 2);
  const auto& sorter = memref<int64_t, 2>(args, 3);
  const bool has_sorter = scalar<int64_t>(args, 4) != 0;
  const bool right = scalar<int64_t>(args, 5) != 0;
  const int64_t count = values.sizes[1], length = boundaries.sizes[1];
  auto slice = maia_kernel::programSlice(grid, values.sizes[0] * count);
  for (int64_t index = slice.begin; index < slice.end; ++index) {
    const int64_t row = index / count, j = index % count;
    const int64_t boundary_row = boundaries.sizes[0] == 1 ? 0 : row;
    const T* bounds = boundaries.aligned + boundaries.offset + boundary_row * boundaries.strides[0];
    const int64_t* order = sorter.aligned + sorter.offset + boundary_row * sorter.strides[0];
    const auto value =
        load(values.aligned[values.offset + row * values.strides[0] + j * values.strides[1]]);
    int64_t lo = 0, hi = length;
    while (lo < hi) {
      const int64_t mid = lo + ((hi - lo) >> 1);
      const int64_t at = has_sorter ? order[mid * sorter.strides[1]] : mid;
      const auto bound = load(bounds[at * boundaries.strides[1]]);
      const bool after = right ? !(bound > value) : !(bound >= value);
      if (after)
        lo = mid + 1;
      else
        hi = mid;
    }
    out.aligned[out.offset + row * out.strides[0] + j * out.strides[1]] = lo;
  }
}

// histc's counting. args: counts i64 (programs, bins), each program's own
// row; input (n) any stride; left, right: the outer edges (f64, rounded to
// T here, as the CPU's bin edges are T); bins. An element in [left, right]
// goes to bin (x - left) * bins / (right - left), truncated, the last bin
// holding right, in T's arithmetic (float16/bfloat16: each step rounded to
// T, as c10::Half and c10::BFloat16 arithmetic rounds); NaN and elements
// outside are not counted.
template <typename T>
void histcCount(void* const* args, const maia_grid_t* grid) {
  const auto& counts = memref<int64_t, 2>(args, 0);
  const auto& input = memref<T, 1>(args, 1);
  const int64_t bins = scalar<int64_t>(args, 4);
  const T left = store<T>(scalar<double>(args, 2)), right = store<T>(scalar<double>(args, 3));
  int64_t* row = counts.aligned + counts.offset + grid->program_id[0] * counts.strides[0];
  for (int64_t b = 0; b < bins; ++b) row[b * counts.strides[1]] = 0;
  auto in_t = [](auto v) { return store<T>(v); };  // one rounding to T
  const T width = in_t(load(right) - load(left)), scale = in_t(bins);
  auto slice = maia_kernel::programSlice(grid, input.sizes[0]);
  for (int64_t i = slice.begin; i < slice.end; ++i) {
    const T x = input.aligned[input.offset + i * input.strides[0]];
    if (!(load(x) >= load(left) && load(x) <= load(right))) continue;
    const T offset = in_t(load(x) - load(left));
    const T scaled = in_t(load(offset) * load(scale));
    int64_t bin = static_cast<int64_t>(load(in_t(load(scaled) / load(width))));
    // bins itself is x == right; beyond it only when T rounds bins (a
    // float16 count above 2048), where the CPU would index past its row.
    if (bin >= bins) bin = bins - 1;
    row[bin * counts.strides[1]] += 1;
  }
}

}  // namespace maia_nn
