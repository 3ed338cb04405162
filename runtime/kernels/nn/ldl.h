// The LDL^T factorization of symmetric matrices with Bunch-Kaufman
// pivoting, and the solve with it, as LAPACK's unblocked sytf2 and sytrs
// compute them for the lower triangle (what ATen's sytrf/sytrs calls give
// for the sizes models factor): 1x1 and 2x2 diagonal blocks, pivots
// 1-based, negative for a 2x2 block, in the storage type (float32 or
// float64). Programs own batch entries. Indices here are 0-based.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>

#include <maia/kernel_abi.h>

#include "nn.h"

namespace maia_nn {

namespace ldl_detail {

/// The first index in [begin, end) of the largest |at(i)| (LAPACK's
/// i?amax: a NaN never wins unless it comes first).
template <typename At>
int64_t firstLargest(int64_t begin, int64_t end, At at) {
  int64_t best = begin;
  for (int64_t i = begin + 1; i < end; ++i)
    if (std::abs(at(i)) > std::abs(at(best))) best = i;
  return best;
}

}  // namespace ldl_detail

// args: ld (B, n, n; A's lower triangle in, L and D out; the strict upper
// triangle is not touched), pivots i32 (B, n), info i32 (B: the first
// zero diagonal block, 1-based, or 0).
template <typename T>
void ldlFactor(void* const* args, const maia_grid_t* grid) {
  using ldl_detail::firstLargest;
  const auto& ld = memref<T, 3>(args, 0);
  const auto& pivots = memref<int32_t, 2>(args, 1);
  const auto& info = memref<int32_t, 1>(args, 2);
  const int64_t n = ld.sizes[1];
  const T alpha = (1 + std::sqrt(T(17))) / 8;
  auto slice = maia_kernel::programSlice(grid, ld.sizes[0]);
  for (int64_t b = slice.begin; b < slice.end; ++b) {
    auto A = [&](int64_t i, int64_t j) -> T& { return at3(ld, b, i, j); };
    int32_t first_zero = 0;
    for (int64_t k = 0; k < n;) {
      int64_t step = 1, kp = k;
      const T absakk = std::abs(A(k, k));
      int64_t imax = k;
      T colmax = 0;
      if (k < n - 1) {
        imax = firstLargest(k + 1, n, [&](int64_t i) { return A(i, k); });
        colmax = std::abs(A(imax, k));
      }
      if (std::max(absakk, colmax) == 0 || std::isnan(absakk)) {
        if (first_zero == 0) first_zero = static_cast<int32_t>(k + 1);
      } else {
        if (!(absakk >= alpha * colmax)) {
          // The largest off-diagonal element of row/column imax.
          int64_t jmax = firstLargest(k, imax, [&](int64_t j) { return A(imax, j); });
          T rowmax = std::abs(A(imax, jmax));
          if (imax < n - 1) {
            jmax = firstLargest(imax + 1, n, [&](int64_t i) { return A(i, imax); });
            rowmax = std::max(rowmax, std::abs(A(jmax, imax)));
          }
          if (absakk >= alpha * colmax * (colmax / rowmax)) {
            kp = k;
          } else if (std::abs(A(imax, imax)) >= alpha * rowmax) {
            kp = imax;
          } else {
            kp = imax;
            step = 2;
          }
        }
        const int64_t kk = k + step - 1;
        if (kp != kk) {  // symmetric interchange of rows and columns kk and kp
          for (int64_t i = kp + 1; i < n; ++i) std::swap(A(i, kk), A(i, kp));
          for (int64_t j = kk + 1; j < kp; ++j) std::swap(A(j, kk), A(kp, j));
          std::swap(A(kk, kk), A(kp, kp));
          if (step == 2) std::swap(A(k + 1, k), A(kp, k));
        }
        if (step == 1) {
          if (k < n - 1) {  // A22 -= x x^T / d, then x /= d
            const T d11 = T(1) / A(k, k);
            for (int64_t j = k + 1; j < n; ++j) {
              if (A(j, k) == T(0)) continue;
              const T scaled = -d11 * A(j, k);
              for (int64_t i = j; i < n; ++i) A(i, j) += A(i, k) * scaled;
            }
            for (int64_t i = k + 1; i < n; ++i) A(i, k) *= d11;
          }
        } else if (k < n - 2) {  // the same with the inverse of the 2x2 block
          T d21 = A(k + 1, k);
          const T d11 = A(k + 1, k + 1) / d21, d22 = A(k, k) / d21;
          const T t = T(1) / (d11 * d22 - T(1));
          d21 = t / d21;
          for (int64_t j = k + 2; j < n; ++j) {
            const T wk = d21 * (d11 * A(j, k) - A(j, k + 1));
            const T wkp1 = d21 * (d22 * A(j, k + 1) - A(j, k));
            for (int64_t i = j; i < n; ++i) A(i, j) = A(i, j) - A(i, k) * wk - A(i, k + 1) * wkp1;
            A(j, k) = wk;
            A(j, k + 1) = wkp1;
          }
        }
      }
      const int32_t pivot = static_cast<int32_t>(kp + 1);
      if (step == 1) {
        pivots.at(b, k) = pivot;
      } else {
        pivots.at(b, k) = -pivot;
        pivots.at(b, k + 1) = -pivot;
      }
      k += step;
    }
    info.at(b) = first_zero;
  }
}

// args: ld (B, n, n), pivots i32 (B, n) from ldlFactor, x (B, n, nrhs;
// the right-hand sides in, the solutions out).
template <typename T>
void ldlSolve(void* const* args, const maia_grid_t* grid) {
  const auto& ld = memref<T, 3>(args, 0);
  const auto& pivots = memref<int32_t, 2>(args, 1);
  const auto& x = memref<T, 3>(args, 2);
  const int64_t n = x.sizes[1], nrhs = x.sizes[2];
  auto slice = maia_kernel::programSlice(grid, x.sizes[0]);
  for (int64_t b = slice.begin; b < slice.end; ++b) {
    auto A = [&](int64_t i, int64_t j) -> T { return at3(ld, b, i, j); };
    auto X = [&](int64_t i, int64_t j) -> T& { return at3(x, b, i, j); };
    auto swapRows = [&](int64_t r, int64_t s) {
      if (r != s)
        for (int64_t j = 0; j < nrhs; ++j) std::swap(X(r, j), X(s, j));
    };
    // Eliminate below a pivot row: X(i, :) -= L(i, col) X(row, :) for i > below.
    auto eliminate = [&](int64_t col, int64_t row, int64_t below) {
      for (int64_t j = 0; j < nrhs; ++j)
        for (int64_t i = below; i < n; ++i) X(i, j) -= A(i, col) * X(row, j);
    };
    // X(row, :) -= L(below:, col)^T X(below:, :).
    auto backSubstitute = [&](int64_t col, int64_t row, int64_t below) {
      for (int64_t j = 0; j < nrhs; ++j) {
        T sum = 0;
        for (int64_t i = below; i < n; ++i) sum += X(i, j) * A(i, col);
        X(row, j) -= sum;
      }
    };
    for (int64_t k = 0; k < n;) {  // L D X = B
      const int32_t p = pivots.at(b, k);
      if (p > 0) {
        swapRows(k, p - 1);
        eliminate(k, k, k + 1);
        const T inverse = T(1) / A(k, k);
        for (int64_t j = 0; j < nrhs; ++j) X(k, j) *= inverse;
        k += 1;
      } else {
        swapRows(k + 1, -p - 1);
        eliminate(k, k, k + 2);
        eliminate(k + 1, k + 1, k + 2);
        const T akm1k = A(k + 1, k), akm1 = A(k, k) / akm1k, ak = A(k + 1, k + 1) / akm1k;
        const T denom = akm1 * ak - T(1);
        for (int64_t j = 0; j < nrhs; ++j) {
          const T bkm1 = X(k, j) / akm1k, bk = X(k + 1, j) / akm1k;
          X(k, j) = (ak * bkm1 - bk) / denom;
          X(k + 1, j) = (akm1 * bk - bkm1) / denom;
        }
        k += 2;
      }
    }
    for (int64_t k = n - 1; k >= 0;) {  // L^T X = B
      const int32_t p = pivots.at(b, k);
      backSubstitute(k, k, k + 1);
      if (p > 0) {
        swapRows(k, p - 1);
        k -= 1;
      } else {
        backSubstitute(k - 1, k - 1, k + 1);
        swapRows(k, -p - 1);
        k -= 2;
      }
    }
  }
}

}  // namespace maia_nn
