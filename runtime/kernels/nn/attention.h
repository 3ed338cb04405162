// Fused scaled dot product attention (FlashAttention-2 style) over
// (batch, heads, seq, head_dim) memrefs of any strides, for
// runtime/torch/csrc/ops/Attention.cpp.
//
// Forward: a work unit is a block of kBlockQ queries of one (batch, head). It
// walks the keys in blocks of kBlockK with an online softmax (running row max
// and sum; the partial output is rescaled when the max grows), so the (seq_q,
// seq_k) score matrix never exists; it saves the logsumexp of each row for
// the backward. Causal attention (top-left aligned, as torch's: query i sees
// keys j <= i) stops at the diagonal block. Blocks are computed in float32
// whatever the storage type: q, k, v are converted into per-thread scratch
// (so any strides cost one gather per block, not per product) and the
// products run in a register tile (AVX-512 8x16 in the x86-64-v4 binary, AVX2
// 4x16 in the v3 one) whose left operand may be read transposed (broadcasts
// cost the same from any layout). Each kernel keeps the layout of its scores
// (S or S^T) such that the block it reloads per step is a row-major copy and
// the transposed copy is made once per unit (measured: per-step transposed
// loads made forward 1.14x and forward+backward 1.23x slower).
//
// Backward (FlashAttention-2, probabilities recomputed from the logsumexp),
// never two programs writing one gradient: sdpa_bwd, a unit is a whole
// (batch, kv head): it walks the key blocks, each against the query blocks
// of every query head of its group (grouped-query attention), accumulating
// dK and dV per key block and dQ in the program's scratch (five products
// per block pair). When there are too few (batch, kv head) pairs to fill
// the cores, two kernels over blocks instead: sdpa_bwd_kv (a unit is a key
// block: dK, dV) and sdpa_bwd_q (a unit is a query block: dQ), which
// recompute S and dP twice (seven products). delta = rowsum(dO * O) comes
// from the caller.
//
// attn_bias is an additive mask of the storage type, broadcast to
// (batch, heads, seq_q, seq_k) through zero strides (has_bias == 0: none).
// A row whose scores are all -inf gets output 0 and logsumexp +inf (its
// probabilities recompute to 0 in the backward).
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include <maia/kernel_abi.h>

#include "../gemm/scratch.h"
#include "nn.h"
#include "scalar_types.h"

