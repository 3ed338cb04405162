// Advanced indexing kernels: aten::index (gather by index tensors),
// index_put_ (assign or accumulate) and nonzero, templated over the storage
// type and instantiated per dtype by gen_nn_kernels.py.
//
// runtime/torch/csrc/ops/Indexing.cpp brings every call to one shape:
// - self: a rank-8 memref whose dimensions are [before | indexed | after]
//   (leading size-1 dimensions pad lower ranks; the K indexed dimensions are
//   adjacent, transposed to the front when they were not, as PyTorch does);
// - idx: the K index tensors broadcast together, stacked as int64 [K, N];
// - the result (index) or the values (index_put_): a [P, N, Q] memref, where
//   P is the product of the before sizes and Q of the after sizes.
// Negative indices count from the end; an index out of range traps (a sticky
// device error naming the kernel, see nn.h).
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include <maia/kernel_abi.h>

#include "nn.h"

namespace maia_nn {

constexpr int kIndexRank = 8;

/// Offsets (in elements) of dimensions [first, 8) of m in row-major order,
/// walked like an odometer: one add per position instead of a division per
/// dimension.
template <typename T>
class Odometer {
 public:
  Odometer(const MemRef<T, kIndexRank>& m, int first, int64_t start) : m_(m), first_(first) {
    for (int d = kIndexRank - 1; d >= first; --d) {
      coord_[d] = start % m.sizes[d];
      start /= m.sizes[d];
      offset_ += coord_[d] * m.strides[d];
    }
  }
  int64_t offset() const { return offset_; }
  int64_t coord(int d) const { return coord_[d]; }
  void next() {
    for (int d = kIndexRank - 1; d >= first_; --d) {
      offset_ += m_.strides[d];
      if (++coord_[d] < m_.sizes[d]) return;
      offset_ -= coord_[d] * m_.strides[d];
      coord_[d] = 0;
    }
  }

