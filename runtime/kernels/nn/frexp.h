// frexp: each element split into a mantissa of its own dtype, in
// [0.5, 1) in magnitude, and an int32 power of two, by std::frexp in the
// compute type as the CPU's kernel does (zeros, infinities and NaN keep
// their value with exponent 0; subnormals are normalized). Over flat
// element ranges: the host passes operands of one dense layout.
#pragma once

#include <cmath>
#include <cstdint>

#include <maia/kernel_abi.h>

#include "nn.h"

namespace maia_nn {

// args: mantissa (n), exponent (n, int32), in (n).
template <typename T>
void frexpSplit(void* const* args, const maia_grid_t* grid) {
  const auto& mantissa = memref<T, 1>(args, 0);
  const auto& exponent = memref<int32_t, 1>(args, 1);
  const auto& in = memref<T, 1>(args, 2);
  auto slice = maia_kernel::programSlice(grid, in.sizes[0]);
  for (int64_t i = slice.begin; i < slice.end; ++i) {
    int power = 0;
    const compute_t<T> fraction = std::frexp(load(at1(in, i)), &power);
    at1(mantissa, i) = store<T>(fraction);
    at1(exponent, i) = power;
  }
}

}  // namespace maia_nn
