// Packing: copies a block of A or B (any strides, any element type) into
// the contiguous fp32 micro-panels the microkernel streams, zero-padding
// partial panels so edge tiles compute exactly on the same path.
#pragma once

#include <cstdint>

#include "element.h"
#include "microkernel.h"

namespace maia_gemm {

/// A strided read-only view: element (i, j) is data[i * rs + j * cs].
template <typename T>
struct View {
  const T* data;
  int64_t rs, cs;
  const T& at(int64_t i, int64_t j) const { return data[i * rs + j * cs]; }
};

/// Packs rows [0, mc) x columns [0, kc) of a into panels of kMR rows:
/// out[(i / kMR) * kMR * kc + k * kMR + i % kMR].
template <typename T>
void packA(View<T> a, int64_t mc, int64_t kc, float* __restrict out) {
  for (int64_t i0 = 0; i0 < mc; i0 += kMR) {
    int64_t rows = mc - i0 < kMR ? mc - i0 : kMR;
    float* panel = out + i0 * kc;
    if (a.cs == 1) {
      // Row-major A: read each row contiguously, write with stride kMR.
      for (int64_t i = 0; i < rows; ++i) {
        const T* row = &a.at(i0 + i, 0);
        for (int64_t k = 0; k < kc; ++k) panel[k * kMR + i] = toFloat(row[k]);
      }
      for (int64_t i = rows; i < kMR; ++i)
        for (int64_t k = 0; k < kc; ++k) panel[k * kMR + i] = 0.0f;
    } else {
      // Column-major (transposed) or general A: one column of kMR per k.
      for (int64_t k = 0; k < kc; ++k) {
        float* dst = panel + k * kMR;
        for (int64_t i = 0; i < rows; ++i) dst[i] = toFloat(a.at(i0 + i, k));
        for (int64_t i = rows; i < kMR; ++i) dst[i] = 0.0f;
      }
    }
  }
}

/// Packs rows [0, kc) x columns [0, nc) of b into panels of kNR columns:
/// out[(j / kNR) * kNR * kc + k * kNR + j % kNR].
template <typename T>
void packB(View<T> b, int64_t kc, int64_t nc, float* __restrict out) {
  for (int64_t j0 = 0; j0 < nc; j0 += kNR) {
    int64_t cols = nc - j0 < kNR ? nc - j0 : kNR;
    float* panel = out + j0 * kc;
    if (b.cs == 1) {
      // Row-major B: kNR contiguous elements per k (vectorized conversion).
      for (int64_t k = 0; k < kc; ++k) {
        const T* src = &b.at(k, j0);
        float* dst = panel + k * kNR;
        if (cols == kNR) {
#pragma GCC unroll 4
          for (int j = 0; j < kNR; ++j) dst[j] = toFloat(src[j]);
        } else {
          for (int64_t j = 0; j < cols; ++j) dst[j] = toFloat(src[j]);
          for (int64_t j = cols; j < kNR; ++j) dst[j] = 0.0f;
        }
      }
    } else {
      // Column-major (transposed) or general B: read down each column.
      for (int64_t j = 0; j < cols; ++j) {
        const T* col = &b.at(0, j0 + j);
        for (int64_t k = 0; k < kc; ++k) panel[k * kNR + j] = toFloat(col[k * b.rs]);
      }
      for (int64_t j = cols; j < kNR; ++j)
        for (int64_t k = 0; k < kc; ++k) panel[k * kNR + j] = 0.0f;
    }
  }
}

}  // namespace maia_gemm
