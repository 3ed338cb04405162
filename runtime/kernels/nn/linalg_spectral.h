// Singular value and symmetric eigenvalue decompositions by Jacobi
// rotations, in double: one-sided Jacobi (Hestenes) on the columns for the
// SVD, cyclic two-sided Jacobi for eigh. Jacobi is accurate to high
// relative precision and its values are independent of rotation order, so
// they agree with the CPU's LAPACK (gesdd, syevd) to rounding. Vectors,
// when asked for, are accumulated from the same rotations; their signs
// (and, for repeated values, their basis) are Jacobi's, not LAPACK's: a
// valid decomposition, equal to the CPU's up to those choices. Cost
// O(sweeps n^2 m): the sizes models pass (small or batched matrices), not
// large dense problems.
//
// All work in place on a double workspace the host fills (A, or A^T so
// that rows >= columns; the symmetric matrix from the UPLO triangle).
// A non-finite entry gives LAPACK's info: -4 for gesdd's argument check,
// 1 for syevd. Programs own batch entries.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <numeric>
#include <vector>

#include <maia/kernel_abi.h>

#include "linalg.h"
#include "nn.h"

namespace maia_nn {

inline bool allFinite(const MemRef<double, 3>& w, int64_t b) {
  for (int64_t i = 0; i < w.sizes[1]; ++i)
    for (int64_t j = 0; j < w.sizes[2]; ++j)
      if (!std::isfinite(at3(w, b, i, j))) return false;
  return true;
}

constexpr int kMaxSweeps = 80;

/// The frame both kernels share. args: work (B, rows, cols), values (B, k;
/// rows of unit stride, as the host allocates them), info (B). Programs own
/// batch entries; an entry with a non-finite element gets NaN values and
/// LAPACK's `failure_info`, the others compute(w, b, values_row) and 0.
template <typename Compute>
void forEachFiniteMatrix(void* const* args, const maia_grid_t* grid, int32_t failure_info,
                         Compute compute) {
  const auto& w = memref<double, 3>(args, 0);
  const auto& values = memref<double, 2>(args, 1);
  const auto& info = memref<int32_t, 1>(args, 2);
  auto slice = maia_kernel::programSlice(grid, w.sizes[0]);
  for (int64_t b = slice.begin; b < slice.end; ++b) {
    double* row = values.aligned + values.offset + b * values.strides[0];
    if (allFinite(w, b)) {
      compute(w, b, row);
      at1(info, b) = 0;
    } else {
      std::fill(row, row + values.sizes[1], NAN);
      at1(info, b) = failure_info;
    }
  }
}

/// Columns p and q of the row-major n x n v rotated by (c, s).
inline void rotateColumns(double* v, int64_t n, int64_t p, int64_t q, double c, double s) {
  for (int64_t k = 0; k < n; ++k) {
    const double x = v[k * n + p], y = v[k * n + q];
    v[k * n + p] = c * x - s * y;
    v[k * n + q] = s * x + c * y;
  }
}

/// One-sided Jacobi: rotates pairs of columns of w[b] (m x n) until all
/// are orthogonal, applying each rotation to the columns of v (n x n,
/// row-major) too when v is given.
inline void orthogonalizeColumns(const MemRef<double, 3>& w, int64_t b, double* v) {
  const int64_t m = w.sizes[1], n = w.sizes[2];
  for (int sweep = 0; sweep < kMaxSweeps; ++sweep) {
    bool rotated = false;
    for (int64_t p = 0; p < n; ++p) {
      for (int64_t q = p + 1; q < n; ++q) {
        double alpha = 0, beta = 0, gamma = 0;
        for (int64_t i = 0; i < m; ++i) {
          const double x = at3(w, b, i, p), y = at3(w, b, i, q);
          alpha += x * x;
          beta += y * y;
          gamma += x * y;
        }
        if (gamma == 0 || std::fabs(gamma) <= 1e-15 * std::sqrt(alpha * beta)) continue;
        rotated = true;
        const double zeta = (beta - alpha) / (2 * gamma);
        const double t = std::copysign(1.0, zeta) / (std::fabs(zeta) + std::hypot(1.0, zeta));
        const double c = 1 / std::sqrt(1 + t * t), s = c * t;
        for (int64_t i = 0; i < m; ++i) {
          const double x = at3(w, b, i, p), y = at3(w, b, i, q);
          at3(w, b, i, p) = c * x - s * y;
          at3(w, b, i, q) = s * x + c * y;
        }
        if (v != nullptr) rotateColumns(v, n, p, q, c, s);
      }
    }
    if (!rotated) break;
  }
}

/// Cyclic Jacobi: rotates the symmetric w[b] (n x n) to diagonal form,
/// applying each rotation to the columns of v (row-major) when given.
inline void diagonalizeSymmetric(const MemRef<double, 3>& w, int64_t b, double* v) {
  const int64_t n = w.sizes[1];
  for (int sweep = 0; sweep < kMaxSweeps; ++sweep) {
    double off = 0, diagonal = 0;
    for (int64_t p = 0; p < n; ++p) {
      diagonal = std::hypot(diagonal, at3(w, b, p, p));
      for (int64_t q = p + 1; q < n; ++q) off = std::hypot(off, at3(w, b, p, q));
    }
    if (off <= 1e-17 * diagonal || off == 0) break;
    for (int64_t p = 0; p < n; ++p) {
      for (int64_t q = p + 1; q < n; ++q) {
        const double apq = at3(w, b, p, q);
        if (apq == 0) continue;
        const double theta = (at3(w, b, q, q) - at3(w, b, p, p)) / (2 * apq);
        const double t = std::copysign(1.0, theta) / (std::fabs(theta) + std::hypot(1.0, theta));
        const double c = 1 / std::sqrt(1 + t * t), s = c * t;
        for (int64_t k = 0; k < n; ++k) {  // columns p, q
          const double x = at3(w, b, k, p), y = at3(w, b, k, q);
          at3(w, b, k, p) = c * x - s * y;
          at3(w, b, k, q) = s * x + c * y;
        }
        for (int64_t k = 0; k < n; ++k) {  // rows p, q
          const double x = at3(w, b, p, k), y = at3(w, b, q, k);
          at3(w, b, p, k) = c * x - s * y;
          at3(w, b, q, k) = s * x + c * y;
        }
        if (v != nullptr) rotateColumns(v, n, p, q, c, s);
      }
    }
  }
}

inline double columnNorm(const MemRef<double, 3>& w, int64_t b, int64_t j) {
  double norm = 0;
  for (int64_t i = 0; i < w.sizes[1]; ++i) norm = std::hypot(norm, at3(w, b, i, j));
  return norm;
}

/// Indices of values in the order `before` sorts them (stable).
template <typename Before>
std::vector<int64_t> orderOf(const std::vector<double>& values, Before before) {
  std::vector<int64_t> order(values.size());
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t x, int64_t y) { return before(values[x], values[y]); });
  return order;
}