namespace maia_attention {

using maia_eager::load;
using maia_eager::store;
using maia_kernel::memref;
using maia_kernel::MemRef;
using maia_kernel::scalar;

constexpr int64_t kBlockQ = 64;
constexpr int64_t kBlockK = 64;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

/// n rounded up to whole 16-float tiles: the width of every scratch row, so
/// the register tile never needs a column tail (pad columns hold zeros).
inline int64_t padded(int64_t n) { return (n + 15) / 16 * 16; }

/// c[r][0:16] (+)= sum_p A(r, p) * b[p][0:16] for R rows, where A(r, p) is
/// a[r * lda + p], or a[p * lda + r] when TransA: broadcasts read any
/// layout at the same cost, so a transposed left operand needs no copy.
/// AVX-512 (the x86-64-v4 binary): one zmm per row, 8 rows; AVX2: two ymm
/// per row, 4 rows (6 rows measured 1.5x slower: spills).
#if defined(__AVX512F__)
constexpr int kTileRows = 8;
/// Columns [0, 16 * V) of R rows: V zmm accumulators per row.
template <int R, bool TransA, int V = 1>
inline void tile(float* c, int64_t ldc, const float* a, int64_t lda, const float* b,
                 int64_t ldb, int64_t k, bool accumulate) {
  __m512 acc[R][V];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v)
      acc[r][v] = accumulate ? _mm512_loadu_ps(c + r * ldc + 16 * v) : _mm512_setzero_ps();
  for (int64_t p = 0; p < k; ++p) {
    __m512 bv[V];
    for (int v = 0; v < V; ++v) bv[v] = _mm512_loadu_ps(b + p * ldb + 16 * v);
    for (int r = 0; r < R; ++r) {
      const __m512 av = _mm512_set1_ps(TransA ? a[p * lda + r] : a[r * lda + p]);
      for (int v = 0; v < V; ++v) acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) _mm512_storeu_ps(c + r * ldc + 16 * v, acc[r][v]);
}
#else
constexpr int kTileRows = 4;
template <int R, bool TransA>
inline void tile(float* c, int64_t ldc, const float* a, int64_t lda, const float* b,
                 int64_t ldb, int64_t k, bool accumulate) {
  __m256 c0[R], c1[R];
  for (int r = 0; r < R; ++r) {
    c0[r] = accumulate ? _mm256_loadu_ps(c + r * ldc) : _mm256_setzero_ps();
    c1[r] = accumulate ? _mm256_loadu_ps(c + r * ldc + 8) : _mm256_setzero_ps();
  }
  for (int64_t p = 0; p < k; ++p) {
    const __m256 b0 = _mm256_loadu_ps(b + p * ldb), b1 = _mm256_loadu_ps(b + p * ldb + 8);
    for (int r = 0; r < R; ++r) {
      const __m256 av = _mm256_broadcast_ss(TransA ? a + p * lda + r : a + r * lda + p);
      c0[r] = _mm256_fmadd_ps(av, b0, c0[r]);
      c1[r] = _mm256_fmadd_ps(av, b1, c1[r]);
    }
  }
  for (int r = 0; r < R; ++r) {
    _mm256_storeu_ps(c + r * ldc, c0[r]);
    _mm256_storeu_ps(c + r * ldc + 8, c1[r]);
  }
}
#endif

/// The tile for the m % kTileRows rows left over.
template <int R, bool TransA, int V = 1>
inline void tailTile(int rows, float* c, int64_t ldc, const float* a, int64_t lda,
                     const float* b, int64_t ldb, int64_t k, bool accumulate) {
  if constexpr (R > 0) {
    if (rows == R) {
      if constexpr (V == 1) return tile<R, TransA>(c, ldc, a, lda, b, ldb, k, accumulate);
#if defined(__AVX512F__)
      else return tile<R, TransA, V>(c, ldc, a, lda, b, ldb, k, accumulate);
#endif
    }
    tailTile<R - 1, TransA, V>(rows, c, ldc, a, lda, b, ldb, k, accumulate);
  }
}

/// C (m x n) = or += A (m x k) @ B (k x n), float32 scratch, B and C
/// row-major with n a multiple of 16; A row-major (lda), or stored
/// transposed (k x m, lda) when TransA.
template <bool TransA = false>
inline void matmul(float* c, int64_t ldc, const float* a, int64_t lda, const float* b,
                   int64_t ldb, int64_t m, int64_t n, int64_t k, bool accumulate) {
  auto at = [&](int64_t i) { return TransA ? a + i : a + i * lda; };
  int64_t j = 0;
#if defined(__AVX512F__)
  // 32 columns at a time: 16 accumulators, half the broadcasts per FMA.
  for (; j + 32 <= n; j += 32) {
    int64_t i = 0;
    for (; i + kTileRows <= m; i += kTileRows)
      tile<kTileRows, TransA, 2>(c + i * ldc + j, ldc, at(i), lda, b + j, ldb, k, accumulate);
    if (i < m)
      tailTile<kTileRows - 1, TransA, 2>(static_cast<int>(m - i), c + i * ldc + j, ldc, at(i),
                                         lda, b + j, ldb, k, accumulate);
  }
#endif
  for (; j < n; j += 16) {
    int64_t i = 0;
    for (; i + kTileRows <= m; i += kTileRows)
      tile<kTileRows, TransA>(c + i * ldc + j, ldc, at(i), lda, b + j, ldb, k, accumulate);
    if (i < m)
      tailTile<kTileRows - 1, TransA>(static_cast<int>(m - i), c + i * ldc + j, ldc, at(i), lda,
                                      b + j, ldb, k, accumulate);
  }
}

/// The rows [row0, row0 + rows) of a (seq, dim) slice of a rank-4 memref.
template <typename T>
struct Slab {
  const T* base;  // element (row0, 0)
  int64_t row_stride, col_stride;
};

template <typename T>
Slab<T> slab(const MemRef<T, 4>& t, int64_t b, int64_t h, int64_t row0) {
  return {t.aligned + t.offset + b * t.strides[0] + h * t.strides[1] + row0 * t.strides[2],
          t.strides[2], t.strides[3]};
}

/// dst (rows x ld, row-major) = alpha * src rows, columns [cols, ld) and
/// rows [rows, max_rows) zero.
/// d[0:n] = alpha * s[0:n] as float32; 16-bit types 8 at a time (the
/// scalar conversion made bfloat16 blocks slower than float32 ones).
template <typename T>
inline void convertRow(float* d, const T* s, int64_t n, float alpha) {
  int64_t c = 0;
  const __m256 va = _mm256_set1_ps(alpha);
  for (; c + 8 <= n; c += 8) {
    __m256 v;
    if constexpr (std::is_same_v<T, float>) {
      v = _mm256_loadu_ps(s + c);
    } else {
      const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + c));
      if constexpr (std::is_same_v<T, maia_eager::Half>)
        v = _mm256_cvtph_ps(bits);
      else
        v = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bits), 16));
    }
    _mm256_storeu_ps(d + c, _mm256_mul_ps(va, v));
  }
  for (; c < n; ++c) d[c] = alpha * load(s[c]);
}

template <typename T>
void loadRows(float* dst, int64_t ld, Slab<T> src, int64_t rows, int64_t max_rows,
              int64_t cols, float alpha) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* s = src.base + r * src.row_stride;
    float* d = dst + r * ld;
    if (src.col_stride == 1) {
      convertRow(d, s, cols, alpha);
    } else {
      for (int64_t c = 0; c < cols; ++c) d[c] = alpha * load(s[c * src.col_stride]);
    }
    for (int64_t c = cols; c < ld; ++c) d[c] = 0.0f;
  }
  for (int64_t r = rows; r < max_rows; ++r) std::memset(dst + r * ld, 0, ld * sizeof(float));
}

