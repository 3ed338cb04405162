// Edge tiles of the fp32 macro-kernel, and tiles of a C whose rows are
// strided (column-major in the orientation computed).
//
// The kMR x kNR microkernel pads a partial tile with zeros and multiplies
// them: at M = 128 (9 tiles of 14 and one of 2 rows) or N = 196 (6 panels
// of 32 and one of 4 columns) that is 9-12% of the FMAs spent on padding,
// and the partial tile then went through a scalar merge. With AVX-512 the
// edge kernel computes only the rows present and the vectors of 16
// columns present, and stores under a lane mask straight into C.
//
// A column-major C (the transposed product of a row-major one, picked to
// pad less) is stored 16 x 16 blocks at a time through in-register
// transposes instead of element by element.
#pragma once

#include <array>
#include <cstdint>
#include <utility>

#include "microkernel.h"
#include "pack.h"

namespace maia_gemm {

#if defined(__AVX512F__)

inline __mmask16 laneMask(int64_t lanes) {
  return static_cast<__mmask16>(lanes >= 16 ? 0xffffu : (1u << lanes) - 1u);
}

/// c[i * ldc + j] = alpha * sum_k a[k * kMR + i] * b[k * ldb + j] + beta * c
/// for i < kRows and j < cols (kVectors = ceil(cols / 16)), unit column
/// stride; beta == 0 does not read c. a and b as for microKernel: B lanes
/// past cols are read (zero padding of a packed panel) but never stored.
template <int kRows, int kVectors>
void edgeKernel(int64_t kc, const float* __restrict a, const float* __restrict b, int64_t ldb,
                float* __restrict c, int64_t ldc, int64_t cols, float alpha, float beta) {
  static_assert(kRows >= 1 && kRows <= kMR && kVectors >= 1 && kVectors <= 2);
  vfloat acc[kRows][kVectors];
#pragma GCC unroll 16
  for (int i = 0; i < kRows; ++i)
    for (int v = 0; v < kVectors; ++v) acc[i][v] = vzero();
#pragma GCC unroll 2
  for (int64_t k = 0; k < kc; ++k) {
    vfloat bv[kVectors];
    for (int v = 0; v < kVectors; ++v) bv[v] = vloadu(b + v * kVec);
#pragma GCC unroll 16
    for (int i = 0; i < kRows; ++i) {
      vfloat ai = vset1(a[i]);
      for (int v = 0; v < kVectors; ++v) acc[i][v] = vfma(ai, bv[v], acc[i][v]);
    }
    a += kMR;
    b += ldb;
  }
  const __mmask16 last = laneMask(cols - (kVectors - 1) * kVec);
  const vfloat va = vset1(alpha), vb = vset1(beta);
#pragma GCC unroll 16
  for (int i = 0; i < kRows; ++i)
    for (int v = 0; v < kVectors; ++v) {
      float* out = c + i * ldc + v * kVec;
      const __mmask16 mask = v == kVectors - 1 ? last : 0xffff;
      vfloat r = vmul(va, acc[i][v]);
      if (beta != 0.0f) r = vfma(vb, _mm512_maskz_loadu_ps(mask, out), r);
      _mm512_mask_storeu_ps(out, mask, r);
    }
}

using EdgeKernelFn = void (*)(int64_t, const float*, const float*, int64_t, float*, int64_t,
                              int64_t, float, float);

template <int... kRowsMinus1>
constexpr std::array<EdgeKernelFn, 2 * kMR> edgeKernelTable(
    std::integer_sequence<int, kRowsMinus1...>) {
  return {edgeKernel<kRowsMinus1 + 1, 1>..., edgeKernel<kRowsMinus1 + 1, 2>...};
}

/// The edge kernel for rows x cols (1 <= rows <= kMR, 1 <= cols <= kNR).
inline EdgeKernelFn edgeKernelFor(int64_t rows, int64_t cols) {
  static constexpr auto table = edgeKernelTable(std::make_integer_sequence<int, kMR>{});
  return table[(cols > kVec ? kMR : 0) + rows - 1];
}

#endif  // __AVX512F__

// GCC 12 flags the undefined pass-through operand of the unpack intrinsics
// of transpose16x16 wherever it is inlined (GCC bug 105593, as in pack.h):
// kept out of line so the suppression covers every copy.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
/// c[j * cs + i] = alpha * tile[i * kNR + j] + beta * c[...] for i < rows,
/// j < cols: a tile of C^T stored into C, whose rows (j) are cs apart and
/// contiguous; beta == 0 does not read c.
[[gnu::noinline]] inline void mergeTileTransposed(const float* tile, int64_t rows, int64_t cols, float* c,
                                int64_t cs, float alpha, float beta) {
#if defined(__AVX512F__)
  alignas(64) float columns[16 * 16];
  const __mmask16 mask = laneMask(rows);
  const vfloat va = vset1(alpha), vb = vset1(beta);
  for (int64_t j0 = 0; j0 < cols; j0 += 16) {
    const int64_t width = cols - j0 < 16 ? cols - j0 : 16;
    // columns[j * 16 + i] = tile[i * kNR + j0 + j]
    transpose16x16(tile + j0, kNR, columns, 16, static_cast<int>(rows), static_cast<int>(rows));
    for (int64_t j = 0; j < width; ++j) {
      float* out = c + (j0 + j) * cs;
      vfloat r = vmul(va, _mm512_load_ps(columns + j * 16));
      if (beta != 0.0f) r = vfma(vb, _mm512_maskz_loadu_ps(mask, out), r);
      _mm512_mask_storeu_ps(out, mask, r);
    }
  }
#else
  for (int64_t j = 0; j < cols; ++j)
    for (int64_t i = 0; i < rows; ++i) {
      float& out = c[j * cs + i];
      float v = alpha * tile[i * kNR + j];
      out = beta == 0.0f ? v : v + beta * out;
    }
#endif
}
#pragma GCC diagnostic pop

}  // namespace maia_gemm
