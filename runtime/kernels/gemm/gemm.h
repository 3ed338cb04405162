// One GEMM on one core: picks the orientation and the loop (small-M or
// cache-blocked) for a sub-problem of the gemm_* kernels.
#pragma once

#include <type_traits>
#include <utility>

#include "blocked.h"
#include "small_m.h"

namespace maia_gemm {

/// C^T = B^T @ A^T: the same product with the roles of rows and columns
/// swapped.
template <typename T>
Problem<T> transposed(Problem<T> p) {
  std::swap(p.m, p.n);
  std::swap(p.rsc, p.csc);
  View<T> at{p.a.data, p.a.cs, p.a.rs};
  p.a = View<T>{p.b.data, p.b.cs, p.b.rs};
  p.b = at;
  return p;
}

/// Whether the blocked loops run C^T = B^T @ A^T rather than C = A @ B:
/// the transposed form makes the stores of a column-major C contiguous, and
/// it pads less when C is tall and narrow (a product with 3 columns pads N
/// to kNR = 32 but M only to kMR rows).
template <typename T>
bool blockedRunsTransposed(const Problem<T>& p) {
  auto padded = [](int64_t rows, int64_t cols) { return roundUp(rows, kMR) * roundUp(cols, kNR); };
  bool transpose = p.csc != 1 && p.rsc == 1;
  int64_t as_is = padded(p.m, p.n), swapped = padded(p.n, p.m);
  if ((transpose ? as_is : swapped) * 4 < (transpose ? swapped : as_is) * 3)
    transpose = !transpose;
  return transpose;
}

/// Runs one GEMM, as C = A @ B or as C^T = B^T @ A^T. An fp32 product with
/// a few rows or a few columns takes the small-M loops, oriented so the few
/// are rows; otherwise the blocked loops, oriented by blockedRunsTransposed.
template <typename T>
void gemm(Problem<T> p) {
  if (p.m == 0 || p.n == 0) return;
  if (p.k == 0 || p.alpha == 0.0f) return scaleC(p);
  if constexpr (std::is_same_v<T, float>) {
    if (takesSmallMPath(p)) return runSmallM(p, threadScratch());
    if (Problem<T> t = transposed(p); takesSmallMPath(t)) return runSmallM(t, threadScratch());
  }
  runBlocked(blockedRunsTransposed(p) ? transposed(p) : p, threadScratch());
}

/// C[b] = alpha * A @ B[b] + beta * C[b] for the batch: an fp32 batch that
/// runs the blocked loops as is packs each block of the shared A once for
/// all its products (runBlocked); any other, one product at a time.
template <typename T>
void gemmSharedA(Problem<T> p, SharedABatch batch) {
  if constexpr (std::is_same_v<T, float>) {
    Problem<T> t = transposed(p);
    if (batch.count > 1 && p.m > 0 && p.n > 0 && p.k > 0 && p.alpha != 0.0f &&
        !takesSmallMPath(p) && !takesSmallMPath(t) && !blockedRunsTransposed(p))
      return runBlocked(p, threadScratch(), batch);
  }
  for (int64_t b = 0; b < batch.count; ++b) {
    Problem<T> one = p;
    one.b.data += b * batch.b_stride;
    one.c += b * batch.c_stride;
    gemm(one);
  }
}

}  // namespace maia_gemm