/// dst (cols x ld) = alpha * transposed src rows: dst[c][r] = src[r][c];
/// columns [rows, ld) zero.
template <typename T>
void loadTransposed(float* dst, int64_t ld, Slab<T> src, int64_t rows, int64_t cols,
                    float alpha) {
  for (int64_t c = 0; c < cols; ++c)
    for (int64_t r = rows; r < ld; ++r) dst[c * ld + r] = 0.0f;
  for (int64_t r = 0; r < rows; ++r) {
    const T* s = src.base + r * src.row_stride;
    for (int64_t c = 0; c < cols; ++c) dst[c * ld + r] = alpha * load(s[c * src.col_stride]);
  }
}

/// Writes rows x cols of src (row-major, ld) times alpha to dst.
template <typename T>
void storeRows(const MemRef<T, 4>& out, int64_t b, int64_t h, int64_t row0, const float* src,
               int64_t ld, int64_t rows, int64_t cols, float alpha) {
  T* base = out.aligned + out.offset + b * out.strides[0] + h * out.strides[1] +
            row0 * out.strides[2];
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      base[r * out.strides[2] + c * out.strides[3]] = store<T>(alpha * src[r * ld + c]);
}

/// The shared shape and options of the three kernels.
template <typename T>
struct Problem {
  const MemRef<T, 4>& q;
  const MemRef<T, 4>& k;
  const MemRef<T, 4>& v;
  const MemRef<T, 4>& bias;
  float scale;
  bool causal, has_bias;
  int64_t batch, heads, kv_heads, seq_q, seq_k, dim, dim_v;

  Problem(const MemRef<T, 4>& q_, const MemRef<T, 4>& k_, const MemRef<T, 4>& v_,
          const MemRef<T, 4>& bias_, double scale_, int64_t causal_, int64_t has_bias_)
      : q(q_), k(k_), v(v_), bias(bias_), scale(static_cast<float>(scale_)),
        causal(causal_ != 0), has_bias(has_bias_ != 0), batch(q_.sizes[0]),
        heads(q_.sizes[1]), kv_heads(k_.sizes[1]), seq_q(q_.sizes[2]), seq_k(k_.sizes[2]),
        dim(q_.sizes[3]), dim_v(v_.sizes[3]) {}

  int64_t kvHead(int64_t h) const { return h / (heads / kv_heads); }
  /// Keys that query row i may see end here (exclusive).
  int64_t keyLimit(int64_t i) const { return causal ? std::min(seq_k, i + 1) : seq_k; }

  /// s[r][c] := scores of block rows (queries i0 + r) and columns (keys
  /// j0 + c) with bias and masks applied: -inf beyond the keys a row may
  /// see. s already holds the scaled products.
  void maskScores(float* s, int64_t ld, int64_t b, int64_t h, int64_t i0, int64_t rows,
                  int64_t j0, int64_t cols) const {
    for (int64_t r = 0; r < rows; ++r) {
      float* row = s + r * ld;
      const int64_t limit = std::clamp<int64_t>(keyLimit(i0 + r) - j0, 0, cols);
      if (has_bias) {
        const T* bb = bias.aligned + bias.offset + b * bias.strides[0] + h * bias.strides[1] +
                      (i0 + r) * bias.strides[2] + j0 * bias.strides[3];
        for (int64_t c = 0; c < limit; ++c) row[c] += load(bb[c * bias.strides[3]]);
      }
      for (int64_t c = limit; c < ld; ++c) row[c] = kNegInf;
    }
  }

  /// The same for transposed scores: st[c][r] for key j0 + c and query
  /// i0 + r, c < cols; -inf for queries that do not see the key and for
  /// r >= rows.
  void maskScoresTransposed(float* st, int64_t ld, int64_t b, int64_t h, int64_t i0,
                            int64_t rows, int64_t j0, int64_t cols) const {
    for (int64_t c = 0; c < cols; ++c) {
      float* row = st + c * ld;
      // Query i sees key j when j < keyLimit(i), i.e. (causal) i >= j.
      const int64_t first = causal ? std::clamp<int64_t>(j0 + c - i0, 0, rows) : 0;
      for (int64_t r = 0; r < first; ++r) row[r] = kNegInf;
      if (has_bias) {
        const T* bb = bias.aligned + bias.offset + b * bias.strides[0] + h * bias.strides[1] +
                      i0 * bias.strides[2] + (j0 + c) * bias.strides[3];
        for (int64_t r = first; r < rows; ++r) row[r] += load(bb[r * bias.strides[2]]);
      }
      for (int64_t r = rows; r < ld; ++r) row[r] = kNegInf;
    }
  }
};

#if defined(__AVX512F__)
/// exp of 16 floats: nn.h's exp256 (Cephes' expf) on zmm registers.
inline __m512 exp512(__m512 x) {
  const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  const __mmask16 low = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-88.0f), _CMP_LT_OQ);
  __m512 v = _mm512_min_ps(x, _mm512_set1_ps(88.3762626647949f));
  v = _mm512_max_ps(v, _mm512_set1_ps(-88.0f));
  const __m512 fx = _mm512_roundscale_ps(
      _mm512_fmadd_ps(v, _mm512_set1_ps(1.44269504088896341f), _mm512_set1_ps(0.5f)),
      _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  v = _mm512_fnmadd_ps(fx, _mm512_set1_ps(0.693359375f), v);
  v = _mm512_fnmadd_ps(fx, _mm512_set1_ps(-2.12194440e-4f), v);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, v, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, v, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, v, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, v, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, v, _mm512_set1_ps(5.0000001201e-1f));
  __m512 y = _mm512_fmadd_ps(p, _mm512_mul_ps(v, v), _mm512_add_ps(v, _mm512_set1_ps(1.0f)));
  const __m512i e = _mm512_slli_epi32(
      _mm512_add_epi32(_mm512_cvttps_epi32(fx), _mm512_set1_epi32(127)), 23);
  y = _mm512_maskz_mov_ps(static_cast<__mmask16>(~low), _mm512_mul_ps(y, _mm512_castsi512_ps(e)));
  return _mm512_mask_blend_ps(nan, y, x);
}

