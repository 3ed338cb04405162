// The embedding kernels beyond embedding's own backward (nn.h):
// embedding_renorm_ and embedding_bag.
//
// embedding_bag: per bag (a range of indices given by offsets), the sum,
// mean or elementwise max of the weight rows the indices name, as the
// CPU's _embedding_bag defines them: padding_idx rows are skipped and not
// counted, empty bags give 0 (max index 0), per_sample_weights scale the
// rows (sum only), max keeps the first row's value unless a later one is
// greater (so a NaN after the first is passed over, a NaN first stays).
// Sums run in index order in the compute type (float for float16/bfloat16).
// Weight, grad and out rows have unit column stride (the host makes them
// contiguous).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include <maia/kernel_abi.h>

#include "nn.h"

namespace maia_nn {

// embedding_renorm_: each distinct row of weight named by the sorted
// indices, whose norm_type-norm (accumulated in double) exceeds max_norm,
// is scaled by max_norm / (norm + 1e-7) in the compute type, as the CPU.
// args: weight (V, D; modified), sorted indices (n), max_norm, norm_type.
// Programs own positions of the sorted indices; a row is renormed at its
// first position only, so no two programs touch the same row.
template <typename T>
void embeddingRenorm(void* const* args, const maia_grid_t* grid) {
  using C = compute_t<T>;
  const auto& weight = memref<T, 2>(args, 0);
  const auto& sorted = memref<int64_t, 1>(args, 1);
  const double max_norm = scalar<double>(args, 2);
  const double p = scalar<double>(args, 3);
  const int64_t width = weight.sizes[1];
  auto slice = maia_kernel::programSlice(grid, sorted.sizes[0]);
  for (int64_t k = slice.begin; k < slice.end; ++k) {
    const int64_t j = at1(sorted, k);
    if (k > 0 && at1(sorted, k - 1) == j) continue;
    checkIndex(j, weight.sizes[0]);
    T* values = mutableRow(weight, j);
    double norm = 0;
    for (int64_t d = 0; d < width; ++d) {
      const double magnitude = std::fabs(static_cast<double>(load(values[d])));
      if (std::isinf(p)) norm = magnitude > norm || std::isnan(magnitude) ? magnitude : norm;
      else if (p == 0) norm += magnitude != 0;
      else if (p == 1) norm += magnitude;
      else if (p == 2) norm += magnitude * magnitude;
      else norm += std::pow(magnitude, p);
    }
    if (p == 2) norm = std::sqrt(norm);
    else if (!std::isinf(p) && p != 0 && p != 1) norm = std::pow(norm, 1.0 / p);
    if (!(norm > max_norm)) continue;
    const C scale = static_cast<C>(max_norm / (norm + 1e-7));
    for (int64_t d = 0; d < width; ++d)
      values[d] = store<T>(static_cast<C>(load(values[d])) * scale);
  }
}

enum EmbeddingBagMode : int64_t { kBagSum = 0, kBagMean = 1, kBagMax = 2 };

// args: out (B, D), max_indices (B, D), bag_size (B), offset2bag (n),
// weight (V, D), indices (n), offsets (B + 1; the last is the end of the
// last bag), per_sample_weights (n, read when has_weights), mode,
// padding_idx (-1: none), has_weights. Programs own bags.
template <typename T>
void embeddingBag(void* const* args, const maia_grid_t* grid) {
  using C = compute_t<T>;
  const auto& out = memref<T, 2>(args, 0);
  const auto& max_indices = memref<int64_t, 2>(args, 1);
  const auto& bag_size = memref<int64_t, 1>(args, 2);
  const auto& offset2bag = memref<int64_t, 1>(args, 3);
  const auto& weight = memref<T, 2>(args, 4);
  const auto& indices = memref<int64_t, 1>(args, 5);
  const auto& offsets = memref<int64_t, 1>(args, 6);
  const auto& weights = memref<T, 1>(args, 7);
  const int64_t mode = scalar<int64_t>(args, 8);
  const int64_t padding = scalar<int64_t>(args, 9);
  const bool has_weights = scalar<int64_t>(args, 10) != 0;
  const int64_t width = out.sizes[1], rows = weight.sizes[0];
  constexpr int64_t kChunk = 256;  // columns accumulated at once (on the stack)
  C acc[kChunk];
  auto slice = maia_kernel::programSlice(grid, out.sizes[0]);
  for (int64_t bag = slice.begin; bag < slice.end; ++bag) {
    const int64_t begin = at1(offsets, bag), end = at1(offsets, bag + 1);
    // Offsets start at 0, never decrease and stay within the indices.
    if ((bag == 0 && begin != 0) || end < begin || end > indices.sizes[0]) __builtin_trap();
    int64_t* arg = max_indices.aligned + max_indices.offset + bag * max_indices.strides[0];
    const int64_t arg_stride = max_indices.strides[1];
    int64_t count = 0;
    for (int64_t first = 0; first < width || first == 0; first += kChunk) {
      const int64_t columns = std::min(kChunk, width - first);
      for (int64_t d = 0; d < columns; ++d) {
        acc[d] = C(0);
        if (mode == kBagMax) arg[(first + d) * arg_stride] = 0;
      }
      count = 0;
      for (int64_t i = begin; i < end; ++i) {
        at1(offset2bag, i) = bag;
        const int64_t j = at1(indices, i);
        if (j == padding) continue;
        checkIndex(j, rows);
        const T* src = row(weight, j) + first;
        if (mode == kBagMax) {
          for (int64_t d = 0; d < columns; ++d) {
            const C value = static_cast<C>(load(src[d]));
            if (count == 0 || value > acc[d]) {
              acc[d] = value;
              arg[(first + d) * arg_stride] = j;
            }
          }
        } else if (has_weights) {
          const C scale = static_cast<C>(load(at1(weights, i)));
          for (int64_t d = 0; d < columns; ++d) acc[d] += static_cast<C>(load(src[d])) * scale;
        } else {
          for (int64_t d = 0; d < columns; ++d) acc[d] += static_cast<C>(load(src[d]));
        }
        ++count;
      }
      const C divisor = mode == kBagMean && count > 0 ? static_cast<C>(count) : C(1);
      T* dst = mutableRow(out, bag) + first;
      for (int64_t d = 0; d < columns; ++d) dst[d] = store<T>(acc[d] / divisor);
      if (width == 0) break;
    }
    at1(bag_size, bag) = count;
  }
}

// _embedding_bag_dense_backward: grad_weight (V, D; fully written) from
// grad (B, D). Sum/mean: each index's bag row (scaled by its sample weight,
// divided by the bag size for mean) added to its weight row, padding
// skipped; max: each element of grad added at its max index, for non-empty
// bags. Programs own column blocks and walk indices in order
// (deterministic, like embedding's backward).
// args: grad_weight, grad, indices (n), offset2bag (n), bag_size (B),
// max_indices (B, D), per_sample_weights (n), mode, padding_idx, has_weights.
template <typename T>
void embeddingBagBackward(void* const* args, const maia_grid_t* grid) {
  using C = compute_t<T>;
  const auto& gw = memref<T, 2>(args, 0);
  const auto& grad = memref<T, 2>(args, 1);
  const auto& indices = memref<int64_t, 1>(args, 2);
  const auto& offset2bag = memref<int64_t, 1>(args, 3);
  const auto& bag_size = memref<int64_t, 1>(args, 4);
  const auto& max_indices = memref<int64_t, 2>(args, 5);
  const auto& weights = memref<T, 1>(args, 6);
  const int64_t mode = scalar<int64_t>(args, 7);
  const int64_t padding = scalar<int64_t>(args, 8);
  const bool has_weights = scalar<int64_t>(args, 9) != 0;
  const int64_t rows = gw.sizes[0];
  auto slice = maia_kernel::programSlice(grid, gw.sizes[1]);
  if (slice.begin >= slice.end) return;
  for (int64_t r = 0; r < rows; ++r) {
    T* dst = mutableRow(gw, r);
    for (int64_t d = slice.begin; d < slice.end; ++d) dst[d] = store<T>(0);
  }
  auto add = [&](int64_t j, int64_t d, C value) {
    checkIndex(j, rows);
    T& target = mutableRow(gw, j)[d];
    target = store<T>(static_cast<C>(load(target)) + value);
  };
  if (mode == kBagMax) {
    for (int64_t bag = 0; bag < grad.sizes[0]; ++bag) {
      if (at1(bag_size, bag) == 0) continue;
      const int64_t* arg = max_indices.aligned + max_indices.offset + bag * max_indices.strides[0];
      const T* src = row(grad, bag);
      for (int64_t d = slice.begin; d < slice.end; ++d)
        add(arg[d * max_indices.strides[1]], d, static_cast<C>(load(src[d])));
    }
    return;
  }
  for (int64_t i = 0; i < indices.sizes[0]; ++i) {
    const int64_t j = at1(indices, i);
    if (j == padding) continue;
    const int64_t bag = at1(offset2bag, i);
    C scale = has_weights ? static_cast<C>(load(at1(weights, i))) : C(1);
    if (mode == kBagMean) scale /= static_cast<C>(at1(bag_size, bag));
    const T* src = row(grad, bag);
    for (int64_t d = slice.begin; d < slice.end; ++d)
      add(j, d, static_cast<C>(load(src[d])) * scale);
  }
}

// _embedding_bag_per_sample_weights_backward: for each index i, the dot
// product of its bag's grad row and its weight row (0 for padding), in the
// compute type. args: out (n), grad (B, D), weight (V, D), indices (n),
// offset2bag (n), padding_idx. Programs own indices.
template <typename T>
void embeddingBagWeightsBackward(void* const* args, const maia_grid_t* grid) {
  using C = compute_t<T>;
  const auto& out = memref<T, 1>(args, 0);
  const auto& grad = memref<T, 2>(args, 1);
  const auto& weight = memref<T, 2>(args, 2);
  const auto& indices = memref<int64_t, 1>(args, 3);
  const auto& offset2bag = memref<int64_t, 1>(args, 4);
  const int64_t padding = scalar<int64_t>(args, 5);
  const int64_t width = grad.sizes[1];
  auto slice = maia_kernel::programSlice(grid, out.sizes[0]);
  for (int64_t i = slice.begin; i < slice.end; ++i) {
    const int64_t j = at1(indices, i);
    C dot = 0;
    if (j != padding) {
      checkIndex(j, weight.sizes[0]);
      const T* w = row(weight, j);
      const T* g = row(grad, at1(offset2bag, i));
      for (int64_t d = 0; d < width; ++d)
        dot += static_cast<C>(load(g[d])) * static_cast<C>(load(w[d]));
    }
    at1(out, i) = store<T>(dot);
  }
}

}  // namespace maia_nn
