// cdist's p-norm distances between the rows of two batched matrices, as
// the CPU's cdist kernel defines each p (Distance.cpp): p = 0 counts the
// differing coordinates, 1 sums |d|, 2 is the square root of the summed
// squares, infinity the largest |d| (the CPU's max passes over NaN), any
// other p (sum |d|^p)^(1/p). Sums run in the storage type (float32/float64), in
// coordinate order, where the CPU's vectors keep lane-wise partial sums:
// results agree to rounding, not bit for bit.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

#include <maia/kernel_abi.h>

#include "nn.h"

namespace maia_nn {

// args: out (B, R1, R2), x1 (B, R1, C), x2 (B, R2, C), p (f64). Programs
// own rows (b, i) of out.
template <typename T>
void cdist(void* const* args, const maia_grid_t* grid) {
  const auto& out = memref<T, 3>(args, 0);
  const auto& x1 = memref<T, 3>(args, 1);
  const auto& x2 = memref<T, 3>(args, 2);
  const double p = scalar<double>(args, 3);
  const int64_t r1 = out.sizes[1], r2 = out.sizes[2], c = x1.sizes[2];
  const bool inf = std::isinf(p);
  const T exponent = static_cast<T>(p), inverse = static_cast<T>(1.0 / p);
  auto slice = maia_kernel::programSlice(grid, out.sizes[0] * r1);
  for (int64_t row = slice.begin; row < slice.end; ++row) {
    const int64_t b = row / r1, i = row % r1;
    const T* a = x1.aligned + x1.offset + b * x1.strides[0] + i * x1.strides[1];
    for (int64_t j = 0; j < r2; ++j) {
      const T* v = x2.aligned + x2.offset + b * x2.strides[0] + j * x2.strides[1];
      T acc = 0;
      for (int64_t k = 0; k < c; ++k) {
        const T d = std::abs(a[k * x1.strides[2]] - v[k * x2.strides[2]]);
        if (inf)
          acc = d > acc ? d : acc;  // std::max(acc, d), as the CPU: a NaN is passed over
        else if (p == 0)
          acc += std::isnan(d) ? d : d != 0 ? T(1) : T(0);  // min(ceil(d), 1): NaN stays
        else if (p == 1)
          acc += d;
        else if (p == 2)
          acc += d * d;
        else
          acc += std::pow(d, exponent);
      }
      if (!inf && p == 2)
        acc = std::sqrt(acc);
      else if (!inf && p != 0 && p != 1)
        acc = std::pow(acc, inverse);
      out.aligned[out.offset + b * out.strides[0] + i * out.strides[1] + j * out.strides[2]] =
          acc;
    }
  }
}

/// The gradient of one distance dist = ||x - y||_p with respect to one
/// coordinate of x, times the incoming grad, given diff = x_c - y_c; as the
/// CPU defines it per p: 0 for p = 0 and for a zero distance (p != 1, inf),
/// sign(diff) grad for p = 1, the coordinates at the maximum for p = inf.
template <typename T>
T distanceGradient(T diff, T dist, T grad, double p) {
  const T sign = diff > T(0) ? T(1) : diff < T(0) ? T(-1) : T(0);
  if (p == 0) return T(0);
  if (p == 1) return sign * grad;
  if (std::isinf(p)) return sign * (std::abs(diff) == dist ? T(1) : T(0)) * grad;
  if (dist == T(0)) return T(0);
  if (p == 2) return grad * diff / dist;
  if (p < 2)
    return sign * std::pow(std::abs(diff), static_cast<T>(p - 1)) * grad /
           std::pow(dist, static_cast<T>(p - 1));
  return diff * std::pow(std::abs(diff), static_cast<T>(p - 2)) * grad /
         std::pow(dist, static_cast<T>(p - 1));
}

// _cdist_backward: grad_x1 (B, R1, C) = sum over j of the gradient of
// dist(b, i, j) with respect to x1(b, i, :). args: grad_x1, grad (B, R1, R2),
// x1 (B, R1, C), x2 (B, R2, C), dist (B, R1, R2), p. Programs own rows (b, i).
template <typename T>
void cdistBackward(void* const* args, const maia_grid_t* grid) {
  const auto& out = memref<T, 3>(args, 0);
  const auto& grad = memref<T, 3>(args, 1);
  const auto& x1 = memref<T, 3>(args, 2);
  const auto& x2 = memref<T, 3>(args, 3);
  const auto& dist = memref<T, 3>(args, 4);
  const double p = scalar<double>(args, 5);
  const int64_t r1 = x1.sizes[1], r2 = x2.sizes[1], columns = x1.sizes[2];
  auto slice = maia_kernel::programSlice(grid, x1.sizes[0] * r1);
  for (int64_t row = slice.begin; row < slice.end; ++row) {
    const int64_t b = row / r1, i = row % r1;
    for (int64_t c = 0; c < columns; ++c) {
      const T x = at3(x1, b, i, c);
      T sum = 0;
      for (int64_t j = 0; j < r2; ++j)
        sum += distanceGradient(x - at3(x2, b, j, c), at3(dist, b, i, j), at3(grad, b, i, j),
                                p);
      at3(out, b, i, c) = sum;
    }
  }
}

// _pdist_backward: grad_x (N, C) from the condensed grad and dist (N (N-1)
// / 2, pairs i < j in row-major order): row i gains the gradient of every
// pair it is in (with x_i - x_j, so a pair's two rows get opposite terms).
// args: grad_x, grad, x, dist, p. Programs own rows.
template <typename T>
void pdistBackward(void* const* args, const maia_grid_t* grid) {
  const auto& out = memref<T, 2>(args, 0);
  const auto& grad = memref<T, 1>(args, 1);
  const auto& x = memref<T, 2>(args, 2);
  const auto& dist = memref<T, 1>(args, 3);
  const double p = scalar<double>(args, 4);
  const int64_t n = x.sizes[0], columns = x.sizes[1];
  auto pair = [n](int64_t a, int64_t b) { return a * (2 * n - a - 1) / 2 + (b - a - 1); };
  auto element = [](const MemRef<T, 2>& m, int64_t i, int64_t c) -> T& {
    return m.aligned[m.offset + i * m.strides[0] + c * m.strides[1]];
  };
  auto slice = maia_kernel::programSlice(grid, n);
  for (int64_t i = slice.begin; i < slice.end; ++i) {
    for (int64_t c = 0; c < columns; ++c) {
      const T xi = element(x, i, c);
      T sum = 0;
      for (int64_t j = 0; j < n; ++j) {
        if (j == i) continue;
        const int64_t k = i < j ? pair(i, j) : pair(j, i);
        sum += distanceGradient(xi - element(x, j, c), at1(dist, k), at1(grad, k), p);
      }
      element(out, i, c) = sum;
    }
  }
}

}  // namespace maia_nn
