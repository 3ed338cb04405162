// The NN kernels: softmax/log_softmax, layer_norm, nll_loss, index_select,
// index_add, embedding backward, gather and scatter (assign, add, multiply,
// amax, amin), each templated over the storage type and instantiated per
// dtype by gen_nn_kernels.py.
//
// Work is split into rows: each program owns a contiguous block of rows
// (maia_kernel::programSlice), so results never depend on the program count.
// float16/bfloat16 compute in float; sums accumulate in double (float32,
// float64) or float (16-bit types: float is already exact enough for them).
//
// Indices are int64. An index out of range executes __builtin_trap(): the
// driver turns the fault into a sticky device error that names the kernel
// and program, reported at the next synchronizing call (like CUDA's
// device-side assert); the host never waits to check indices.
#pragma once

#include <algorithm>
#include <cmath>
#include <immintrin.h>

#include <cstdint>
#include <limits>
#include <type_traits>

#include <maia/kernel_abi.h>

#include "scalar_types.h"

namespace maia_nn {

using maia_eager::BFloat16;
using maia_eager::compute_t;
using maia_eager::Half;
using maia_eager::load;
using maia_eager::store;
using maia_kernel::memref;
using maia_kernel::MemRef;
using maia_kernel::scalar;

/// Accumulator type of sums over a row.
template <typename T>
using acc_t = std::conditional_t<std::is_same_v<compute_t<T>, double> ||
                                     std::is_same_v<T, float>,
                                 double, float>;

inline void checkIndex(int64_t index, int64_t size) {
  if (index < 0 || index >= size) __builtin_trap();  // sticky device error
}

// ---------------------------------------------------------------------------
// softmax / log_softmax over dimension 1 of (outer, n, inner) memrefs.
// args: out, in, is_log. One row = one (outer, inner) pair.

/// exp of 8 floats (Cephes' expf: range reduction by ln 2, degree-6
/// polynomial; ~1 ulp). NaN stays NaN; below -88 the result is 0.
inline __m256 exp256(__m256 x) {
  const __m256 nan_mask = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
  const __m256 low_mask = _mm256_cmp_ps(x, _mm256_set1_ps(-88.0f), _CMP_LT_OQ);
  __m256 v = _mm256_min_ps(x, _mm256_set1_ps(88.3762626647949f));
  v = _mm256_max_ps(v, _mm256_set1_ps(-88.0f));
  __m256 fx = _mm256_floor_ps(_mm256_fmadd_ps(v, _mm256_set1_ps(1.44269504088896341f),
                                              _mm256_set1_ps(0.5f)));
  v = _mm256_fnmadd_ps(fx, _mm256_set1_ps(0.693359375f), v);
  v = _mm256_fnmadd_ps(fx, _mm256_set1_ps(-2.12194440e-4f), v);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, v, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, v, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, v, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, v, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, v, _mm256_set1_ps(5.0000001201e-1f));
  __m256 y = _mm256_fmadd_ps(p, _mm256_mul_ps(v, v), _mm256_add_ps(v, _mm256_set1_ps(1.0f)));
  __m256i e = _mm256_slli_epi32(
      _mm256_add_epi32(_mm256_cvttps_epi32(fx), _mm256_set1_epi32(127)), 23);
  y = _mm256_mul_ps(y, _mm256_castsi256_ps(e));
  y = _mm256_andnot_ps(low_mask, y);
  return _mm256_blendv_ps(y, x, nan_mask);
}