/// The columns of u[b] (m x cols) not `filled` (the filled ones are
/// orthonormal) made orthonormal to the others, in order: of the unit
/// vectors, the one with the longest remainder after two passes of
/// Gram-Schmidt against the columns so far, normalized.
inline void completeBasis(const MemRef<double, 3>& u, int64_t b, const std::vector<bool>& filled) {
  const int64_t m = u.sizes[1], cols = u.sizes[2];
  std::vector<double> x(m), best(m);
  for (int64_t j = 0; j < cols; ++j) {
    if (filled[j]) continue;
    double best_norm = -1;
    for (int64_t unit = 0; unit < m; ++unit) {
      std::fill(x.begin(), x.end(), 0.0);
      x[unit] = 1;
      for (int pass = 0; pass < 2; ++pass) {
        for (int64_t k = 0; k < cols; ++k) {
          if (k == j || (k > j && !filled[k])) continue;  // not yet a basis column
          double dot = 0;
          for (int64_t i = 0; i < m; ++i) dot += at3(u, b, i, k) * x[i];
          for (int64_t i = 0; i < m; ++i) x[i] -= dot * at3(u, b, i, k);
        }
      }
      double norm = 0;
      for (int64_t i = 0; i < m; ++i) norm = std::hypot(norm, x[i]);
      if (norm > best_norm) {
        best_norm = norm;
        best = x;
      }
    }
    for (int64_t i = 0; i < m; ++i) at3(u, b, i, j) = best[i] / best_norm;
  }
}

