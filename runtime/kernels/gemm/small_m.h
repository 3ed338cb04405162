// The fp32 GEMM for a few rows (M <= kSmallM): nn.Linear at batch 1-4, and
// matrix-vector products. The blocked path packs all of B for those few
// rows and pads M to a kMR-row tile, so at M = 1 it spends its time packing
// and multiplying zeros (a 256 x 256 linear took 15 us). Here B is read
// once, in place, by the loop that suits its layout:
//   B with unit row stride (nn.Linear's weight, B[k][j] = W[j][k]): each
//     element of C is a dot product along K of a row of A and a row of W;
//   B with unit column stride (row-major B): each row of C is a sum over K
//     of rows of B scaled by elements of A.
#pragma once

#include <algorithm>
#include <cstdint>

#include "blocked.h"
#include "microkernel.h"
#include "scratch.h"

namespace maia_gemm {

constexpr int64_t kSmallM = 4;

/// Vector accumulators the small-M loops keep live: half the register file,
/// leaving room for the loaded operands.
constexpr int kSmallMAccumulators = kVec == 16 ? 16 : 8;

#if defined(__AVX512F__)
// GCC 12 flags the deliberately undefined pass-through operand of the
// extract intrinsics inside _mm512_reduce_add_ps as uninitialized (a false
// positive: GCC bug 105593, as in pack.h).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
inline float horizontalSum(vfloat v) { return _mm512_reduce_add_ps(v); }
#pragma GCC diagnostic pop
#else
inline float horizontalSum(vfloat v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
#endif

inline void storeScaled(float* c, float sum, float alpha, float beta) {
  *c = beta == 0.0f ? alpha * sum : alpha * sum + beta * *c;
}

/// C[kRows x n] for B with unit row stride: kCols dot products of length k
/// at a time, each against kRows contiguous rows of A (a[i], unit stride).
template <int kRows, int kCols>
void smallMDotK(const Problem<float>& p, const float* const* a) {
  const int64_t k_vec = p.k / kVec * kVec;
  int64_t j0 = 0;
  auto columns = [&](auto width) {
    constexpr int kWidth = decltype(width)::value;
    const float* w[kWidth];
    for (int jj = 0; jj < kWidth; ++jj) w[jj] = &p.b.at(0, j0 + jj);
    vfloat acc[kRows][kWidth];
    for (int i = 0; i < kRows; ++i)
      for (int jj = 0; jj < kWidth; ++jj) acc[i][jj] = vzero();
    for (int64_t kk = 0; kk < k_vec; kk += kVec) {
      vfloat av[kRows];
      for (int i = 0; i < kRows; ++i) av[i] = vloadu(a[i] + kk);
      for (int jj = 0; jj < kWidth; ++jj) {
        vfloat bv = vloadu(w[jj] + kk);
        for (int i = 0; i < kRows; ++i) acc[i][jj] = vfma(av[i], bv, acc[i][jj]);
      }
    }
    for (int i = 0; i < kRows; ++i)
      for (int jj = 0; jj < kWidth; ++jj) {
        float sum = horizontalSum(acc[i][jj]);
        for (int64_t kk = k_vec; kk < p.k; ++kk) sum += a[i][kk] * w[jj][kk];
        storeScaled(p.c + i * p.rsc + (j0 + jj) * p.csc, sum, p.alpha, p.beta);
      }
  };
  for (; j0 + kCols <= p.n; j0 += kCols) columns(std::integral_constant<int, kCols>{});
  for (; j0 < p.n; ++j0) columns(std::integral_constant<int, 1>{});
}

/// C[kRows x n] for B with unit column stride: kVectors vectors of columns
/// of C at a time, accumulated over k from rows of B in place.
template <int kRows, int kVectors>
void smallMRowsOfB(const Problem<float>& p) {
  constexpr int64_t kBlock = int64_t{kVectors} * kVec;
  int64_t j0 = 0;
  for (; j0 + kBlock <= p.n; j0 += kBlock) {
    vfloat acc[kRows][kVectors];
    for (int i = 0; i < kRows; ++i)
      for (int v = 0; v < kVectors; ++v) acc[i][v] = vzero();
    for (int64_t kk = 0; kk < p.k; ++kk) {
      const float* brow = &p.b.at(kk, j0);
      vfloat bv[kVectors];
      for (int v = 0; v < kVectors; ++v) bv[v] = vloadu(brow + v * kVec);
      for (int i = 0; i < kRows; ++i) {
        vfloat ai = vset1(p.a.at(i, kk));
        for (int v = 0; v < kVectors; ++v) acc[i][v] = vfma(ai, bv[v], acc[i][v]);
      }
    }
    alignas(64) float lanes[kVec];
    for (int i = 0; i < kRows; ++i)
      for (int v = 0; v < kVectors; ++v) {
        vstoreu(lanes, acc[i][v]);
        for (int l = 0; l < kVec; ++l)
          storeScaled(p.c + i * p.rsc + (j0 + v * kVec + l) * p.csc, lanes[l], p.alpha, p.beta);
      }
  }
  // The last columns (fewer than a block): scalar, in the same order over k.
  for (int64_t i = 0; i < kRows; ++i)
    for (int64_t j = j0; j < p.n; ++j) {
      float sum = 0.0f;
      for (int64_t kk = 0; kk < p.k; ++kk) sum += p.a.at(i, kk) * p.b.at(kk, j);
      storeScaled(p.c + i * p.rsc + j * p.csc, sum, p.alpha, p.beta);
    }
}

template <int kRows>
void smallMRows(const Problem<float>& p, Scratch& s) {
  if (p.b.rs == 1) {
    // Dot products along K need rows of A with unit stride: copy the others.
    const float* rows[kRows];
    float* copy = p.a.cs == 1 ? nullptr : s.a.get(kRows * p.k);
    for (int i = 0; i < kRows; ++i) {
      if (copy == nullptr) {
        rows[i] = &p.a.at(i, 0);
        continue;
      }
      for (int64_t kk = 0; kk < p.k; ++kk) copy[i * p.k + kk] = p.a.at(i, kk);
      rows[i] = copy + i * p.k;
    }
    constexpr int kCols = std::min(8, kSmallMAccumulators / kRows);
    smallMDotK<kRows, kCols>(p, rows);
  } else {
    constexpr int kVectors = std::max(1, std::min(4, kSmallMAccumulators / kRows));
    smallMRowsOfB<kRows, kVectors>(p);
  }
}

/// Whether the small-M path runs this product: few rows, and B read along
/// one of its unit strides.
inline bool takesSmallMPath(const Problem<float>& p) {
  return p.m <= kSmallM && (p.b.rs == 1 || p.b.cs == 1);
}

inline void runSmallM(const Problem<float>& p, Scratch& s) {
  switch (p.m) {
    case 1: return smallMRows<1>(p, s);
    case 2: return smallMRows<2>(p, s);
    case 3: return smallMRows<3>(p, s);
    default: return smallMRows<4>(p, s);
  }
}

}  // namespace maia_gemm