/// The unit-stride float32 row: AVX2 max, exp and sum (exp stored once).
inline void softmaxRowF32(float* out, const float* in, int64_t n, bool log) {
  __m256 vmax = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) vmax = _mm256_max_ps(_mm256_loadu_ps(in + j), vmax);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, vmax);
  float max = lanes[0];
  for (int l = 1; l < 8; ++l) max = std::max(max, lanes[l]);
  for (; j < n; ++j) max = std::max(max, in[j]);
  const __m256 bmax = _mm256_set1_ps(max);
  __m256 vsum = _mm256_setzero_ps();
  double sum = 0;
  for (j = 0; j + 8 <= n; j += 8) {
    __m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(in + j), bmax));
    vsum = _mm256_add_ps(vsum, e);
    if (!log) _mm256_storeu_ps(out + j, e);
  }
  for (; j < n; ++j) {
    float e = std::exp(in[j] - max);
    sum += e;
    if (!log) out[j] = e;
  }
  _mm256_store_ps(lanes, vsum);
  for (int l = 0; l < 8; ++l) sum += lanes[l];
  if (log) {
    const float shift = max + static_cast<float>(std::log(sum));
    for (j = 0; j < n; ++j) out[j] = in[j] - shift;
  } else {
    const float scale = static_cast<float>(1.0 / sum);
    for (j = 0; j < n; ++j) out[j] *= scale;
  }
}

template <typename T>
void softmaxRow(T* out, int64_t so, const T* in, int64_t si, int64_t n, bool log) {
  if constexpr (std::is_same_v<T, float>) {
    if (so == 1 && si == 1) return softmaxRowF32(out, in, n, log);
  }
  using C = compute_t<T>;
  using A = acc_t<T>;
  C max = -std::numeric_limits<C>::infinity();
  if (si == 1) {
    for (int64_t j = 0; j < n; ++j) max = std::max(max, static_cast<C>(load(in[j])));
  } else {
    for (int64_t j = 0; j < n; ++j) max = std::max(max, static_cast<C>(load(in[j * si])));
  }
  // A NaN anywhere makes the sum NaN and with it the whole row, as on the CPU.
  A sum = 0;
  for (int64_t j = 0; j < n; ++j) sum += std::exp(static_cast<C>(load(in[j * si])) - max);
  if (log) {
    C shift = max + static_cast<C>(std::log(sum));
    for (int64_t j = 0; j < n; ++j) out[j * so] = store<T>(static_cast<C>(load(in[j * si])) - shift);
  } else {
    C scale = static_cast<C>(A(1) / sum);
    for (int64_t j = 0; j < n; ++j)
      out[j * so] = store<T>(std::exp(static_cast<C>(load(in[j * si])) - max) * scale);
  }
}

/// softmax over a non-innermost dimension: blocks of kBlock unit-stride
/// columns (i) are reduced together, walking dimension 1 (j) in the outer loop.
template <typename T>
void softmaxColumns(const maia_grid_t* grid, const MemRef<T, 3>& out, const MemRef<T, 3>& in,
                    bool log) {
  using C = compute_t<T>;
  using A = acc_t<T>;
  constexpr int64_t kBlock = 64;
  const int64_t n = in.sizes[1], inner = in.sizes[2];
  const int64_t blocks = (inner + kBlock - 1) / kBlock;
  auto slice = maia_kernel::programSlice(grid, in.sizes[0] * blocks);
  C max[kBlock];
  A sum[kBlock];
  C shift[kBlock];
  for (int64_t u = slice.begin; u < slice.end; ++u) {
    const int64_t o = u / blocks, i0 = (u % blocks) * kBlock;
    const int64_t w = std::min(kBlock, inner - i0);
    const T* x = in.aligned + in.offset + o * in.strides[0] + i0;
    T* y = out.aligned + out.offset + o * out.strides[0] + i0;
    const int64_t sx = in.strides[1], sy = out.strides[1];
    for (int64_t i = 0; i < w; ++i) {
      max[i] = -std::numeric_limits<C>::infinity();
      sum[i] = 0;
    }
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < w; ++i) {
        C v = static_cast<C>(load(x[j * sx + i]));
        max[i] = max[i] < v ? v : max[i];
      }
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < w; ++i) sum[i] += std::exp(static_cast<C>(load(x[j * sx + i])) - max[i]);
    for (int64_t i = 0; i < w; ++i)
      shift[i] = log ? max[i] + static_cast<C>(std::log(sum[i])) : static_cast<C>(A(1) / sum[i]);
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < w; ++i) {
        C v = static_cast<C>(load(x[j * sx + i]));
        y[j * sy + i] = store<T>(log ? v - shift[i] : std::exp(v - max[i]) * shift[i]);
      }
  }
}