/// exp(x - shift) over n floats in place (n a multiple of 16); returns the sum.
inline float expShifted(float* x, int64_t n, float shift) {
  const __m512 vs = _mm512_set1_ps(shift);
  __m512 sum = _mm512_setzero_ps();
  for (int64_t j = 0; j < n; j += 16) {
    const __m512 e = exp512(_mm512_sub_ps(_mm512_loadu_ps(x + j), vs));
    _mm512_storeu_ps(x + j, e);
    sum = _mm512_add_ps(sum, e);
  }
  return _mm512_reduce_add_ps(sum);
}

/// x[j] = exp(x[j] - shift[j]) over n floats (a multiple of 16); adds x to
/// sums when given.
inline void expShiftedLanes(float* x, const float* shift, float* sums, int64_t n) {
  for (int64_t j = 0; j < n; j += 16) {
    const __m512 e = exp512(_mm512_sub_ps(_mm512_loadu_ps(x + j), _mm512_loadu_ps(shift + j)));
    _mm512_storeu_ps(x + j, e);
    if (sums != nullptr) _mm512_storeu_ps(sums + j, _mm512_add_ps(_mm512_loadu_ps(sums + j), e));
  }
}
#else
/// exp(x - shift) over n floats in place (n a multiple of 8); returns the sum.
inline float expShifted(float* x, int64_t n, float shift) {
  const __m256 vs = _mm256_set1_ps(shift);
  __m256 sum = _mm256_setzero_ps();
  for (int64_t j = 0; j < n; j += 8) {
    __m256 e = maia_nn::exp256(_mm256_sub_ps(_mm256_loadu_ps(x + j), vs));
    _mm256_storeu_ps(x + j, e);
    sum = _mm256_add_ps(sum, e);
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, sum);
  float total = 0;
  for (float l : lanes) total += l;
  return total;
}

/// x[j] = exp(x[j] - shift[j]) over n floats (a multiple of 8); adds x to
/// sums when given.
inline void expShiftedLanes(float* x, const float* shift, float* sums, int64_t n) {
  for (int64_t j = 0; j < n; j += 8) {
    __m256 e = maia_nn::exp256(_mm256_sub_ps(_mm256_loadu_ps(x + j), _mm256_loadu_ps(shift + j)));
    _mm256_storeu_ps(x + j, e);
    if (sums != nullptr) _mm256_storeu_ps(sums + j, _mm256_add_ps(_mm256_loadu_ps(sums + j), e));
  }
}
#endif

/// x[j] = p[j] * (x[j] - delta[j]) over n floats (a multiple of 8): dS from
/// dP, P and delta, per lane.
inline void softmaxGradLanes(float* x, const float* p, const float* delta, int64_t n) {
  for (int64_t j = 0; j < n; j += 8) {
    __m256 d = _mm256_sub_ps(_mm256_loadu_ps(x + j), _mm256_loadu_ps(delta + j));
    _mm256_storeu_ps(x + j, _mm256_mul_ps(_mm256_loadu_ps(p + j), d));
  }
}

/// The same with one delta for the whole row.
inline void softmaxGradRow(float* x, const float* p, float delta, int64_t n) {
  const __m256 vd = _mm256_set1_ps(delta);
  for (int64_t j = 0; j < n; j += 8) {
    __m256 d = _mm256_sub_ps(_mm256_loadu_ps(x + j), vd);
    _mm256_storeu_ps(x + j, _mm256_mul_ps(_mm256_loadu_ps(p + j), d));
  }
}

/// Per-thread float32 blocks, one buffer each.
struct KernelScratch {
  maia_gemm::ScratchBuffer buffers[10];
};

inline KernelScratch& threadScratch() {
  static thread_local KernelScratch scratch;
  return scratch;
}

/// Row values (logsumexp or delta) of rows [i0, i0 + rows) of (b, h) into
/// buffer, padded with `pad` to kBlockQ.
inline const float* rowValues(const MemRef<float, 3>& t, int64_t b, int64_t h, int64_t i0,
                              int64_t rows, float pad, float* buffer) {
  const float* base =
      t.aligned + t.offset + b * t.strides[0] + h * t.strides[1] + i0 * t.strides[2];
  for (int64_t r = 0; r < rows; ++r) buffer[r] = base[r * t.strides[2]];
  for (int64_t r = rows; r < kBlockQ; ++r) buffer[r] = pad;
  return buffer;
}

