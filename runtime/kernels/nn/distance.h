// cdist's p-norm distances between the rows of two batched matrices, as
// the CPU's cdist kernel defines each p (Distance.cpp): p = 0 counts the
// differing coordinates, 1 sums |d|, 2 is the square root of the summed
// squares, infinity the largest |d| (the CPU's max passes over NaN), any
// other p (sum |d|^p)^(1/p). Sums run in the storage type (float32/float64), in
// coordinate order, where the CPU's vectors keep lane-wise partial sums:
// results agree to rounding, not bit for bit.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

#include <maia/kernel_abi.h>

#include "nn.h"

namespace maia_nn {

// args: out (B, R1, R2), x1 (B, R1, C), x2 (B, R2, C), p (f64). Programs
// own rows (b, i) of out.
template <typename T>
void cdist(void* const* args, const maia_grid_t* grid) {
  const auto& out = memref<T, 3>(args, 0);
  const auto& x1 = memref<T, 3>(args, 1);
  const auto& x2 = memref<T, 3>(args, 2);
  const double p = scalar<double>(args, 3);
  const int64_t r1 = out.sizes[1], r2 = out.sizes[2], c = x1.sizes[2];
  const bool inf = std::isinf(p);
  const T exponent = static_cast<T>(p), inverse = static_cast<T>(1.0 / p);
  auto slice = maia_kernel::programSlice(grid, out.sizes[0] * r1);
  for (int64_t row = slice.begin; row < slice.end; ++row) {
    const int64_t b = row / r1, i = row % r1;
    const T* a = x1.aligned + x1.offset + b * x1.strides[0] + i * x1.strides[1];
    for (int64_t j = 0; j < r2; ++j) {
      const T* v = x2.aligned + x2.offset + b * x2.strides[0] + j * x2.strides[1];
      T acc = 0;
      for (int64_t k = 0; k < c; ++k) {
        const T d = std::abs(a[k * x1.strides[2]] - v[k * x2.strides[2]]);
        if (inf)
          acc = d > acc ? d : acc;  // std::max(acc, d), as the CPU: a NaN is passed over
        else if (p == 0)
          acc += std::isnan(d) ? d : d != 0 ? T(1) : T(0);  // min(ceil(d), 1): NaN stays
        else if (p == 1)
          acc += d;
        else if (p == 2)
          acc += d * d;
        else
          acc += std::pow(d, exponent);
      }
      if (!inf && p == 2)
        acc = std::sqrt(acc);
      else if (!inf && p != 0 && p != 1)
        acc = std::pow(acc, inverse);
      out.aligned[out.offset + b * out.strides[0] + i * out.strides[1] + j * out.strides[2]] =
          acc;
    }
  }
}

}  // namespace maia_nn
