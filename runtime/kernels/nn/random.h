// Random fills: uniform_ (torch.rand) and normal_ (torch.randn) drawn on the
// device from Philox4x32-10 keyed by the maia generator's (seed, offset).
// Templated over the storage type, instantiated per floating dtype by
// gen_nn_kernels.py.
//
// Element i's value depends only on (seed, offset, i): results do not depend
// on how many programs run, and each call (a new offset) draws new numbers.
// Elements are grouped into Philox blocks (four 32-bit words): uniform
// float32/float16/bfloat16 take one word each, float64 two (53 bits), and
// normal one Box-Muller pair per block (two 53-bit uniforms, two values).
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include <maia/kernel_abi.h>

#include "nn.h"
#include "philox.h"

namespace maia_nn {

/// Calls element(i, block, lane) for this program's share of the n
/// elements, where block holds the random words of element i's group of
/// PerBlock elements and lane is i's place in it.
template <int PerBlock, typename Element>
void forEachRandom(const maia_grid_t* grid, int64_t n, uint64_t seed, uint64_t offset,
                   Element&& element) {
  auto slice = maia_kernel::programSlice(grid, n);
  for (int64_t i = slice.begin; i < slice.end;) {
    Philox4x32 block(seed, static_cast<uint64_t>(i / PerBlock), offset);
    for (int64_t lane = i % PerBlock; lane < PerBlock && i < slice.end; ++lane, ++i)
      element(i, block, static_cast<int>(lane));
  }
}

/// A uniform double in [0, 1) from 53 bits of two words.
inline double uniform53(uint32_t lo, uint32_t hi) {
  return static_cast<double>(((uint64_t{hi} << 32) | lo) >> 11) * 0x1p-53;
}

/// A uniform value in [0, 1) with as many random bits as T's significand
/// holds, so that it is exact in T (a rounded 1 - 2^-24 would be 1 in half).
template <typename T>
inline float uniformBits(uint32_t word) {
  if constexpr (std::is_same_v<T, maia_eager::Half>)
    return static_cast<float>(word >> 21) * 0x1p-11f;
  else if constexpr (std::is_same_v<T, maia_eager::BFloat16>)
    return static_cast<float>(word >> 24) * 0x1p-8f;
  else
    return static_cast<float>(word >> 8) * 0x1p-24f;
}

// args: out ([numel], any stride), from, to, seed, offset. from <= to.
template <typename T>
void uniformFill(void* const* args, const maia_grid_t* grid) {
  using C = compute_t<T>;
  const auto& out = memref<T, 1>(args, 0);
  const C from = static_cast<C>(scalar<double>(args, 1));
  const C to = static_cast<C>(scalar<double>(args, 2));
  const C range = to - from;
  const uint64_t seed = static_cast<uint64_t>(scalar<int64_t>(args, 3));
  const uint64_t offset = static_cast<uint64_t>(scalar<int64_t>(args, 4));
  auto put = [&](int64_t i, C u) {
    T v = store<T>(from + u * range);
    // from + u * range can round up to `to` (e.g. to - from not a power of
    // two); the range is half-open, so fold it back onto from as CUDA does.
    if (range > C(0) && static_cast<C>(load(v)) >= to) v = store<T>(from);
    at1(out, i) = v;
  };
  if constexpr (std::is_same_v<T, double>) {
    forEachRandom<2>(grid, out.sizes[0], seed, offset,
                     [&](int64_t i, const Philox4x32& b, int lane) {
                       put(i, uniform53(b.word[2 * lane], b.word[2 * lane + 1]));
                     });
  } else {
    forEachRandom<4>(grid, out.sizes[0], seed, offset,
                     [&](int64_t i, const Philox4x32& b, int lane) {
                       put(i, uniformBits<T>(b.word[lane]));
                     });
  }
}

// args: out ([numel], any stride), mean, std, seed, offset. Box-Muller in
// double for every dtype (log of a uniform in (0, 1], never of 0).
template <typename T>
void normalFill(void* const* args, const maia_grid_t* grid) {
  const auto& out = memref<T, 1>(args, 0);
  const double mean = scalar<double>(args, 1), sigma = scalar<double>(args, 2);
  const uint64_t seed = static_cast<uint64_t>(scalar<int64_t>(args, 3));
  const uint64_t offset = static_cast<uint64_t>(scalar<int64_t>(args, 4));
  forEachRandom<2>(grid, out.sizes[0], seed, offset,
                   [&](int64_t i, const Philox4x32& b, int lane) {
                     const double u1 = 1.0 - uniform53(b.word[0], b.word[1]);  // (0, 1]
                     const double u2 = uniform53(b.word[2], b.word[3]);
                     const double r = std::sqrt(-2.0 * std::log(u1));
                     const double theta = 2.0 * M_PI * u2;
                     const double z = r * (lane == 0 ? std::cos(theta) : std::sin(theta));
                     at1(out, i) = store<T>(mean + sigma * z);
                   });
}

}  // namespace maia_nn