// The forward keeps scores transposed, S^T = K (scale Q)^T (keys x queries):
// (scale Q)^T is converted once per unit, each key block is a row-major
// load, and P V reads S^T as a transposed left operand. The online softmax
// runs per query, i.e. per lane of S^T's rows.
//
// args: out (T, 4), logsumexp (f32, 3), q, k, v, bias (T, 4), scale (f64),
// is_causal, has_bias.
template <typename T>
void sdpaForward(void* const* args, const maia_grid_t* grid) {
  const auto& out = memref<T, 4>(args, 0);
  const auto& lse = memref<float, 3>(args, 1);
  const Problem<T> p(memref<T, 4>(args, 2), memref<T, 4>(args, 3), memref<T, 4>(args, 4),
                     memref<T, 4>(args, 5), scalar<double>(args, 6), scalar<int64_t>(args, 7),
                     scalar<int64_t>(args, 8));
  const int64_t dvp = padded(p.dim_v);
  const int64_t q_blocks = (p.seq_q + kBlockQ - 1) / kBlockQ;
  maia_gemm::ScratchBuffer* buf = threadScratch().buffers;
  float* qt = buf[0].get(p.dim * kBlockQ);      // (scale Q)^T
  float* kb = buf[1].get(kBlockK * p.dim);      // K block
  float* vb = buf[2].get(kBlockK * dvp);        // V block
  float* st = buf[3].get(kBlockK * kBlockQ);    // S^T, then P^T
  float* o = buf[4].get(kBlockQ * dvp);         // unnormalized output
  alignas(32) float row_max[kBlockQ], row_sum[kBlockQ], new_max[kBlockQ], shift[kBlockQ],
      alpha[kBlockQ];

  auto slice = maia_kernel::programSlice(grid, p.batch * p.heads * q_blocks);
  for (int64_t unit = slice.begin; unit < slice.end; ++unit) {
    const int64_t bh = unit / q_blocks, b = bh / p.heads, h = bh % p.heads;
    const int64_t hk = p.kvHead(h);
    const int64_t i0 = (unit % q_blocks) * kBlockQ, rows = std::min(kBlockQ, p.seq_q - i0);
    loadTransposed(qt, kBlockQ, slab(p.q, b, h, i0), rows, p.dim, p.scale);
    std::memset(o, 0, rows * dvp * sizeof(float));
    for (int64_t r = 0; r < kBlockQ; ++r) {
      row_max[r] = kNegInf;
      row_sum[r] = 0;
    }
    const int64_t key_end = p.keyLimit(i0 + rows - 1);
    for (int64_t j0 = 0; j0 < key_end; j0 += kBlockK) {
      const int64_t cols = std::min(kBlockK, key_end - j0);
      loadRows(kb, p.dim, slab(p.k, b, hk, j0), cols, cols, p.dim, 1.0f);
      loadRows(vb, dvp, slab(p.v, b, hk, j0), cols, cols, p.dim_v, 1.0f);
      matmul(st, kBlockQ, kb, p.dim, qt, kBlockQ, cols, kBlockQ, p.dim, false);
      p.maskScoresTransposed(st, kBlockQ, b, h, i0, rows, j0, cols);
      for (int64_t r = 0; r < kBlockQ; r += 8)
        _mm256_store_ps(new_max + r, _mm256_load_ps(row_max + r));
      for (int64_t c = 0; c < cols; ++c)
        for (int64_t r = 0; r < kBlockQ; r += 8)
          _mm256_store_ps(new_max + r, _mm256_max_ps(_mm256_load_ps(new_max + r),
                                                     _mm256_loadu_ps(st + c * kBlockQ + r)));
      // alpha = exp(old max - new max) rescales what the row has so far. A
      // query that sees no key yet keeps max -inf and is shifted by 0 (its
      // exps and alpha are 0), never by -inf - -inf.
      for (int64_t r = 0; r < kBlockQ; r += 8) {
        const __m256 m = _mm256_load_ps(new_max + r);
        const __m256 none = _mm256_cmp_ps(m, _mm256_set1_ps(kNegInf), _CMP_EQ_OQ);
        const __m256 sh = _mm256_blendv_ps(m, _mm256_setzero_ps(), none);
        const __m256 a = maia_nn::exp256(_mm256_sub_ps(_mm256_load_ps(row_max + r), sh));
        _mm256_store_ps(alpha + r, a);
        _mm256_store_ps(shift + r, sh);
        _mm256_store_ps(row_max + r, m);
        _mm256_store_ps(row_sum + r, _mm256_mul_ps(_mm256_load_ps(row_sum + r), a));
      }
      for (int64_t c = 0; c < cols; ++c)
        expShiftedLanes(st + c * kBlockQ, shift, row_sum, kBlockQ);
      for (int64_t r = 0; r < rows; ++r) {
        if (alpha[r] == 1.0f) continue;
        float* orow = o + r * dvp;
        for (int64_t c = 0; c < dvp; ++c) orow[c] *= alpha[r];
      }
      // O += P V, P = (P^T)^T.
      matmul<true>(o, dvp, st, kBlockQ, vb, dvp, rows, dvp, cols, true);
    }
    float* lse_row = lse.aligned + lse.offset + b * lse.strides[0] + h * lse.strides[1] +
                     i0 * lse.strides[2];
    for (int64_t r = 0; r < rows; ++r) {
      const float l = row_sum[r];
      const float inv = l > 0 ? 1.0f / l : 0.0f;
      float* orow = o + r * dvp;
      for (int64_t c = 0; c < p.dim_v; ++c) orow[c] *= inv;
      lse_row[r * lse.strides[2]] =
          l > 0 ? row_max[r] + std::log(l) : std::numeric_limits<float>::infinity();
    }
    storeRows(out, b, h, i0, o, dvp, rows, p.dim_v, 1.0f);
  }
}