template <typename T>
void softmax(void* const* args, const maia_grid_t* grid) {
  const auto& out = memref<T, 3>(args, 0);
  const auto& in = memref<T, 3>(args, 1);
  const bool log = scalar<int64_t>(args, 2) != 0;
  const int64_t n = in.sizes[1], inner = in.sizes[2];
  if (inner > 1 && in.strides[2] == 1 && out.strides[2] == 1) {
    softmaxColumns<T>(grid, out, in, log);
    return;
  }
  auto slice = maia_kernel::programSlice(grid, in.sizes[0] * inner);
  for (int64_t r = slice.begin; r < slice.end; ++r) {
    int64_t o = r / inner, i = r % inner;
    softmaxRow<T>(out.aligned + out.offset + o * out.strides[0] + i * out.strides[2],
                  out.strides[1],
                  in.aligned + in.offset + o * in.strides[0] + i * in.strides[2], in.strides[1],
                  n, log);
  }
}

// args: grad_input, grad_output, output (of the forward), is_log.
//   softmax:     gi = y * (g - sum(g * y))
//   log_softmax: gi = g - exp(y) * sum(g)
template <typename T>
void softmaxBackward(void* const* args, const maia_grid_t* grid) {
  using C = compute_t<T>;
  using A = acc_t<T>;
  const auto& gi = memref<T, 3>(args, 0);
  const auto& go = memref<T, 3>(args, 1);
  const auto& y = memref<T, 3>(args, 2);
  const bool log = scalar<int64_t>(args, 3) != 0;
  const int64_t n = y.sizes[1], inner = y.sizes[2];
  auto slice = maia_kernel::programSlice(grid, y.sizes[0] * inner);
  for (int64_t r = slice.begin; r < slice.end; ++r) {
    int64_t o = r / inner, i = r % inner;
    T* pgi = gi.aligned + gi.offset + o * gi.strides[0] + i * gi.strides[2];
    const T* pgo = go.aligned + go.offset + o * go.strides[0] + i * go.strides[2];
    const T* py = y.aligned + y.offset + o * y.strides[0] + i * y.strides[2];
    const int64_t sgi = gi.strides[1], sgo = go.strides[1], sy = y.strides[1];
    A sum = 0;
    if (log) {
      for (int64_t j = 0; j < n; ++j) sum += load(pgo[j * sgo]);
      C s = static_cast<C>(sum);
      for (int64_t j = 0; j < n; ++j)
        pgi[j * sgi] = store<T>(static_cast<C>(load(pgo[j * sgo])) -
                                std::exp(static_cast<C>(load(py[j * sy]))) * s);
    } else {
      for (int64_t j = 0; j < n; ++j)
        sum += static_cast<A>(load(pgo[j * sgo])) * static_cast<A>(load(py[j * sy]));
      C s = static_cast<C>(sum);
      for (int64_t j = 0; j < n; ++j)
        pgi[j * sgi] = store<T>(static_cast<C>(load(py[j * sy])) *
                                (static_cast<C>(load(pgo[j * sgo])) - s));
    }
  }
}

// ---------------------------------------------------------------------------
// layer_norm over the rows of an (M, N) memref with unit column stride.
// args: out, in, weight, bias, mean, rstd, eps, has_weight, has_bias
// (weight/bias are ignored when absent; mean and rstd have M elements of
// the compute type, float32 for float16/bfloat16 inputs, as PyTorch's
// native_layer_norm returns them on accelerators; rstd = 1/sqrt(biased
// var + eps)).