 private:
  const MemRef<T, kIndexRank>& m_;
  const int first_;
  int64_t coord_[kIndexRank] = {};
  int64_t offset_ = 0;
};

/// The offset of position p of the before dimensions [0, before).
template <typename T>
int64_t beforeOffset(const MemRef<T, kIndexRank>& self, int before, int64_t p) {
  int64_t offset = 0;
  for (int d = before - 1; d >= 0; --d) {
    offset += (p % self.sizes[d]) * self.strides[d];
    p /= self.sizes[d];
  }
  return offset;
}

/// The offset that index column n selects in the indexed dimensions.
template <typename T>
int64_t indexedOffset(const MemRef<T, kIndexRank>& self, const MemRef<int64_t, 2>& idx,
                      int before, int64_t n) {
  int64_t offset = 0;
  for (int64_t k = 0; k < idx.sizes[0]; ++k) {
    const int64_t size = self.sizes[before + k];
    int64_t j = idx.at(k, n);
    if (j < 0) j += size;
    checkIndex(j, size);
    offset += j * self.strides[before + k];
  }
  return offset;
}

// args: out [P, N, Q], self (rank 8), idx [K, N], before.
// Each program owns a block of (p, n) rows.
template <typename T>
void indexGather(void* const* args, const maia_grid_t* grid) {
  const auto& out = memref<T, 3>(args, 0);
  const auto& self = memref<T, kIndexRank>(args, 1);
  const auto& idx = memref<int64_t, 2>(args, 2);
  const int before = static_cast<int>(scalar<int64_t>(args, 3));
  const int after = before + static_cast<int>(idx.sizes[0]);
  const int64_t n = out.sizes[1], q_end = out.sizes[2];
  auto slice = maia_kernel::programSlice(grid, out.sizes[0] * n);
  for (int64_t r = slice.begin; r < slice.end; ++r) {
    const int64_t p = r / n, b = r % n;
    const T* src = self.aligned + self.offset + beforeOffset(self, before, p) +
                   indexedOffset(self, idx, before, b);
    T* dst = out.aligned + out.offset + p * out.strides[0] + b * out.strides[1];
    const int64_t so = out.strides[2];
    if (after >= kIndexRank - 1) {  // at most one after dimension: a strided line
      const int64_t ss = after == kIndexRank ? 0 : self.strides[kIndexRank - 1];
      for (int64_t q = 0; q < q_end; ++q) dst[q * so] = src[q * ss];
      continue;
    }
    Odometer<T> walk(self, after, 0);
    for (int64_t q = 0; q < q_end; ++q, walk.next()) dst[q * so] = src[walk.offset()];
  }
}

// args: self (rank 8, written in place), idx [K, N], values [P, N, Q],
// before, accumulate. Each program owns blocks of (p, kBlock after
// positions) and walks n in order, so duplicate indices resolve as on the
// CPU (the last write wins; sums accumulate in index order) without races.
template <typename T>
void indexPut(void* const* args, const maia_grid_t* grid) {
  using C = compute_t<T>;
  constexpr int64_t kBlock = 256;
  const auto& self = memref<T, kIndexRank>(args, 0);
  const auto& idx = memref<int64_t, 2>(args, 1);
  const auto& values = memref<T, 3>(args, 2);
  const int before = static_cast<int>(scalar<int64_t>(args, 3));
  const bool accumulate = scalar<int64_t>(args, 4) != 0;
  const int after = before + static_cast<int>(idx.sizes[0]);
  const int64_t n = values.sizes[1], q_end = values.sizes[2];
  const int64_t blocks = (q_end + kBlock - 1) / kBlock;
  auto slice = maia_kernel::programSlice(grid, values.sizes[0] * blocks);
  int64_t offsets[kBlock];
  for (int64_t u = slice.begin; u < slice.end; ++u) {
    const int64_t p = u / blocks, q0 = (u % blocks) * kBlock;
    const int64_t width = std::min(kBlock, q_end - q0);
    Odometer<T> walk(self, after, q0);
    for (int64_t i = 0; i < width; ++i, walk.next()) offsets[i] = walk.offset();
    const int64_t base = self.offset + beforeOffset(self, before, p);
    for (int64_t b = 0; b < n; ++b) {
      T* dst = self.aligned + base + indexedOffset(self, idx, before, b);
      const T* src = values.aligned + values.offset + p * values.strides[0] +
                     b * values.strides[1] + q0 * values.strides[2];
      const int64_t sv = values.strides[2];
      if (!accumulate) {
        for (int64_t i = 0; i < width; ++i) dst[offsets[i]] = src[i * sv];
      } else if constexpr (std::is_same_v<T, bool>) {
        for (int64_t i = 0; i < width; ++i) dst[offsets[i]] = dst[offsets[i]] || src[i * sv];
      } else {
        for (int64_t i = 0; i < width; ++i)
          dst[offsets[i]] = store<T>(static_cast<C>(load(dst[offsets[i]])) +
                                     static_cast<C>(load(src[i * sv])));
      }
    }
  }
}

// nonzero in two launches over the same grid (so the same program slices of
// the elements in row-major order): nonzeroCount writes each program's count
// of nonzero elements, the host sizes the result from their sum, then
// nonzeroWrite writes each program's coordinates after those of the
// programs before it (the order of a sequential scan).

// args: counts [programs], in (rank 8).
template <typename T>
void nonzeroCount(void* const* args, const maia_grid_t* grid) {
  const auto& counts = memref<int64_t, 1>(args, 0);
  const auto& in = memref<T, kIndexRank>(args, 1);
  int64_t numel = 1;
  for (int d = 0; d < kIndexRank; ++d) numel *= in.sizes[d];
  auto slice = maia_kernel::programSlice(grid, numel);
  const T* data = in.aligned + in.offset;
  int64_t count = 0;
  Odometer<T> walk(in, 0, slice.begin);
  for (int64_t i = slice.begin; i < slice.end; ++i, walk.next())
    count += load(data[walk.offset()]) != compute_t<T>(0);
  counts.at(maia_kernel::linearProgramId(grid)) = count;
}

// args: out [rows, rank], counts [programs], in (rank 8), pad (the
// leading padding dimensions of in; out's columns are dimensions pad..7).
// Coordinates past out's rows are dropped: nonzero sizes out to the total,
// nonzero_static to its static size without waiting for the counts.
template <typename T>
void nonzeroWrite(void* const* args, const maia_grid_t* grid) {
  const auto& out = memref<int64_t, 2>(args, 0);
  const auto& counts = memref<int64_t, 1>(args, 1);
  const auto& in = memref<T, kIndexRank>(args, 2);
  const int pad = static_cast<int>(scalar<int64_t>(args, 3));
  int64_t numel = 1;
  for (int d = 0; d < kIndexRank; ++d) numel *= in.sizes[d];
  auto slice = maia_kernel::programSlice(grid, numel);
  int64_t row = 0;
  for (int64_t p = 0; p < maia_kernel::linearProgramId(grid); ++p) row += counts.at(p);
  const T* data = in.aligned + in.offset;
  Odometer<T> walk(in, 0, slice.begin);
  for (int64_t i = slice.begin; i < slice.end; ++i, walk.next()) {
    if (load(data[walk.offset()]) == compute_t<T>(0)) continue;
    if (row >= out.sizes[0]) return;
    for (int d = pad; d < kIndexRank; ++d) out.at(row, d - pad) = walk.coord(d);
    ++row;
  }
}

}  // namespace maia_nn