/// The blocks of the dK/dV backward of a program (scratch).
struct KvBlocks {
  float* kt;      // K^T of the key block
  float* vt;      // V^T
  float* qb;      // scale * Q of the query block
  float* gb;      // dO
  float* s;       // S, then P
  float* ds;      // dP, then dS
  float* dk_acc;  // dK of the key block (unscaled: Q is scaled)
  float* dv_acc;  // dV
  int64_t dp, dvp;
};

template <typename T>
KvBlocks kvBlocks(const Problem<T>& p, maia_gemm::ScratchBuffer* buf) {
  const int64_t dp = padded(p.dim), dvp = padded(p.dim_v);
  KvBlocks x;
  x.kt = buf[0].get(p.dim * kBlockK);
  x.vt = buf[1].get(p.dim_v * kBlockK);
  x.qb = buf[2].get(kBlockQ * dp);
  x.gb = buf[3].get(kBlockQ * dvp);
  x.s = buf[4].get(kBlockQ * kBlockK);
  x.ds = buf[5].get(kBlockQ * kBlockK);
  x.dk_acc = buf[6].get(kBlockK * dp);
  x.dv_acc = buf[7].get(kBlockK * dvp);
  x.dp = dp;
  x.dvp = dvp;
  return x;
}

/// One step of the dK/dV backward: key block j0 (K^T, V^T in x) against the
/// query block i0 of head h, on S = (scale Q) K^T (queries x keys):
///   P = exp(S + bias - lse), dV += P^T dO, dP = dO V^T,
///   dS = P (dP - delta), dK += dS^T (scale Q).
/// Leaves dS in x.ds for a caller that also wants dQ.
template <typename T>
void kvStep(const Problem<T>& p, const MemRef<T, 4>& dout, const MemRef<float, 3>& lse,
            const MemRef<float, 3>& delta, const KvBlocks& x, int64_t b, int64_t h, int64_t i0,
            int64_t rows, int64_t j0, int64_t cols) {
  alignas(32) float lse_buf[kBlockQ], delta_buf[kBlockQ];
  loadRows(x.qb, x.dp, slab(p.q, b, h, i0), rows, rows, p.dim, p.scale);
  loadRows(x.gb, x.dvp, slab(dout, b, h, i0), rows, rows, p.dim_v, 1.0f);
  const float* l = rowValues(lse, b, h, i0, rows, 0.0f, lse_buf);
  const float* d = rowValues(delta, b, h, i0, rows, 0.0f, delta_buf);
  matmul(x.s, kBlockK, x.qb, x.dp, x.kt, kBlockK, rows, kBlockK, p.dim, false);
  p.maskScores(x.s, kBlockK, b, h, i0, rows, j0, cols);
  for (int64_t r = 0; r < rows; ++r) expShifted(x.s + r * kBlockK, kBlockK, l[r]);
  matmul<true>(x.dv_acc, x.dvp, x.s, kBlockK, x.gb, x.dvp, cols, x.dvp, rows, true);
  matmul(x.ds, kBlockK, x.gb, x.dvp, x.vt, kBlockK, rows, kBlockK, p.dim_v, false);
  for (int64_t r = 0; r < rows; ++r)
    softmaxGradRow(x.ds + r * kBlockK, x.s + r * kBlockK, d[r], kBlockK);
  matmul<true>(x.dk_acc, x.dp, x.ds, kBlockK, x.qb, x.dp, cols, x.dp, rows, true);
}

/// Loads key block j0 of (b, hk) for kvStep and clears its accumulators.
template <typename T>
void startKeyBlock(const Problem<T>& p, const KvBlocks& x, int64_t b, int64_t hk, int64_t j0,
                   int64_t cols) {
  loadTransposed(x.kt, kBlockK, slab(p.k, b, hk, j0), cols, p.dim, 1.0f);
  loadTransposed(x.vt, kBlockK, slab(p.v, b, hk, j0), cols, p.dim_v, 1.0f);
  std::memset(x.dk_acc, 0, cols * x.dp * sizeof(float));
  std::memset(x.dv_acc, 0, cols * x.dvp * sizeof(float));
}

/// What the backward kernels read after their gradient outputs, from
/// argument `first` on: q, k, v, dout, bias (T, 4), logsumexp, delta (f32,
/// 3), scale (f64), is_causal, has_bias.
template <typename T>
struct BackwardInputs {
  Problem<T> p;
  const MemRef<T, 4>& dout;
  const MemRef<float, 3>& lse;
  const MemRef<float, 3>& delta;