template <typename T>
const T* row(const MemRef<T, 2>& m, int64_t r) {
  return m.aligned + m.offset + r * m.strides[0];
}
template <typename T>
T* mutableRow(const MemRef<T, 2>& m, int64_t r) {
  return m.aligned + m.offset + r * m.strides[0];
}
template <typename T>
T& at1(const MemRef<T, 1>& m, int64_t i) {
  return m.aligned[m.offset + i * m.strides[0]];
}
template <typename T>
T& at3(const MemRef<T, 3>& m, int64_t b, int64_t i, int64_t j) {
  return m.aligned[m.offset + b * m.strides[0] + i * m.strides[1] + j * m.strides[2]];
}

template <typename T>
void layerNorm(void* const* args, const maia_grid_t* grid) {
  using C = compute_t<T>;
  using A = acc_t<T>;
  const auto& out = memref<T, 2>(args, 0);
  const auto& in = memref<T, 2>(args, 1);
  const auto& weight = memref<T, 1>(args, 2);
  const auto& bias = memref<T, 1>(args, 3);
  const auto& mean_out = memref<C, 1>(args, 4);
  const auto& rstd_out = memref<C, 1>(args, 5);
  const double eps = scalar<double>(args, 6);
  const bool has_w = scalar<int64_t>(args, 7) != 0, has_b = scalar<int64_t>(args, 8) != 0;
  const int64_t n = in.sizes[1];
  const T* w = has_w ? weight.aligned + weight.offset : nullptr;
  const T* b = has_b ? bias.aligned + bias.offset : nullptr;
  const int64_t sw = weight.strides[0], sb = bias.strides[0];
  auto slice = maia_kernel::programSlice(grid, in.sizes[0]);
  for (int64_t r = slice.begin; r < slice.end; ++r) {
    const T* x = row(in, r);
    T* y = mutableRow(out, r);
    A sum = 0;
    for (int64_t j = 0; j < n; ++j) sum += static_cast<A>(load(x[j]));
    A mean = n > 0 ? sum / n : A(0);
    A sq = 0;
    for (int64_t j = 0; j < n; ++j) {
      A d = static_cast<A>(load(x[j])) - mean;
      sq += d * d;
    }
    A var = n > 0 ? sq / n : A(0);
    A rstd = A(1) / std::sqrt(var + static_cast<A>(eps));
    at1(mean_out, r) = static_cast<C>(mean);
    at1(rstd_out, r) = static_cast<C>(rstd);
    const C m = static_cast<C>(mean), s = static_cast<C>(rstd);
    for (int64_t j = 0; j < n; ++j) {
      C v = (static_cast<C>(load(x[j])) - m) * s;
      if (w != nullptr) v *= static_cast<C>(load(w[j * sw]));
      if (b != nullptr) v += static_cast<C>(load(b[j * sb]));
      y[j] = store<T>(v);
    }
  }
}

// args: dx, dy, x, mean, rstd, weight, has_weight.
//   g = dy * w, xhat = (x - mean) * rstd
//   dx = rstd * (g - mean(g) - xhat * mean(g * xhat))
template <typename T>
void layerNormBackward(void* const* args, const maia_grid_t* grid) {
  using C = compute_t<T>;
  using A = acc_t<T>;
  const auto& dx = memref<T, 2>(args, 0);
  const auto& dy = memref<T, 2>(args, 1);
  const auto& x = memref<T, 2>(args, 2);
  const auto& mean = memref<C, 1>(args, 3);
  const auto& rstd = memref<C, 1>(args, 4);
  const auto& weight = memref<T, 1>(args, 5);
  const bool has_w = scalar<int64_t>(args, 6) != 0;
  const int64_t n = x.sizes[1];
  const T* w = has_w ? weight.aligned + weight.offset : nullptr;
  const int64_t sw = weight.strides[0];
  auto slice = maia_kernel::programSlice(grid, x.sizes[0]);
  for (int64_t r = slice.begin; r < slice.end; ++r) {
    const T* px = row(x, r);
    const T* pdy = row(dy, r);
    T* pdx = mutableRow(dx, r);
    const A m = static_cast<A>(at1(mean, r)), s = static_cast<A>(at1(rstd, r));
    A sum_g = 0, sum_gx = 0;
    for (int64_t j = 0; j < n; ++j) {
      A g = static_cast<A>(load(pdy[j]));
      if (w != nullptr) g *= static_cast<A>(load(w[j * sw]));
      sum_g += g;
      sum_gx += g * (static_cast<A>(load(px[j])) - m) * s;
    }
    const C cm = static_cast<C>(m), cs = static_cast<C>(s);
    const C mean_g = static_cast<C>(n > 0 ? sum_g / n : A(0));
    const C mean_gx = static_cast<C>(n > 0 ? sum_gx / n : A(0));
    for (int64_t j = 0; j < n; ++j) {
      C g = static_cast<C>(load(pdy[j]));
      if (w != nullptr) g *= static_cast<C>(load(w[j * sw]));
      C xhat = (static_cast<C>(load(px[j])) - cm) * cs;
      pdx[j] = store<T>(cs * (g - mean_g - xhat * mean_gx));
    }
  }
}

