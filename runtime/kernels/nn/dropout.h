// Dropout kernels: native_dropout draws its keep mask from a counter-based
// generator (Philox4x32-10) keyed by the maia generator's (seed, offset),
// and native_dropout_backward applies a mask. Templated over the storage
// type and instantiated per floating dtype by gen_nn_kernels.py.
//
// Element i's random number depends only on (seed, offset, i): results do
// not depend on how many programs run, and each call (a new offset) draws
// new numbers.
#pragma once

#include <cstdint>

#include <maia/kernel_abi.h>

#include "nn.h"
#include "philox.h"

namespace maia_nn {

// args: out, mask (bool), in (all [numel], unit stride), keep probability
// (1 - p), scale (1 / (1 - p), 0 when p = 1), seed, offset.
// out = in * mask * scale, computed as PyTorch does (so NaN * 0 stays NaN).
template <typename T>
void dropout(void* const* args, const maia_grid_t* grid) {
  using C = compute_t<T>;
  const auto& out = memref<T, 1>(args, 0);
  const auto& mask = memref<bool, 1>(args, 1);
  const auto& in = memref<T, 1>(args, 2);
  const double keep = scalar<double>(args, 3);
  const C scale = static_cast<C>(scalar<double>(args, 4));
  const uint64_t seed = static_cast<uint64_t>(scalar<int64_t>(args, 5));
  const uint64_t offset = static_cast<uint64_t>(scalar<int64_t>(args, 6));
  auto slice = maia_kernel::programSlice(grid, in.sizes[0]);
  const T* x = in.aligned + in.offset;
  T* y = out.aligned + out.offset;
  bool* m = mask.aligned + mask.offset;
  for (int64_t i = slice.begin; i < slice.end;) {
    Philox4x32 random(seed, static_cast<uint64_t>(i / 4), offset);
    for (int64_t lane = i % 4; lane < 4 && i < slice.end; ++lane, ++i) {
      const bool kept = uniform(random.word[lane]) < keep;
      m[i] = kept;
      y[i] = store<T>(static_cast<C>(load(x[i])) * C(kept) * scale);
    }
  }
}

// args: grad_input, grad_output, mask (bool; all [numel], unit stride), scale.
template <typename T>
void dropoutBackward(void* const* args, const maia_grid_t* grid) {
  using C = compute_t<T>;
  const auto& gi = memref<T, 1>(args, 0);
  const auto& go = memref<T, 1>(args, 1);
  const auto& mask = memref<bool, 1>(args, 2);
  const C scale = static_cast<C>(scalar<double>(args, 3));
  auto slice = maia_kernel::programSlice(grid, go.sizes[0]);
  const T* g = go.aligned + go.offset;
  const bool* m = mask.aligned + mask.offset;
  T* y = gi.aligned + gi.offset;
  for (int64_t i = slice.begin; i < slice.end; ++i)
    y[i] = store<T>(static_cast<C>(load(g[i])) * C(m[i]) * scale);
}

}  // namespace maia_nn