  BackwardInputs(void* const* args, int first)
      : p(memref<T, 4>(args, first), memref<T, 4>(args, first + 1),
          memref<T, 4>(args, first + 2), memref<T, 4>(args, first + 4),
          scalar<double>(args, first + 7), scalar<int64_t>(args, first + 8),
          scalar<int64_t>(args, first + 9)),
        dout(memref<T, 4>(args, first + 3)),
        lse(memref<float, 3>(args, first + 5)),
        delta(memref<float, 3>(args, first + 6)) {}
};

/// The first query block that sees key j0 (causal: queries before j0 do not).
template <typename T>
int64_t firstQueryBlock(const Problem<T>& p, int64_t j0) {
  return p.causal ? j0 / kBlockQ * kBlockQ : 0;
}

// sdpa_bwd_kv: a unit is a key block of one (batch, kv head); it loops over
// the query blocks of every query head of its group (kvStep). K^T and V^T
// are converted once per unit; Q and dO are row-major loads per step.
//
// args: dk, dv (T, 4), q, k, v, dout, bias (T, 4), logsumexp, delta (f32, 3),
// scale (f64), is_causal, has_bias.
template <typename T>
void sdpaBackwardKv(void* const* args, const maia_grid_t* grid) {
  const auto& dk = memref<T, 4>(args, 0);
  const auto& dv = memref<T, 4>(args, 1);
  const BackwardInputs<T> in(args, 2);
  const Problem<T>& p = in.p;
  const auto& dout = in.dout;
  const auto& lse = in.lse;
  const auto& delta = in.delta;
  const int64_t k_blocks = (p.seq_k + kBlockK - 1) / kBlockK;
  const int64_t group = p.heads / p.kv_heads;
  const KvBlocks x = kvBlocks(p, threadScratch().buffers);

  auto slice = maia_kernel::programSlice(grid, p.batch * p.kv_heads * k_blocks);
  for (int64_t unit = slice.begin; unit < slice.end; ++unit) {
    const int64_t bh = unit / k_blocks, b = bh / p.kv_heads, hk = bh % p.kv_heads;
    const int64_t j0 = (unit % k_blocks) * kBlockK, cols = std::min(kBlockK, p.seq_k - j0);
    startKeyBlock(p, x, b, hk, j0, cols);
    for (int64_t h = hk * group; h < (hk + 1) * group; ++h)
      for (int64_t i0 = firstQueryBlock(p, j0); i0 < p.seq_q; i0 += kBlockQ)
        kvStep(p, dout, lse, delta, x, b, h, i0, std::min(kBlockQ, p.seq_q - i0), j0, cols);
    storeRows(dk, b, hk, j0, x.dk_acc, x.dp, cols, p.dim, 1.0f);
    storeRows(dv, b, hk, j0, x.dv_acc, x.dvp, cols, p.dim_v, 1.0f);
  }
}

// sdpa_bwd: all three gradients in one pass (FlashAttention-2's five
// products, where sdpa_bwd_kv + sdpa_bwd_q take seven): a unit is a whole
// (batch, kv head), so the dQ of its query heads, which every key block
// adds to, lives in the program's scratch (group x seq_q x head_dim
// floats) and no other program writes it. For when there are enough
// (batch, kv head) pairs to keep the cores busy (Attention.cpp decides).
//
// args: dq, dk, dv (T, 4), q, k, v, dout, bias (T, 4), logsumexp, delta
// (f32, 3), scale (f64), is_causal, has_bias.
template <typename T>
void sdpaBackward(void* const* args, const maia_grid_t* grid) {
  const auto& dq = memref<T, 4>(args, 0);
  const auto& dk = memref<T, 4>(args, 1);
  const auto& dv = memref<T, 4>(args, 2);
  const BackwardInputs<T> in(args, 3);
  const Problem<T>& p = in.p;
  const auto& dout = in.dout;
  const auto& lse = in.lse;
  const auto& delta = in.delta;
  const int64_t group = p.heads / p.kv_heads;
  maia_gemm::ScratchBuffer* buf = threadScratch().buffers;
  const KvBlocks x = kvBlocks(p, buf);
  float* kb = buf[8].get(kBlockK * x.dp);                  // K, row-major
  float* dq_acc = buf[9].get(group * p.seq_q * x.dp);      // dQ / scale of the group

  auto slice = maia_kernel::programSlice(grid, p.batch * p.kv_heads);
  for (int64_t unit = slice.begin; unit < slice.end; ++unit) {
    const int64_t b = unit / p.kv_heads, hk = unit % p.kv_heads;
    std::memset(dq_acc, 0, group * p.seq_q * x.dp * sizeof(float));
    for (int64_t j0 = 0; j0 < p.seq_k; j0 += kBlockK) {
      const int64_t cols = std::min(kBlockK, p.seq_k - j0);
      startKeyBlock(p, x, b, hk, j0, cols);
      loadRows(kb, x.dp, slab(p.k, b, hk, j0), cols, cols, p.dim, 1.0f);
      for (int64_t g = 0; g < group; ++g) {
        const int64_t h = hk * group + g;
        for (int64_t i0 = firstQueryBlock(p, j0); i0 < p.seq_q; i0 += kBlockQ) {
          const int64_t rows = std::min(kBlockQ, p.seq_q - i0);
          kvStep(p, dout, lse, delta, x, b, h, i0, rows, j0, cols);
          // dQ += dS K (scaled when stored).
          matmul(dq_acc + (g * p.seq_q + i0) * x.dp, x.dp, x.ds, kBlockK, kb, x.dp, rows, x.dp,
                 cols, true);
        }
      }
      storeRows(dk, b, hk, j0, x.dk_acc, x.dp, cols, p.dim, 1.0f);
      storeRows(dv, b, hk, j0, x.dv_acc, x.dvp, cols, p.dim_v, 1.0f);
    }
    for (int64_t g = 0; g < group; ++g)
      storeRows(dq, b, hk * group + g, 0, dq_acc + g * p.seq_q * x.dp, x.dp, p.seq_q, p.dim,
                p.scale);
  }
}

