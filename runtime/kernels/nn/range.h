// arange's fill (iota): out[i] = start + i * step, bit for bit as PyTorch's
// CPU kernel computes it. Templated over the storage type, instantiated for
// every dtype but bool by gen_nn_kernels.py.
//
// The CPU kernel (aten/src/ATen/native/cpu/RangeFactoriesKernel.cpp) splits
// the range into at::parallel_for chunks; in each chunk, groups of 2W
// elements (W = one 256-bit vector) are written as vectors whose lane j is
// base + j * step, base = start + k * step rounded to the element type at
// the group's first index k; the chunk's tail is start + i * step. Each sum
// is one fused multiply-add (the CPU build contracts them) in the
// accumulate type: double for float32/float64, float for float16/bfloat16,
// int64 for integers. Integers are exact either way (wrapping as a cast).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include <maia/kernel_abi.h>

#include "nn.h"

namespace maia_nn {

// args: out ([n], unit stride), start, step (f64: the float types'), start,
// step (i64: the integer types'), vector width W (elements), chunk (the CPU's
// parallel_for chunk length).
template <typename T>
void arange(void* const* args, const maia_grid_t* grid) {
  const auto& out = memref<T, 1>(args, 0);
  T* y = out.aligned + out.offset;
  const int64_t n = out.sizes[0];
  auto slice = maia_kernel::programSlice(grid, n);
  if constexpr (std::is_floating_point_v<compute_t<T>>) {
    // float32 accumulates in double on the CPU, float16/bfloat16 in float.
    using A = std::conditional_t<std::is_same_v<compute_t<T>, double> ||
                                     std::is_same_v<T, float>,
                                 double, float>;
    const A start = static_cast<A>(scalar<double>(args, 1));
    const A step = static_cast<A>(scalar<double>(args, 2));
    const int64_t width = scalar<int64_t>(args, 5), chunk = scalar<int64_t>(args, 6);
    for (int64_t i = slice.begin; i < slice.end; ++i) {
      const int64_t begin = i / chunk * chunk;
      const int64_t vectorized = (std::min(n, begin + chunk) - begin) / (2 * width) * (2 * width);
      A value;
      if (i - begin < vectorized) {
        const int64_t k = begin + (i - begin) / width * width;
        const A base = static_cast<A>(load(store<T>(std::fma(step, static_cast<A>(k), start))));
        value = std::fma(static_cast<A>(i - k), step, base);
      } else {
        value = std::fma(step, static_cast<A>(i), start);
      }
      y[i] = store<T>(value);
    }
  } else {
    // Unsigned arithmetic: wraps like the CPU's int64 math, without UB.
    const uint64_t start = static_cast<uint64_t>(scalar<int64_t>(args, 3));
    const uint64_t step = static_cast<uint64_t>(scalar<int64_t>(args, 4));
    for (int64_t i = slice.begin; i < slice.end; ++i)
      y[i] = static_cast<T>(static_cast<int64_t>(start + step * static_cast<uint64_t>(i)));
  }
}

}  // namespace maia_nn
