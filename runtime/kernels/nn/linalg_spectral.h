// Singular values and symmetric eigenvalues (no vectors) by Jacobi
// rotations, in double: one-sided Jacobi (Hestenes) on the columns for
// singular values, cyclic two-sided Jacobi for eigenvalues. Jacobi is
// accurate to high relative precision and its values are independent of
// rotation order, so they agree with the CPU's LAPACK (gesdd, syevd) to
// rounding; singular vectors and eigenvectors, whose signs are LAPACK's
// choice, stay on the host fallback. Cost O(sweeps n^2 m): the sizes
// models pass (small or batched matrices), not large dense problems.
//
// Both work in place on a double workspace the host fills (A, or A^T so
// that rows >= columns; the symmetric matrix from the UPLO triangle).
// A non-finite entry gives LAPACK's info: -4 for gesdd's argument check,
// 1 for syevd. Programs own batch entries.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>

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

// args: work (B, m, n; m >= n, destroyed), values (B, n; descending), info (B).
inline void svdValues(void* const* args, const maia_grid_t* grid) {
  forEachFiniteMatrix(args, grid, -4, [](const MemRef<double, 3>& w, int64_t b, double* value) {
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
        }
      }
      if (!rotated) break;
    }
    for (int64_t j = 0; j < n; ++j) {
      double norm = 0;
      for (int64_t i = 0; i < m; ++i) norm = std::hypot(norm, at3(w, b, i, j));
      value[j] = norm;
    }
    std::sort(value, value + n, std::greater<double>());
  });
}

// args: work (B, n, n; symmetric, destroyed), values (B, n; ascending), info (B).
inline void symmetricEigenvalues(void* const* args, const maia_grid_t* grid) {
  forEachFiniteMatrix(args, grid, 1, [](const MemRef<double, 3>& w, int64_t b, double* value) {
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
          const double t =
              std::copysign(1.0, theta) / (std::fabs(theta) + std::hypot(1.0, theta));
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
        }
      }
    }
    for (int64_t j = 0; j < n; ++j) value[j] = at3(w, b, j, j);
    std::sort(value, value + n);
  });
}

}  // namespace maia_nn