// args: dweight, dbias, dy, x, mean, rstd, want_dweight, want_dbias.
// dweight[j] = sum_r dy[r, j] * xhat[r, j], dbias[j] = sum_r dy[r, j]; each
// program owns a block of columns and walks every row for it.
template <typename T>
void layerNormBackwardWeights(void* const* args, const maia_grid_t* grid) {
  using A = acc_t<T>;
  const auto& dw = memref<T, 1>(args, 0);
  const auto& db = memref<T, 1>(args, 1);
  const auto& dy = memref<T, 2>(args, 2);
  const auto& x = memref<T, 2>(args, 3);
  const auto& mean = memref<compute_t<T>, 1>(args, 4);
  const auto& rstd = memref<compute_t<T>, 1>(args, 5);
  const bool want_w = scalar<int64_t>(args, 6) != 0, want_b = scalar<int64_t>(args, 7) != 0;
  const int64_t rows = x.sizes[0];
  auto slice = maia_kernel::programSlice(grid, x.sizes[1]);
  constexpr int64_t kChunk = 256;
  A acc_w[kChunk], acc_b[kChunk];
  for (int64_t c0 = slice.begin; c0 < slice.end; c0 += kChunk) {
    const int64_t count = std::min(kChunk, slice.end - c0);
    std::fill(acc_w, acc_w + count, A(0));
    std::fill(acc_b, acc_b + count, A(0));
    for (int64_t r = 0; r < rows; ++r) {
      const T* px = row(x, r) + c0;
      const T* pdy = row(dy, r) + c0;
      const A m = static_cast<A>(at1(mean, r)), s = static_cast<A>(at1(rstd, r));
      for (int64_t j = 0; j < count; ++j) {
        A g = static_cast<A>(load(pdy[j]));
        acc_w[j] += g * (static_cast<A>(load(px[j])) - m) * s;
        acc_b[j] += g;
      }
    }
    for (int64_t j = 0; j < count; ++j) {
      if (want_w) at1(dw, c0 + j) = store<T>(acc_w[j]);
      if (want_b) at1(db, c0 + j) = store<T>(acc_b[j]);
    }
  }
}

// ---------------------------------------------------------------------------
// nll_loss over (N, C) log-probabilities. reduction: 0 none, 1 mean, 2 sum.
// args: out (N for none, else 1), total_weight (1), in, target, weight,
// has_weight, reduction, ignore_index. One program (the loss sums in order).