// sdpa_bwd_q: a unit is a query block. (scale Q)^T and dO^T are converted
// once per unit; per key block, K and V are row-major loads and the
// products run on S^T = K (scale Q)^T (keys x queries):
//   P^T = exp(S^T + bias - lse), dP^T = V dO^T, dS^T = P^T (dP^T - delta),
//   dQ += scale dS K.
//
// args: dq (T, 4), q, k, v, dout, bias (T, 4), logsumexp, delta (f32, 3),
// scale (f64), is_causal, has_bias.
template <typename T>
void sdpaBackwardQ(void* const* args, const maia_grid_t* grid) {
  const auto& dq = memref<T, 4>(args, 0);
  const Problem<T> p(memref<T, 4>(args, 1), memref<T, 4>(args, 2), memref<T, 4>(args, 3),
                     memref<T, 4>(args, 5), scalar<double>(args, 8), scalar<int64_t>(args, 9),
                     scalar<int64_t>(args, 10));
  const auto& dout = memref<T, 4>(args, 4);
  const auto& lse = memref<float, 3>(args, 6);
  const auto& delta = memref<float, 3>(args, 7);
  const int64_t dp = padded(p.dim);
  const int64_t q_blocks = (p.seq_q + kBlockQ - 1) / kBlockQ;
  maia_gemm::ScratchBuffer* buf = threadScratch().buffers;
  float* qt = buf[0].get(p.dim * kBlockQ);      // (scale Q)^T
  float* gt = buf[1].get(p.dim_v * kBlockQ);    // dO^T
  float* kb = buf[2].get(kBlockK * dp);         // K
  float* vb = buf[3].get(kBlockK * p.dim_v);    // V
  float* st = buf[4].get(kBlockK * kBlockQ);    // S^T, then P^T
  float* dst = buf[5].get(kBlockK * kBlockQ);   // dP^T, then dS^T
  float* dq_acc = buf[6].get(kBlockQ * dp);
  alignas(32) float lse_buf[kBlockQ], delta_buf[kBlockQ];

  auto slice = maia_kernel::programSlice(grid, p.batch * p.heads * q_blocks);
  for (int64_t unit = slice.begin; unit < slice.end; ++unit) {
    const int64_t bh = unit / q_blocks, b = bh / p.heads, h = bh % p.heads;
    const int64_t hk = p.kvHead(h);
    const int64_t i0 = (unit % q_blocks) * kBlockQ, rows = std::min(kBlockQ, p.seq_q - i0);
    loadTransposed(qt, kBlockQ, slab(p.q, b, h, i0), rows, p.dim, p.scale);
    loadTransposed(gt, kBlockQ, slab(dout, b, h, i0), rows, p.dim_v, 1.0f);
    // Padding queries: lse +inf makes their probabilities 0.
    const float* l = rowValues(lse, b, h, i0, rows, std::numeric_limits<float>::infinity(),
                               lse_buf);
    const float* d = rowValues(delta, b, h, i0, rows, 0.0f, delta_buf);
    std::memset(dq_acc, 0, rows * dp * sizeof(float));
    const int64_t key_end = p.keyLimit(i0 + rows - 1);
    for (int64_t j0 = 0; j0 < key_end; j0 += kBlockK) {
      const int64_t cols = std::min(kBlockK, key_end - j0);
      loadRows(kb, dp, slab(p.k, b, hk, j0), cols, cols, p.dim, 1.0f);
      loadRows(vb, p.dim_v, slab(p.v, b, hk, j0), cols, cols, p.dim_v, 1.0f);
      matmul(st, kBlockQ, kb, dp, qt, kBlockQ, cols, kBlockQ, p.dim, false);
      p.maskScoresTransposed(st, kBlockQ, b, h, i0, rows, j0, cols);
      for (int64_t c = 0; c < cols; ++c) expShiftedLanes(st + c * kBlockQ, l, nullptr, kBlockQ);
      matmul(dst, kBlockQ, vb, p.dim_v, gt, kBlockQ, cols, kBlockQ, p.dim_v, false);
      for (int64_t c = 0; c < cols; ++c)
        softmaxGradLanes(dst + c * kBlockQ, st + c * kBlockQ, d, kBlockQ);
      // dQ += dS K, dS = (dS^T)^T.
      matmul<true>(dq_acc, dp, dst, kBlockQ, kb, dp, rows, dp, cols, true);
    }
    storeRows(dq, b, h, i0, dq_acc, dp, rows, p.dim, p.scale);
  }
}

}  // namespace maia_attention
