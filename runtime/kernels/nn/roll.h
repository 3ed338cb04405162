// roll and flip: a copy in which each output index reads the input at a
// cyclic shift, over rank-8 memrefs of any strides. Flip is the same copy
// with no shift from an input memref whose flipped dimensions the host has
// given negative strides (the offset moved to their last element); roll
// passes per-dimension shifts. Pure copies of the storage type, so every
// result is bit for bit an input element. Templated over the storage type,
// instantiated for every dtype, complex ones included, by gen_nn_kernels.py.
//
// Each program owns a contiguous block of the output's elements (row-major)
// and copies it one innermost run at a time, split where the shift wraps.
#pragma once

#include <algorithm>
#include <complex>
#include <cstdint>

#include <maia/kernel_abi.h>

#include "nn.h"

namespace maia_nn {

constexpr int kRollRank = 8;

/// count elements dst[j * sd] = src[j * ss], with the unit-stride case
/// written so the compiler vectorizes it.
template <typename T>
void copyRun(T* dst, int64_t sd, const T* src, int64_t ss, int64_t count) {
  if (sd == 1 && ss == 1) {
    std::copy(src, src + count, dst);
  } else {
    for (int64_t j = 0; j < count; ++j) dst[j * sd] = src[j * ss];
  }
}

// args: out, in (rank 8, the same sizes), then 8 shifts in [0, size): out
// element i reads in element (i + shift) mod size in every dimension.
template <typename T>
void roll(void* const* args, const maia_grid_t* grid) {
  const auto& out = memref<T, kRollRank>(args, 0);
  const auto& in = memref<T, kRollRank>(args, 1);
  int64_t shift[kRollRank];
  for (int d = 0; d < kRollRank; ++d) shift[d] = scalar<int64_t>(args, 2 + d);
  constexpr int last = kRollRank - 1;
  const int64_t inner = out.sizes[last];
  int64_t total = 1;
  for (int d = 0; d < kRollRank; ++d) total *= out.sizes[d];
  if (total == 0) return;
  auto slice = maia_kernel::programSlice(grid, total);
  for (int64_t row = slice.begin / inner; row * inner < slice.end; ++row) {
    int64_t out_offset = out.offset, in_offset = in.offset;
    int64_t rest = row;
    for (int d = last - 1; d >= 0; --d) {
      const int64_t i = rest % out.sizes[d];
      rest /= out.sizes[d];
      int64_t source = i + shift[d];
      if (source >= out.sizes[d]) source -= out.sizes[d];
      out_offset += i * out.strides[d];
      in_offset += source * in.strides[d];
    }
    const int64_t begin = std::max<int64_t>(slice.begin - row * inner, 0);
    const int64_t end = std::min<int64_t>(slice.end - row * inner, inner);
    const int64_t so = out.strides[last], si = in.strides[last];
    // [begin, wrap) reads from j + shift; [wrap, end) from j + shift - inner.
    const int64_t wrap = std::clamp<int64_t>(inner - shift[last], begin, end);
    copyRun(out.aligned + out_offset + begin * so, so,
            in.aligned + in_offset + (begin + shift[last]) * si, si, wrap - begin);
    copyRun(out.aligned + out_offset + wrap * so, so,
            in.aligned + in_offset + (wrap + shift[last] - inner) * si, si, end - wrap);
  }
}

}  // namespace maia_nn