template <typename T>
void nllLoss(void* const* args, const maia_grid_t* grid) {
  using C = compute_t<T>;
  using A = acc_t<T>;
  const auto& out = memref<T, 1>(args, 0);
  const auto& total_weight = memref<T, 1>(args, 1);
  const auto& in = memref<T, 2>(args, 2);
  const auto& target = memref<int64_t, 1>(args, 3);
  const auto& weight = memref<T, 1>(args, 4);
  const bool has_w = scalar<int64_t>(args, 5) != 0;
  const int64_t reduction = scalar<int64_t>(args, 6), ignore = scalar<int64_t>(args, 7);
  if (maia_kernel::linearProgramId(grid) != 0) return;
  const int64_t rows = in.sizes[0], classes = in.sizes[1];
  A sum = 0, wsum = 0;
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t t = at1(target, i);
    if (t == ignore) {
      if (reduction == 0) at1(out, i) = store<T>(0);
      continue;
    }
    checkIndex(t, classes);
    const C w = has_w ? static_cast<C>(load(at1(weight, t))) : C(1);
    const C v = -static_cast<C>(load(in.at(i, t))) * w;
    if (reduction == 0) {
      at1(out, i) = store<T>(v);
    } else {
      sum += v;
      wsum += w;
    }
  }
  if (reduction != 0) at1(out, 0) = store<T>(reduction == 1 ? sum / wsum : sum);
  at1(total_weight, 0) = store<T>(wsum);
}

// args: grad_input (N, C; fully written), grad_output (N for none, else 1),
// target, weight, total_weight, has_weight, reduction, ignore_index.
template <typename T>
void nllLossBackward(void* const* args, const maia_grid_t* grid) {
  using C = compute_t<T>;
  const auto& gi = memref<T, 2>(args, 0);
  const auto& go = memref<T, 1>(args, 1);
  const auto& target = memref<int64_t, 1>(args, 2);
  const auto& weight = memref<T, 1>(args, 3);
  const auto& total_weight = memref<T, 1>(args, 4);
  const bool has_w = scalar<int64_t>(args, 5) != 0;
  const int64_t reduction = scalar<int64_t>(args, 6), ignore = scalar<int64_t>(args, 7);
  const int64_t classes = gi.sizes[1];
  auto slice = maia_kernel::programSlice(grid, gi.sizes[0]);
  for (int64_t i = slice.begin; i < slice.end; ++i) {
    T* p = gi.aligned + gi.offset + i * gi.strides[0];
    const int64_t sc = gi.strides[1];
    for (int64_t j = 0; j < classes; ++j) p[j * sc] = store<T>(0);
    const int64_t t = at1(target, i);
    if (t == ignore) continue;
    checkIndex(t, classes);
    C g = static_cast<C>(load(at1(go, reduction == 0 ? i : 0)));
    if (reduction == 1) g /= static_cast<C>(load(at1(total_weight, 0)));
    const C w = has_w ? static_cast<C>(load(at1(weight, t))) : C(1);
    p[t * sc] = store<T>(-w * g);
  }
}

// ---------------------------------------------------------------------------
// index_select along dimension 1 of (outer, n, inner) memrefs.
// args: out (outer, m, inner), in (outer, n, inner), index (m).
template <typename T>
void indexSelect(void* const* args, const maia_grid_t* grid) {
  const auto& out = memref<T, 3>(args, 0);
  const auto& in = memref<T, 3>(args, 1);
  const auto& index = memref<int64_t, 1>(args, 2);
  const int64_t m = out.sizes[1], n = in.sizes[1], inner = out.sizes[2];
  auto slice = maia_kernel::programSlice(grid, out.sizes[0] * m);
  for (int64_t r = slice.begin; r < slice.end; ++r) {
    const int64_t o = r / m, k = r % m;
    const int64_t j = at1(index, k);
    checkIndex(j, n);
    T* dst = out.aligned + out.offset + o * out.strides[0] + k * out.strides[1];
    const T* src = in.aligned + in.offset + o * in.strides[0] + j * in.strides[1];
    const int64_t sd = out.strides[2], ss = in.strides[2];
    if (sd == 1 && ss == 1) {
      for (int64_t i = 0; i < inner; ++i) dst[i] = src[i];
    } else {
      for (int64_t i = 0; i < inner; ++i) dst[i * sd] = src[i * ss];
    }
  }
}

