// Packing: copies a block of A or B (any strides, any element type) into
// the contiguous fp32 micro-panels the microkernel streams, zero-padding
// partial panels so edge tiles compute exactly on the same path.
#pragma once

#include <cstdint>
#include <type_traits>

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

#if defined(__AVX512F__)
// GCC 12 flags the deliberately undefined pass-through operand inside the
// unpack intrinsics as uninitialized (a false positive: GCC bug 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
/// Transposes the 16 x 16 fp32 block held in r (row i in r[i]) in place:
/// 64 in-register shuffles, where a scalar transpose takes 256 loads and
/// stores.
inline void transposeInRegisters(__m512 (&r)[16]) {
  auto as_pd = [](__m512 v) { return _mm512_castps_pd(v); };
  __m512 t[16];
  for (int i = 0; i < 16; i += 2) {  // interleave pairs of rows by 32 bits
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {  // ... by 64 bits
    r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(as_pd(t[i]), as_pd(t[i + 2])));
    r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(as_pd(t[i]), as_pd(t[i + 2])));
    r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(as_pd(t[i + 1]), as_pd(t[i + 3])));
    r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(as_pd(t[i + 1]), as_pd(t[i + 3])));
  }
  for (int i = 0; i < 16; i += 8) {  // ... by 128-bit lanes, twice
    for (int j = 0; j < 4; ++j) {
      t[i + j] = _mm512_shuffle_f32x4(r[i + j], r[i + j + 4], 0x88);
      t[i + j + 4] = _mm512_shuffle_f32x4(r[i + j], r[i + j + 4], 0xdd);
    }
  }
  for (int j = 0; j < 8; ++j) {
    r[j] = _mm512_shuffle_f32x4(t[j], t[j + 8], 0x88);
    r[j + 8] = _mm512_shuffle_f32x4(t[j], t[j + 8], 0xdd);
  }
}

/// dst row c = src column c of a 16 x 16 fp32 block (rows ld apart in src,
/// ldd apart in dst): 16 loads, the in-register transpose, 16 stores.
/// Only the first `lanes` elements of each dst row are stored, and only the
/// first `rows` rows of src are read (the others count as zero).
inline void transpose16x16(const float* src, int64_t ld, float* dst, int64_t ldd,
                           int rows = 16, int lanes = 16) {
  __m512 r[16];
  for (int i = 0; i < 16; ++i) r[i] = i < rows ? _mm512_loadu_ps(src + i * ld) : _mm512_setzero_ps();
  transposeInRegisters(r);
  const __mmask16 mask = static_cast<__mmask16>((1u << lanes) - 1);
  for (int i = 0; i < 16; ++i) _mm512_mask_storeu_ps(dst + i * ldd, mask, r[i]);
}
#pragma GCC diagnostic pop
#endif

/// The k steps both packings share: panel[k * width + s] = line s at k, for
/// `count` <= width source lines, each contiguous over k and `ld` apart
/// (slots past count are zero). In fp32 with AVX-512 this packs whole
/// blocks of 16 k steps by in-register transposes and returns how many k
/// steps it packed (a multiple of 16); otherwise 0. The caller packs the
/// rest.
template <typename T>
int64_t packLinesByTransposes(const T* lines, int64_t ld, int64_t count, int64_t kc,
                              float* panel, int64_t width) {
  int64_t k_done = 0;
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<T, float>) {
    for (; k_done + 16 <= kc; k_done += 16) {
      for (int64_t first = 0; first < width; first += 16) {
        const int64_t present = count - first < 16 ? count - first : 16;
        const int64_t lanes = width - first < 16 ? width - first : 16;
        // Slots with no line read nothing: any valid address will do.
        const float* src = present > 0 ? lines + first * ld + k_done : lines;
        transpose16x16(src, ld, panel + k_done * width + first, width,
                       static_cast<int>(present > 0 ? present : 0), static_cast<int>(lanes));
      }
    }
  }
#endif
  return k_done;
}

/// Packs rows [0, mc) x columns [0, kc) of a into panels of kMR rows:
/// out[(i / kMR) * kMR * kc + k * kMR + i % kMR].
template <typename T>
void packA(View<T> a, int64_t mc, int64_t kc, float* __restrict out) {
  for (int64_t i0 = 0; i0 < mc; i0 += kMR) {
    int64_t rows = mc - i0 < kMR ? mc - i0 : kMR;
    float* panel = out + i0 * kc;
    if (a.cs == 1) {
      // Row-major A: read each row contiguously, write with stride kMR.
      const int64_t k_done = packLinesByTransposes(&a.at(i0, 0), a.rs, rows, kc, panel, kMR);
      for (int64_t i = 0; i < rows; ++i) {
        const T* row = &a.at(i0 + i, 0);
        for (int64_t k = k_done; k < kc; ++k) panel[k * kMR + i] = toFloat(row[k]);
      }
      for (int64_t i = rows; i < kMR; ++i)
        for (int64_t k = k_done; k < kc; ++k) panel[k * kMR + i] = 0.0f;
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
  if (b.cs == 1) {
    // Row-major B: row by row across the panels, so B is read in order (a
    // panel at a time reads 128 bytes per row, rows apart: 13% of a 128 x
    // 784 x 1152 product went to that).
    for (int64_t k = 0; k < kc; ++k) {
      const T* row = &b.at(k, 0);
      for (int64_t j0 = 0; j0 < nc; j0 += kNR) {
        const T* src = row + j0;
        float* dst = out + j0 * kc + k * kNR;
        int64_t cols = nc - j0 < kNR ? nc - j0 : kNR;
        if (cols < kNR) {
          for (int64_t j = 0; j < cols; ++j) dst[j] = toFloat(src[j]);
          for (int64_t j = cols; j < kNR; ++j) dst[j] = 0.0f;
        } else if constexpr (std::is_same_v<T, float>) {
          // Explicit vectors: GCC makes the plain loop a memmove call.
          for (int v = 0; v < kNR; v += kVec) vstoreu(dst + v, vloadu(src + v));
        } else {
#pragma GCC unroll 4
          for (int j = 0; j < kNR; ++j) dst[j] = toFloat(src[j]);
        }
      }
    }
    return;
  }
  for (int64_t j0 = 0; j0 < nc; j0 += kNR) {
    int64_t cols = nc - j0 < kNR ? nc - j0 : kNR;
    float* panel = out + j0 * kc;
    // Column-major (transposed) or general B: read down each column. A
    // transposed B (nn.Linear's weight) has contiguous columns.
    const int64_t k_done =
        b.rs == 1 ? packLinesByTransposes(&b.at(0, j0), b.cs, cols, kc, panel, kNR) : 0;
    for (int64_t j = 0; j < cols; ++j) {
      const T* col = &b.at(0, j0 + j);
      for (int64_t k = k_done; k < kc; ++k) panel[k * kNR + j] = toFloat(col[k * b.rs]);
    }
    for (int64_t j = cols; j < kNR; ++j)
      for (int64_t k = k_done; k < kc; ++k) panel[k * kNR + j] = 0.0f;
  }
}

}  // namespace maia_gemm