// args: work (B, m, n; m >= n, destroyed), values (B, n; descending), info (B).
inline void svdValues(void* const* args, const maia_grid_t* grid) {
  forEachFiniteMatrix(args, grid, -4, [](const MemRef<double, 3>& w, int64_t b, double* value) {
    orthogonalizeColumns(w, b, nullptr);
    for (int64_t j = 0; j < w.sizes[2]; ++j) value[j] = columnNorm(w, b, j);
    std::sort(value, value + w.sizes[2], std::greater<double>());
  });
}

// args: work (B, m, n; m >= n, destroyed), values (B, n; descending), info
// (B), u (B, m, n or m: the left vectors, completed to an orthonormal set
// where a singular value is 0 and beyond n), v (B, n, n: the right vectors
// as columns). A non-finite input leaves u and v unwritten (ATen raises).
inline void svdVectors(void* const* args, const maia_grid_t* grid) {
  const auto& u = memref<double, 3>(args, 3);
  const auto& v = memref<double, 3>(args, 4);
  forEachFiniteMatrix(args, grid, -4, [&](const MemRef<double, 3>& w, int64_t b, double* value) {
    const int64_t m = w.sizes[1], n = w.sizes[2];
    std::vector<double> rotations(n * n, 0.0);
    for (int64_t i = 0; i < n; ++i) rotations[i * n + i] = 1;
    orthogonalizeColumns(w, b, rotations.data());
    std::vector<double> norms(n);
    for (int64_t j = 0; j < n; ++j) norms[j] = columnNorm(w, b, j);
    const std::vector<int64_t> order = orderOf(norms, std::greater<double>());
    const double largest = n > 0 ? norms[order[0]] : 0;
    std::vector<bool> filled(u.sizes[2], false);
    for (int64_t j = 0; j < n; ++j) {
      const int64_t p = order[j];
      value[j] = norms[p];
      for (int64_t i = 0; i < n; ++i) at3(v, b, i, j) = rotations[i * n + p];
      if (norms[p] == 0 || norms[p] <= 1e-14 * largest) continue;  // no direction: completed
      for (int64_t i = 0; i < m; ++i) at3(u, b, i, j) = at3(w, b, i, p) / norms[p];
      filled[j] = true;
    }
    completeBasis(u, b, filled);
  });
}

// args: work (B, n, n; symmetric, destroyed), values (B, n; ascending), info (B).
inline void symmetricEigenvalues(void* const* args, const maia_grid_t* grid) {
  forEachFiniteMatrix(args, grid, 1, [](const MemRef<double, 3>& w, int64_t b, double* value) {
    diagonalizeSymmetric(w, b, nullptr);
    for (int64_t j = 0; j < w.sizes[1]; ++j) value[j] = at3(w, b, j, j);
    std::sort(value, value + w.sizes[1]);
  });
}

// args: work (B, n, n; symmetric, destroyed), values (B, n; ascending),
// info (B), vectors (B, n, n; the eigenvectors as columns).
inline void symmetricEigenvectors(void* const* args, const maia_grid_t* grid) {
  const auto& vectors = memref<double, 3>(args, 3);
  forEachFiniteMatrix(args, grid, 1, [&](const MemRef<double, 3>& w, int64_t b, double* value) {
    const int64_t n = w.sizes[1];
    std::vector<double> rotations(n * n, 0.0);
    for (int64_t i = 0; i < n; ++i) rotations[i * n + i] = 1;
    diagonalizeSymmetric(w, b, rotations.data());
    std::vector<double> diagonal(n);
    for (int64_t j = 0; j < n; ++j) diagonal[j] = at3(w, b, j, j);
    const std::vector<int64_t> order = orderOf(diagonal, std::less<double>());
    for (int64_t j = 0; j < n; ++j) {
      value[j] = diagonal[order[j]];
      for (int64_t i = 0; i < n; ++i) at3(vectors, b, i, j) = rotations[i * n + order[j]];
    }
  });
}

}  // namespace maia_nn