// embedding_dense_backward: grad_weight (num_weights, D; fully written) =
// sum of the rows of grad (n, D) by index, skipping padding_idx. Each program
// owns a block of columns and walks the indices in order (deterministic).
// args: grad_weight, grad, indices (n), padding_idx.
template <typename T>
void embeddingBackward(void* const* args, const maia_grid_t* grid) {
  using A = acc_t<T>;
  const auto& gw = memref<T, 2>(args, 0);
  const auto& grad = memref<T, 2>(args, 1);
  const auto& index = memref<int64_t, 1>(args, 2);
  const int64_t padding = scalar<int64_t>(args, 3);
  const int64_t rows = gw.sizes[0], count = grad.sizes[0];
  auto slice = maia_kernel::programSlice(grid, gw.sizes[1]);
  if (slice.begin >= slice.end) return;
  const int64_t width = slice.end - slice.begin;
  for (int64_t r = 0; r < rows; ++r) {
    T* dst = mutableRow(gw, r) + slice.begin;
    for (int64_t c = 0; c < width; ++c) dst[c] = store<T>(0);
  }
  for (int64_t i = 0; i < count; ++i) {
    const int64_t j = at1(index, i);
    if (j == padding) continue;
    checkIndex(j, rows);
    T* dst = mutableRow(gw, j) + slice.begin;
    const T* src = row(grad, i) + slice.begin;
    for (int64_t c = 0; c < width; ++c)
      dst[c] = store<T>(static_cast<A>(load(dst[c])) + static_cast<A>(load(src[c])));
  }
}

// ---------------------------------------------------------------------------
// gather / scatter over rank-8 memrefs (leading dimensions of extent 1 pad
// lower ranks), iterating over the index's shape. Each program owns a block
// of the positions apart from dimension dim and walks dim in order, so
// scatter's duplicates resolve as on the CPU (the last write wins) and
// scatter_add sums in a fixed order.

constexpr int kScatterRank = 8;

/// The multi-index (dimension dim left 0) of position r of sizes apart from dim.
inline void decode(int64_t r, const int64_t* sizes, int64_t dim, int64_t* coord) {
  for (int d = kScatterRank - 1; d >= 0; --d) {
    if (d == dim) {
      coord[d] = 0;
      continue;
    }
    coord[d] = r % sizes[d];
    r /= sizes[d];
  }
}

template <typename T, typename U>
int64_t offsetAt(const MemRef<T, kScatterRank>& m, const int64_t* coord) {
  int64_t o = m.offset;
  for (int d = 0; d < kScatterRank; ++d) o += coord[d] * m.strides[d];
  return o;
}

/// Calls line(coord) for this program's share of the lines of index along
/// dim (every position of the other dimensions), coord their multi-index.
template <typename Line>
void forEachLine(const maia_grid_t* grid, const MemRef<int64_t, kScatterRank>& index,
                 int64_t dim, Line&& line) {
  int64_t rows = 1;
  for (int d = 0; d < kScatterRank; ++d)
    if (d != dim) rows *= index.sizes[d];
  auto slice = maia_kernel::programSlice(grid, rows);
  int64_t coord[kScatterRank];
  for (int64_t r = slice.begin; r < slice.end; ++r) {
    decode(r, index.sizes, dim, coord);
    line(coord);
  }
}

// args: out (index's shape), self, index, dim.
template <typename T>
void gather(void* const* args, const maia_grid_t* grid) {
  const auto& out = memref<T, kScatterRank>(args, 0);
  const auto& self = memref<T, kScatterRank>(args, 1);
  const auto& index = memref<int64_t, kScatterRank>(args, 2);
  const int64_t dim = scalar<int64_t>(args, 3);
  const int64_t k_end = index.sizes[dim], n = self.sizes[dim];
  const int64_t si = index.strides[dim], so = out.strides[dim], ss = self.strides[dim];
  forEachLine(grid, index, dim, [&](const int64_t* coord) {
    const int64_t* pi = index.aligned + offsetAt<int64_t, int64_t>(index, coord);
    T* po = out.aligned + offsetAt<T, T>(out, coord);
    const T* ps = self.aligned + offsetAt<T, T>(self, coord);
    for (int64_t k = 0; k < k_end; ++k) {
      const int64_t j = pi[k * si];
      checkIndex(j, n);
      po[k * so] = ps[j * ss];
    }
  });
}

