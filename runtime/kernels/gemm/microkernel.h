// The register-blocked fp32 microkernel: a kMR x kNR tile of C from packed
// micro-panels of A (kMR floats per k) and B (kNR floats per k).
//
// Each k step loads two vectors of B, broadcasts kMR elements of A and does
// 2 * kMR independent FMAs into accumulators that stay in registers:
//   AVX-512 (x86-64-v4): 14 x 32, 28 zmm accumulators + 2 B + 1 A of 32.
//   AVX2    (x86-64-v3):  6 x 16, 12 ymm accumulators + 2 B + 1 A of 16.
// Enough independent FMAs to cover the FMA latency (4 cycles x 2 pipes on
// Zen 5 needs >= 8), and few loads per FMA (16 per 28 with AVX-512).
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace maia_gemm {

#if defined(__AVX512F__)
using vfloat = __m512;
constexpr int kVec = 16;
constexpr int kMR = 14;
inline vfloat vzero() { return _mm512_setzero_ps(); }
inline vfloat vset1(float x) { return _mm512_set1_ps(x); }
inline vfloat vload(const float* p) { return _mm512_load_ps(p); }
inline vfloat vloadu(const float* p) { return _mm512_loadu_ps(p); }
inline void vstoreu(float* p, vfloat v) { _mm512_storeu_ps(p, v); }
inline vfloat vfma(vfloat a, vfloat b, vfloat c) { return _mm512_fmadd_ps(a, b, c); }
inline vfloat vmul(vfloat a, vfloat b) { return _mm512_mul_ps(a, b); }
#elif defined(__AVX2__) && defined(__FMA__)
using vfloat = __m256;
constexpr int kVec = 8;
constexpr int kMR = 6;
inline vfloat vzero() { return _mm256_setzero_ps(); }
inline vfloat vset1(float x) { return _mm256_set1_ps(x); }
inline vfloat vload(const float* p) { return _mm256_load_ps(p); }
inline vfloat vloadu(const float* p) { return _mm256_loadu_ps(p); }
inline void vstoreu(float* p, vfloat v) { _mm256_storeu_ps(p, v); }
inline vfloat vfma(vfloat a, vfloat b, vfloat c) { return _mm256_fmadd_ps(a, b, c); }
inline vfloat vmul(vfloat a, vfloat b) { return _mm256_mul_ps(a, b); }
#else
#error "the GEMM kernels need AVX-512 (x86-64-v4) or AVX2+FMA (x86-64-v3)"
#endif

constexpr int kNR = 2 * kVec;

/// c[i * ldc + j] = alpha * sum_k a[k * kMR + i] * b[k * ldb + j] + beta * c[...]
/// over the full kMR x kNR tile, unit column stride. beta == 0 never reads
/// c (it may hold NaN). a is a packed panel; b a packed panel (ldb = kNR) or
/// kNR columns of a row-major B read in place (ldb = its row stride).
inline void microKernel(int64_t kc, const float* __restrict a, const float* __restrict b,
                        int64_t ldb, float* __restrict c, int64_t ldc, float alpha, float beta) {
  vfloat acc[kMR][2];
#pragma GCC unroll 16
  for (int i = 0; i < kMR; ++i) {
    acc[i][0] = acc[i][1] = vzero();
    // The tile of C is read or written only after the k loop: fetch its
    // lines before the loop so the stores do not wait for L2/L3.
    _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc + kNR - 1), _MM_HINT_T0);
  }
  // Unrolled by 2, not more: at 4, GCC spills accumulators of the AVX2
  // kernel; 2 keeps all of them in registers for both ISAs.
#pragma GCC unroll 2
  for (int64_t k = 0; k < kc; ++k) {
    vfloat b0 = vloadu(b), b1 = vloadu(b + kVec);
#pragma GCC unroll 16
    for (int i = 0; i < kMR; ++i) {
      vfloat ai = vset1(a[i]);
      acc[i][0] = vfma(ai, b0, acc[i][0]);
      acc[i][1] = vfma(ai, b1, acc[i][1]);
    }
    a += kMR;
    b += ldb;
  }
  vfloat va = vset1(alpha);
  if (beta == 0.0f) {
#pragma GCC unroll 16
    for (int i = 0; i < kMR; ++i) {
      vstoreu(c + i * ldc, vmul(va, acc[i][0]));
      vstoreu(c + i * ldc + kVec, vmul(va, acc[i][1]));
    }
  } else {
    vfloat vb = vset1(beta);
#pragma GCC unroll 16
    for (int i = 0; i < kMR; ++i) {
      float* row = c + i * ldc;
      vstoreu(row, vfma(va, acc[i][0], vmul(vb, vloadu(row))));
      vstoreu(row + kVec, vfma(va, acc[i][1], vmul(vb, vloadu(row + kVec))));
    }
  }
}

}  // namespace maia_gemm
