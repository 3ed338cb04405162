// One GEMM sub-problem of the float64 and integer gemm_* kernels on one
// core. These products are rare in models (float64 reference computations,
// integer indexing arithmetic), so they take compiler-vectorized loops over
// a register block, not the packed microkernel of the fp32 path.
//
// Integers accumulate in uint64_t: wrapping arithmetic is exact modulo 2^64
// and hence modulo the width of every integer dtype, so truncating the sum
// gives what the CPU's wrapping accumulation in the dtype itself gives.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

namespace maia_gemm {

/// The accumulator and the alpha/beta type of a wide GEMM's element type.
template <typename T>
struct Wide {
  using Acc = std::conditional_t<std::is_floating_point_v<T>, T, uint64_t>;
  using Scalar = std::conditional_t<std::is_floating_point_v<T>, T, int64_t>;
  static Acc widen(T v) {
    if constexpr (std::is_floating_point_v<T>)
      return v;
    else
      return static_cast<uint64_t>(static_cast<int64_t>(v));
  }
};

template <typename T>
struct WideProblem {
  using Acc = typename Wide<T>::Acc;
  int64_t m, n, k;
  const T* a;
  int64_t ars, acs;
  const T* b;
  int64_t brs, bcs;
  T* c;
  int64_t crs, ccs;
  Acc alpha, beta;

  /// C^T = B^T @ A^T: the same product, rows and columns swapped.
  WideProblem transposed() const {
    return {n, m, k, b, bcs, brs, a, acs, ars, c, ccs, crs, alpha, beta};
  }
};

template <typename T>
void storeWide(const WideProblem<T>& p, int64_t i, int64_t j, typename Wide<T>::Acc sum) {
  T& out = p.c[i * p.crs + j * p.ccs];
  // As BLAS: alpha == 0 ignores A and B, beta == 0 never reads C (either
  // may hold NaN).
  typename Wide<T>::Acc value = p.alpha == 0 ? 0 : p.alpha * sum;
  if (p.beta != 0) value += p.beta * Wide<T>::widen(out);
  out = static_cast<T>(value);
}

// GCC 12 flags the undefined pass-through lanes of the masked loads its
// vectorizer emits for the loop tails below (a false positive, as GCC bug
// 105593 in pack.h).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

/// Rows of C as sums of rows of B scaled by A's elements, 64 columns of B at
/// a time: the inner loop runs along a row of that panel, contiguous (B
/// row-major) or made so by copying the panel (any other B).
template <typename T>
void wideGemmRows(const WideProblem<T>& p) {
  using Acc = typename Wide<T>::Acc;
  constexpr int64_t kRows = 4, kCols = 64;
  std::vector<T> packed;
  for (int64_t j0 = 0; j0 < p.n; j0 += kCols) {
    const int64_t cols = p.n - j0 < kCols ? p.n - j0 : kCols;
    const T* panel = p.b + j0 * p.bcs;
    int64_t panel_rs = p.brs;
    if (p.bcs != 1) {
      packed.resize(p.k * cols);
      for (int64_t l = 0; l < p.k; ++l)
        for (int64_t j = 0; j < cols; ++j) packed[l * cols + j] = panel[l * p.brs + j * p.bcs];
      panel = packed.data();
      panel_rs = cols;
    }
    for (int64_t i0 = 0; i0 < p.m; i0 += kRows) {
      const int64_t rows = p.m - i0 < kRows ? p.m - i0 : kRows;
      Acc acc[kRows][kCols] = {};
      for (int64_t l = 0; l < p.k; ++l) {
        const T* b_row = panel + l * panel_rs;
        for (int64_t r = 0; r < rows; ++r) {
          const Acc a_value = Wide<T>::widen(p.a[(i0 + r) * p.ars + l * p.acs]);
          for (int64_t j = 0; j < cols; ++j) acc[r][j] += a_value * Wide<T>::widen(b_row[j]);
        }
      }
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < cols; ++j) storeWide(p, i0 + r, j0 + j, acc[r][j]);
    }
  }
}

#pragma GCC diagnostic pop

/// C = alpha * A @ B + beta * C, oriented so that B's rows are contiguous
/// when either orientation has them so (no copy of B needed).
template <typename T>
void wideGemm(const WideProblem<T>& p) {
  if (p.m == 0 || p.n == 0) return;
  if (p.k == 0 || p.alpha == 0) {  // beta * C only
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n; ++j) storeWide(p, i, j, 0);
    return;
  }
  if (p.bcs != 1 && p.ars == 1) return wideGemmRows(p.transposed());
  wideGemmRows(p);
}

}  // namespace maia_gemm