// args: out (written in place), index, src, dim, mode (0 assign, 1 add,
// 2 multiply, 3 amax, 4 amin; a NaN source wins, as on the CPU).
template <typename T>
void scatter(void* const* args, const maia_grid_t* grid) {
  const auto& out = memref<T, kScatterRank>(args, 0);
  const auto& index = memref<int64_t, kScatterRank>(args, 1);
  const auto& src = memref<T, kScatterRank>(args, 2);
  const int64_t dim = scalar<int64_t>(args, 3), mode = scalar<int64_t>(args, 4);
  const int64_t k_end = index.sizes[dim], n = out.sizes[dim];
  const int64_t si = index.strides[dim], so = out.strides[dim], ss = src.strides[dim];
  forEachLine(grid, index, dim, [&](const int64_t* coord) {
    const int64_t* pi = index.aligned + offsetAt<int64_t, int64_t>(index, coord);
    T* po = out.aligned + offsetAt<T, T>(out, coord);
    const T* ps = src.aligned + offsetAt<T, T>(src, coord);
    for (int64_t k = 0; k < k_end; ++k) {
      const int64_t j = pi[k * si];
      checkIndex(j, n);
      T& dst = po[j * so];
      if (mode == 0) {
        dst = ps[k * ss];
      } else if (mode == 1) {
        dst = store<T>(load(dst) + load(ps[k * ss]));
      } else if (mode == 2) {
        dst = store<T>(load(dst) * load(ps[k * ss]));
      } else {
        const auto a = load(dst), b = load(ps[k * ss]);
        if (b != b) dst = ps[k * ss];  // NaN (only floats differ from themselves)
        else if (mode == 3 ? a < b : b < a) dst = ps[k * ss];
      }
    }
  });
}

// index_add along dimension 1 of (outer, n, inner) memrefs with unit inner
// stride: out[o, index[k], i] += alpha * src[o, k, i]. Each program owns
// blocks of (outer, 256 columns) and walks k in order (deterministic sums).
// args: out (in place), index (m), src (outer, m, inner), alpha_f, alpha_i.
template <typename T>
void indexAdd(void* const* args, const maia_grid_t* grid) {
  using C = compute_t<T>;
  const auto& out = memref<T, 3>(args, 0);
  const auto& index = memref<int64_t, 1>(args, 1);
  const auto& src = memref<T, 3>(args, 2);
  C alpha;
  if constexpr (std::is_floating_point_v<C>)
    alpha = static_cast<C>(scalar<double>(args, 3));
  else
    alpha = static_cast<C>(scalar<int64_t>(args, 4));
  const int64_t n = out.sizes[1], m = src.sizes[1], inner = out.sizes[2];
  constexpr int64_t kBlock = 256;
  const int64_t blocks = (inner + kBlock - 1) / kBlock;
  auto slice = maia_kernel::programSlice(grid, out.sizes[0] * blocks);
  for (int64_t u = slice.begin; u < slice.end; ++u) {
    const int64_t o = u / blocks, c0 = (u % blocks) * kBlock;
    const int64_t width = std::min(kBlock, inner - c0);
    for (int64_t k = 0; k < m; ++k) {
      const int64_t j = at1(index, k);
      checkIndex(j, n);
      T* dst = out.aligned + out.offset + o * out.strides[0] + j * out.strides[1] + c0;
      const T* s = src.aligned + src.offset + o * src.strides[0] + k * src.strides[1] + c0;
      if constexpr (std::is_same_v<T, bool>) {
        for (int64_t i = 0; i < width; ++i) dst[i] = dst[i] || (alpha && s[i]);
      } else {
        for (int64_t i = 0; i < width; ++i)
          dst[i] = store<T>(static_cast<C>(load(dst[i])) + alpha * static_cast<C>(load(s[i])));
      }
    }
  }
}

}  // namespace maia_nn
