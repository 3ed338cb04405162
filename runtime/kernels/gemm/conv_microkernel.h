// The microkernel over pixel-major A panels: the GEMM's kMR x kNR register
// tile (microkernel.h, same FMAs and B panels), but A element (i, k) at
// a[i * kRowStride + k] instead of the packed a[k * kMR + i]. A
// channels-last image packs into that layout by plain copies of each
// pixel's channel runs, where the packed layout needs 16 x 16 transposes
// (a fifth of the time of a 64-channel convolution). The row stride is a
// compile-time constant, so each broadcast is one load at a fixed
// displacement from a single pointer.
#pragma once

#include <cstdint>

#include "blocked.h"
#include "microkernel.h"

namespace maia_conv {

using maia_gemm::kMR;
using maia_gemm::kNR;
using maia_gemm::kVec;
using maia_gemm::vfloat;

/// Floats between consecutive pixel rows of a pixel-major A panel: the
/// longest reduction block (conv.h's reductionBlock never exceeds it).
constexpr int64_t kRowStride = maia_gemm::kKC;

/// tile[i * kNR + j] = sum over k < kc of a[i * kRowStride + k] * b[k * kNR + j]
/// for the full kMR x kNR tile (tile 64-byte aligned).
inline void microKernelRows(int64_t kc, const float* __restrict a, const float* __restrict b,
                            float* __restrict tile) {
  vfloat acc[kMR][2];
#pragma GCC unroll 16
  for (int i = 0; i < kMR; ++i) acc[i][0] = acc[i][1] = maia_gemm::vzero();
#pragma GCC unroll 2
  for (int64_t k = 0; k < kc; ++k) {
    const vfloat b0 = maia_gemm::vloadu(b), b1 = maia_gemm::vloadu(b + kVec);
#pragma GCC unroll 16
    for (int i = 0; i < kMR; ++i) {
      const vfloat ai = maia_gemm::vset1(a[i * kRowStride]);
      acc[i][0] = maia_gemm::vfma(ai, b0, acc[i][0]);
      acc[i][1] = maia_gemm::vfma(ai, b1, acc[i][1]);
    }
    a += 1;
    b += kNR;
  }
#pragma GCC unroll 16
  for (int i = 0; i < kMR; ++i) {
    maia_gemm::vstoreu(tile + i * kNR, acc[i][0]);
    maia_gemm::vstoreu(tile + i * kNR + kVec, acc[i][1]);
  }
}

}  // namespace maia_conv
