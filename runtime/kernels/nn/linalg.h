// Dense linear algebra of float32/float64 batches of matrices, as LAPACK's
// unblocked algorithms define them (the CPU runs blocked LAPACK: results
// agree to rounding): LU with partial pivoting (getf2: the first row of
// largest magnitude, rows swapped whole, the column scaled by the pivot's
// reciprocal, info = the first zero pivot, 1-based), solves with the LU
// factors (getrs, plain or transposed), triangular solves (trsm, left side),
// the Cholesky factorization (potf2, lower; upper is the lower factor
// of the transposed view; info = the order of the first leading minor that
// is not positive definite), and Householder QR: geqr2 (larfg's reflectors:
// beta = -sign(alpha) |x|, tau = (beta - alpha) / beta, v = x / (alpha -
// beta) below a unit head), org2r (Q from the reflectors) and orm2r
// (C times Q or Q^T, from either side).
//
// Matrices are rank-3 memrefs (batch, rows, columns) of any strides
// (ATen's LAPACK results are batches of column-major matrices); pivots and
// info are int32. Programs own whole batch entries.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>

#include <maia/kernel_abi.h>

#include "nn.h"

namespace maia_nn {

// args: A (B, m, n; overwritten by L and U), pivots (B, min(m, n)), info (B).
template <typename T>
void luFactor(void* const* args, const maia_grid_t* grid) {
  const auto& a = memref<T, 3>(args, 0);
  const auto& pivots = memref<int32_t, 2>(args, 1);
  const auto& info = memref<int32_t, 1>(args, 2);
  const int64_t m = a.sizes[1], n = a.sizes[2], k = std::min(m, n);
  auto slice = maia_kernel::programSlice(grid, a.sizes[0]);
  for (int64_t b = slice.begin; b < slice.end; ++b) {
    int32_t first_zero = 0;
    for (int64_t j = 0; j < k; ++j) {
      int64_t p = j;
      T largest = std::fabs(at3(a, b, j, j));
      for (int64_t i = j + 1; i < m; ++i) {
        const T magnitude = std::fabs(at3(a, b, i, j));
        if (magnitude > largest) {
          largest = magnitude;
          p = i;
        }
      }
      pivots.aligned[pivots.offset + b * pivots.strides[0] + j * pivots.strides[1]] =
          static_cast<int32_t>(p + 1);
      if (at3(a, b, p, j) != T(0)) {
        if (p != j)
          for (int64_t c = 0; c < n; ++c) std::swap(at3(a, b, p, c), at3(a, b, j, c));
        const T reciprocal = T(1) / at3(a, b, j, j);
        for (int64_t i = j + 1; i < m; ++i) at3(a, b, i, j) *= reciprocal;
      } else if (first_zero == 0) {
        first_zero = static_cast<int32_t>(j + 1);
      }
      for (int64_t c = j + 1; c < n; ++c) {
        const T pivot_row = at3(a, b, j, c);
        for (int64_t i = j + 1; i < m; ++i) at3(a, b, i, c) -= at3(a, b, i, j) * pivot_row;
      }
    }
    at1(info, b) = first_zero;
  }
}

/// Solves M X = X in place for the triangular M = A (or A^T when
/// `transpose`), lower or upper as M is, unit diagonal or not, for every
/// column of X (n, k) of batch entry b.
template <typename T>
void triangularSolve(const MemRef<T, 3>& a, const MemRef<T, 3>& x, int64_t b, bool lower,
                     bool transpose, bool unit) {
  const int64_t n = x.sizes[1], columns = x.sizes[2];
  auto m = [&](int64_t i, int64_t j) -> T {
    return transpose ? at3(a, b, j, i) : at3(a, b, i, j);
  };
  for (int64_t c = 0; c < columns; ++c) {
    for (int64_t step = 0; step < n; ++step) {
      const int64_t i = lower ? step : n - 1 - step;
      T value = at3(x, b, i, c);
      if (lower) {
        for (int64_t j = 0; j < i; ++j) value -= m(i, j) * at3(x, b, j, c);
      } else {
        for (int64_t j = i + 1; j < n; ++j) value -= m(i, j) * at3(x, b, j, c);
      }
      at3(x, b, i, c) = unit ? value : value / m(i, i);
    }
  }
}

// args: A (B, n, n), X (B, n, k; the right-hand side, overwritten by the
// solution), upper, transpose, unit_diagonal. Solves op(A) X = B.
template <typename T>
void triangularSolveKernel(void* const* args, const maia_grid_t* grid) {
  const auto& a = memref<T, 3>(args, 0);
  const auto& x = memref<T, 3>(args, 1);
  const bool upper = scalar<int64_t>(args, 2) != 0;
  const bool transpose = scalar<int64_t>(args, 3) != 0;
  const bool unit = scalar<int64_t>(args, 4) != 0;
  auto slice = maia_kernel::programSlice(grid, x.sizes[0]);
  for (int64_t b = slice.begin; b < slice.end; ++b)
    triangularSolve(a, x, b, /*lower=*/upper == transpose, transpose, unit);
}

/// X's rows i and pivot(i) swapped, for i in order (forward) or reverse.
template <typename T>
void swapRows(const MemRef<T, 3>& x, const MemRef<int32_t, 2>& pivots, int64_t b,
              bool reverse) {
  const int64_t n = x.sizes[1], columns = x.sizes[2];
  for (int64_t step = 0; step < n; ++step) {
    const int64_t i = reverse ? n - 1 - step : step;
    const int64_t p =
        pivots.aligned[pivots.offset + b * pivots.strides[0] + i * pivots.strides[1]] - 1;
    if (p != i)
      for (int64_t c = 0; c < columns; ++c) std::swap(at3(x, b, i, c), at3(x, b, p, c));
  }
}

// args: LU (B, n, n), pivots (B, n), X (B, n, k; B overwritten by the
// solution), transpose. A = P L U: A X = B by the row swaps, L (unit
// lower), then U; A^T X = B by U^T, L^T, then the swaps in reverse.
template <typename T>
void luSolve(void* const* args, const maia_grid_t* grid) {
  const auto& lu = memref<T, 3>(args, 0);
  const auto& pivots = memref<int32_t, 2>(args, 1);
  const auto& x = memref<T, 3>(args, 2);
  const bool transpose = scalar<int64_t>(args, 3) != 0;
  auto slice = maia_kernel::programSlice(grid, x.sizes[0]);
  for (int64_t b = slice.begin; b < slice.end; ++b) {
    if (!transpose) {
      swapRows(x, pivots, b, /*reverse=*/false);
      triangularSolve(lu, x, b, /*lower=*/true, false, /*unit=*/true);
      triangularSolve(lu, x, b, /*lower=*/false, false, /*unit=*/false);
    } else {
      triangularSolve(lu, x, b, /*lower=*/true, true, /*unit=*/false);   // U^T
      triangularSolve(lu, x, b, /*lower=*/false, true, /*unit=*/true);   // L^T
      swapRows(x, pivots, b, /*reverse=*/true);
    }
  }
}

/// H = I - tau v v^T (v(0) = 1, v(r) = a(b, i + r, column) below) applied to
/// the rows i.. of C (left, C(b, i + r, c)) or its columns i.. (right).
template <typename T>
void applyReflector(const MemRef<T, 3>& reflectors, int64_t b, int64_t i, int64_t column,
                    T tau, const MemRef<T, 3>& c, int64_t first_other, bool left) {
  if (tau == T(0)) return;
  const int64_t length = left ? c.sizes[1] - i : c.sizes[2] - i;
  const int64_t others = left ? c.sizes[2] : c.sizes[1];
  auto v = [&](int64_t r) { return r == 0 ? T(1) : at3(reflectors, b, i + r, column); };
  auto element = [&](int64_t r, int64_t o) -> T& {
    return left ? at3(c, b, i + r, o) : at3(c, b, o, i + r);
  };
  for (int64_t o = first_other; o < others; ++o) {
    T dot = 0;
    for (int64_t r = 0; r < length; ++r) dot += v(r) * element(r, o);
    const T scale = tau * dot;
    for (int64_t r = 0; r < length; ++r) element(r, o) -= scale * v(r);
  }
}

// args: A (B, m, n; overwritten by R above the diagonal and the reflectors
// below), tau (B, min(m, n)).
template <typename T>
void geqrf(void* const* args, const maia_grid_t* grid) {
  const auto& a = memref<T, 3>(args, 0);
  const auto& tau = memref<T, 2>(args, 1);
  const int64_t m = a.sizes[1], n = a.sizes[2], k = std::min(m, n);
  auto slice = maia_kernel::programSlice(grid, a.sizes[0]);
  for (int64_t b = slice.begin; b < slice.end; ++b) {
    for (int64_t j = 0; j < k; ++j) {
      const T alpha = at3(a, b, j, j);
      T tail = 0;  // |x(1:)|, scaled against overflow as nrm2
      for (int64_t i = j + 1; i < m; ++i) tail = std::hypot(tail, at3(a, b, i, j));
      T& t = tau.aligned[tau.offset + b * tau.strides[0] + j * tau.strides[1]];
      if (tail == T(0)) {
        t = T(0);
        continue;
      }
      const T beta = -std::copysign(std::hypot(alpha, tail), alpha);
      t = (beta - alpha) / beta;
      const T scale = T(1) / (alpha - beta);
      for (int64_t i = j + 1; i < m; ++i) at3(a, b, i, j) *= scale;
      at3(a, b, j, j) = beta;
      // H(j) applied to the columns after j, through a view of A as C.
      applyReflector(a, b, j, j, t, a, j + 1, /*left=*/true);
    }
  }
}

// args: A (B, m, n; the first k columns hold reflectors, overwritten by
// Q's first n columns), tau (B, k).
template <typename T>
void orgqr(void* const* args, const maia_grid_t* grid) {
  const auto& a = memref<T, 3>(args, 0);
  const auto& tau = memref<T, 2>(args, 1);
  const int64_t m = a.sizes[1], n = a.sizes[2], k = tau.sizes[1];
  auto slice = maia_kernel::programSlice(grid, a.sizes[0]);
  for (int64_t b = slice.begin; b < slice.end; ++b) {
    for (int64_t j = k; j < n; ++j)
      for (int64_t i = 0; i < m; ++i) at3(a, b, i, j) = i == j ? T(1) : T(0);
    for (int64_t i = k - 1; i >= 0; --i) {
      const T t = tau.aligned[tau.offset + b * tau.strides[0] + i * tau.strides[1]];
      if (i < n - 1) applyReflector(a, b, i, i, t, a, i + 1, /*left=*/true);
      for (int64_t r = i + 1; r < m; ++r) at3(a, b, r, i) *= -t;
      at3(a, b, i, i) = T(1) - t;
      for (int64_t r = 0; r < i; ++r) at3(a, b, r, i) = T(0);
    }
  }
}

// args: reflectors (B, m, k), tau (B, k), C (B, p, q; overwritten by
// op(Q) C (left) or C op(Q)), left, transpose. Q = H(0) ... H(k-1).
template <typename T>
void ormqr(void* const* args, const maia_grid_t* grid) {
  const auto& a = memref<T, 3>(args, 0);
  const auto& tau = memref<T, 2>(args, 1);
  const auto& c = memref<T, 3>(args, 2);
  const bool left = scalar<int64_t>(args, 3) != 0;
  const bool transpose = scalar<int64_t>(args, 4) != 0;
  const int64_t k = tau.sizes[1];
  // Q C and C Q^T apply H(k-1) first; Q^T C and C Q apply H(0) first.
  const bool backward = left != transpose;
  auto slice = maia_kernel::programSlice(grid, c.sizes[0]);
  for (int64_t b = slice.begin; b < slice.end; ++b) {
    for (int64_t step = 0; step < k; ++step) {
      const int64_t i = backward ? k - 1 - step : step;
      const T t = tau.aligned[tau.offset + b * tau.strides[0] + i * tau.strides[1]];
      applyReflector(a, b, i, i, t, c, 0, left);
    }
  }
}

// lu_unpack's permutation: perm (B, m; 0..m-1 on entry) with the pivots'
// swaps applied in order (perm[i] and perm[pivot[i] - 1] exchanged).
// args: perm (int64), pivots (B, k).
inline void luPermutation(void* const* args, const maia_grid_t* grid) {
  const auto& perm = memref<int64_t, 2>(args, 0);
  const auto& pivots = memref<int32_t, 2>(args, 1);
  const int64_t m = perm.sizes[1], k = pivots.sizes[1];
  auto slice = maia_kernel::programSlice(grid, perm.sizes[0]);
  for (int64_t b = slice.begin; b < slice.end; ++b) {
    int64_t* row = perm.aligned + perm.offset + b * perm.strides[0];
    for (int64_t i = 0; i < k; ++i) {
      const int64_t p =
          pivots.aligned[pivots.offset + b * pivots.strides[0] + i * pivots.strides[1]] - 1;
      if (p < 0 || p >= m) __builtin_trap();  // not pivots of this LU
      std::swap(row[i * perm.strides[1]], row[p * perm.strides[1]]);
    }
  }
}

// args: A (B, n, n; its lower triangle overwritten by L, the strict upper
// triangle zeroed), info (B). Stops at the first leading minor that is not
// positive definite (info > 0) with that minor's reduced diagonal in place
// and the columns after it untouched, as potf2.
template <typename T>
void cholesky(void* const* args, const maia_grid_t* grid) {
  const auto& a = memref<T, 3>(args, 0);
  const auto& info = memref<int32_t, 1>(args, 1);
  const int64_t n = a.sizes[1];
  auto slice = maia_kernel::programSlice(grid, a.sizes[0]);
  for (int64_t b = slice.begin; b < slice.end; ++b) {
    int32_t failed = 0;
    for (int64_t j = 0; j < n && failed == 0; ++j) {
      T diagonal = at3(a, b, j, j);
      for (int64_t k = 0; k < j; ++k) diagonal -= at3(a, b, j, k) * at3(a, b, j, k);
      if (!(diagonal > T(0))) {
        at3(a, b, j, j) = diagonal;  // as potf2 leaves it
        failed = static_cast<int32_t>(j + 1);
        break;
      }
      const T root = std::sqrt(diagonal);
      at3(a, b, j, j) = root;
      for (int64_t i = j + 1; i < n; ++i) {
        T value = at3(a, b, i, j);
        for (int64_t k = 0; k < j; ++k) value -= at3(a, b, i, k) * at3(a, b, j, k);
        at3(a, b, i, j) = value / root;
      }
    }
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = i + 1; j < n; ++j) at3(a, b, i, j) = T(0);
    at1(info, b) = failed;
  }
}

}  // namespace maia_nn
