// sort and topk along one dimension of rank-8 memrefs of any strides (the
// host pads lower-rank tensors with leading size-1 dimensions). Templated
// over the storage type, instantiated for every dtype by gen_nn_kernels.py.
//
// The orders are PyTorch's CPU kernels' (SortingKernel.cpp, TopKImpl.h):
// NaN is larger than every number (first when descending, last when
// ascending), float16/bfloat16 compare as float. Each slice is copied into
// (value, index) keys in a scratch buffer the host allocates (one region
// per program: a kernel owns no allocation), ordered there, and written
// back: indices from the keys, values copied from the input element each
// key names, so every value is bit for bit an input value.
//
// - stable sort: std::sort with ties broken by index, which is exactly the
//   stable order (no merge buffer needed);
// - unstable sort: std::sort with the value-only comparator, what the CPU
//   runs for the dtypes its vectorized quicksort does not take;
// - topk: the CPU's own steps (partial_sort when k * 64 <= n, else
//   nth_element and a sort of the first k - 1 when sorted), so ties select
//   the same indices as the CPU.
// - kthvalue, median/nanmedian along a dim and mode (one value and index per
//   slice) likewise repeat the CPU's selection (Sorting.cpp,
//   TensorCompareKernel.cpp): its median-of-three quickselect, nth_element
//   under its (value, index) order, std::sort by value then the longest run.
//
// Programs own contiguous blocks of slices (every dimension but the sorted
// one, row-major), so a result never depends on the program count.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include <maia/kernel_abi.h>

#include "nn.h"

namespace maia_nn {

constexpr int kSortRank = 8;

/// One element of a slice being ordered: its value in the compute type and
/// its position along the sorted dimension. 16 bytes for every dtype (the
/// host sizes the scratch with kSortKeyBytes).
template <typename C>
struct SortKey {
  C value;
  int64_t index;
};
constexpr int64_t kSortKeyBytes = 16;
static_assert(sizeof(SortKey<double>) == kSortKeyBytes && sizeof(SortKey<bool>) == kSortKeyBytes);

template <typename C>
bool isNan(C v) {
  if constexpr (std::is_floating_point_v<C>)
    return std::isnan(v);
  else
    return false;
}

/// a before b ascending: a smaller, or b NaN and a not (NaN is largest).
template <typename C>
struct Ascending {
  bool operator()(const SortKey<C>& a, const SortKey<C>& b) const {
    return (!isNan(a.value) && isNan(b.value)) || a.value < b.value;
  }
};

/// a before b descending: a larger, or a NaN and b not.
template <typename C>
struct Descending {
  bool operator()(const SortKey<C>& a, const SortKey<C>& b) const {
    return (isNan(a.value) && !isNan(b.value)) || a.value > b.value;
  }
};

/// Order, then the original position among equal values: the stable order.
template <typename Order>
struct ThenIndex {
  template <typename K>
  bool operator()(const K& a, const K& b) const {
    if (Order{}(a, b)) return true;
    if (Order{}(b, a)) return false;
    return a.index < b.index;
  }
};

/// The element offset of slice s of memref m: s spans every dimension but
/// dim, row-major.
template <typename T>
int64_t sliceOffset(const MemRef<T, kSortRank>& m, int dim, int64_t s) {
  int64_t offset = m.offset;
  for (int d = kSortRank - 1; d >= 0; --d) {
    if (d == dim) continue;
    offset += (s % m.sizes[d]) * m.strides[d];
    s /= m.sizes[d];
  }
  return offset;
}

template <typename T>
int64_t sliceCount(const MemRef<T, kSortRank>& m, int dim) {
  int64_t slices = 1;
  for (int d = 0; d < kSortRank; ++d)
    if (d != dim) slices *= m.sizes[d];
  return slices;
}

/// This program's keys: n of them in the scratch region it owns.
template <typename C>
SortKey<C>* programKeys(const MemRef<uint8_t, 1>& scratch, int64_t n, const maia_grid_t* grid) {
  uint8_t* base = scratch.aligned + scratch.offset;
  return reinterpret_cast<SortKey<C>*>(base) + maia_kernel::linearProgramId(grid) * n;
}

/// The arguments every kernel here starts with: values, indices (i64), in
/// (all rank 8), scratch (u8: programs * n * kSortKeyBytes), dim.
template <typename T>
struct SliceArgs {
  const MemRef<T, kSortRank>& values;
  const MemRef<int64_t, kSortRank>& indices;
  const MemRef<T, kSortRank>& in;
  const MemRef<uint8_t, 1>& scratch;
  const int dim;

  explicit SliceArgs(void* const* args)
      : values(memref<T, kSortRank>(args, 0)),
        indices(memref<int64_t, kSortRank>(args, 1)),
        in(memref<T, kSortRank>(args, 2)),
        scratch(memref<uint8_t, 1>(args, 3)),
        dim(static_cast<int>(scalar<int64_t>(args, 4))) {}
};

// args: values, indices (i64), in (all rank 8, the same sizes), scratch (u8:
// programs * n * kSortKeyBytes), dim, descending, stable. values must not
// overlap in (the host copies in first when it would).
template <typename T>
void sort(void* const* args, const maia_grid_t* grid) {
  using C = compute_t<T>;
  const SliceArgs<T> a(args);
  const auto& [values, indices, in, scratch, dim] = a;
  const bool descending = scalar<int64_t>(args, 5) != 0;
  const bool stable = scalar<int64_t>(args, 6) != 0;
  const int64_t n = in.sizes[dim];
  const int64_t sv = values.strides[dim], si = indices.strides[dim], sx = in.strides[dim];
  SortKey<C>* keys = programKeys<C>(scratch, n, grid);
  auto slice = maia_kernel::programSlice(grid, sliceCount(in, dim));
  for (int64_t s = slice.begin; s < slice.end; ++s) {
    T* dst = values.aligned + sliceOffset(values, dim, s);
    int64_t* dst_index = indices.aligned + sliceOffset(indices, dim, s);
    const T* src = in.aligned + sliceOffset(in, dim, s);
    if (sx == 0) {  // one value repeated (an expanded input): the CPU keeps the order
      for (int64_t j = 0; j < n; ++j) {
        dst[j * sv] = src[0];
        dst_index[j * si] = j;
      }
      continue;
    }
    for (int64_t j = 0; j < n; ++j) keys[j] = {load(src[j * sx]), j};
    if (descending && stable)
      std::sort(keys, keys + n, ThenIndex<Descending<C>>{});
    else if (descending)
      std::sort(keys, keys + n, Descending<C>{});
    else if (stable)
      std::sort(keys, keys + n, ThenIndex<Ascending<C>>{});
    else
      std::sort(keys, keys + n, Ascending<C>{});
    for (int64_t j = 0; j < n; ++j) {
      dst[j * sv] = src[keys[j].index * sx];
      dst_index[j * si] = keys[j].index;
    }
  }
}

/// The CPU's topk selection over keys[0, n) with comparator order.
template <typename K, typename Order>
void selectTop(K* keys, int64_t n, int64_t k, bool sorted, Order order) {
  if (k * 64 <= n) {
    std::partial_sort(keys, keys + k, keys + n, order);
    return;
  }
  std::nth_element(keys, keys + k - 1, keys + n, order);
  if (sorted) std::sort(keys, keys + k - 1, order);
}

// args: values, indices (i64; size k along dim), in (size n along dim; all
// rank 8), scratch (u8: programs * n * kSortKeyBytes), dim, k (> 0),
// largest, sorted.
template <typename T>
void topk(void* const* args, const maia_grid_t* grid) {
  using C = compute_t<T>;
  const SliceArgs<T> a(args);
  const auto& [values, indices, in, scratch, dim] = a;
  const int64_t k = scalar<int64_t>(args, 5);
  const bool largest = scalar<int64_t>(args, 6) != 0;
  const bool sorted = scalar<int64_t>(args, 7) != 0;
  const int64_t n = in.sizes[dim];
  const int64_t sv = values.strides[dim], si = indices.strides[dim], sx = in.strides[dim];
  SortKey<C>* keys = programKeys<C>(scratch, n, grid);
  auto slice = maia_kernel::programSlice(grid, sliceCount(in, dim));
  for (int64_t s = slice.begin; s < slice.end; ++s) {
    T* dst = values.aligned + sliceOffset(values, dim, s);
    int64_t* dst_index = indices.aligned + sliceOffset(indices, dim, s);
    const T* src = in.aligned + sliceOffset(in, dim, s);
    for (int64_t j = 0; j < n; ++j) keys[j] = {load(src[j * sx]), j};
    if (largest)
      selectTop(keys, n, k, sorted, Descending<C>{});
    else
      selectTop(keys, n, k, sorted, Ascending<C>{});
    for (int64_t j = 0; j < k; ++j) {
      dst[j * sv] = src[keys[j].index * sx];
      dst_index[j * si] = keys[j].index;
    }
  }
}

/// The CPU's kthvalue selection (Sorting.cpp's quick_select_template): a
/// median-of-three pivot, a Hoare partition, NaN above every number; keys[k]
/// ends up holding the k-th smallest, and which of equal values it is
/// follows from these very swaps.
template <typename C>
void quickSelect(SortKey<C>* keys, int64_t n, int64_t k) {
  const Descending<C> greater;  // a > b, NaN above every number
  int64_t lo = 0, hi = n - 1;
  while (hi > lo) {
    if (hi == lo + 1) {
      if (greater(keys[lo], keys[hi])) std::swap(keys[lo], keys[hi]);
      return;
    }
    std::swap(keys[(lo + hi) >> 1], keys[lo + 1]);
    if (greater(keys[lo + 1], keys[hi])) std::swap(keys[lo + 1], keys[hi]);
    if (greater(keys[lo], keys[hi])) std::swap(keys[lo], keys[hi]);
    if (greater(keys[lo + 1], keys[lo])) std::swap(keys[lo + 1], keys[lo]);
    const SortKey<C> pivot = keys[lo];
    int64_t i = lo + 1, j = hi;
    while (true) {
      do ++i; while (greater(pivot, keys[i]));
      do --j; while (greater(keys[j], pivot));
      if (j < i) break;
      std::swap(keys[i], keys[j]);
    }
    std::swap(keys[lo], keys[j]);
    if (j <= k) lo = i;
    if (j >= k) hi = j - 1;
  }
}

/// The index (into keys) of a slice's median as the CPU picks it. median:
/// the first NaN if any, else the (n - 1) / 2-th in (value, index) order;
/// nanmedian: the same among the numbers, by std::nth_element under the
/// CPU's comparator (which also decides an all-NaN slice).
template <typename C>
int64_t selectMedian(SortKey<C>* keys, int64_t n, bool ignore_nan) {
  int64_t nans = 0;
  for (int64_t j = 0; j < n; ++j) {
    if (!isNan(keys[j].value)) continue;
    if (!ignore_nan) return j;  // keys are still in input order
    ++nans;
  }
  auto before = [](const SortKey<C>& a, const SortKey<C>& b) {
    return a.value < b.value || (a.value == b.value && a.index < b.index) ||
           (isNan(b.value) && !isNan(a.value));
  };
  const int64_t nth = (n - nans - 1) / 2;  // C++ division: 0 for an all-NaN slice
  std::nth_element(keys, keys + nth, keys + n, before);
  return nth;
}

/// The CPU's mode: std::sort by value alone, then the last element of the
/// first longest run of equal values (NaN != NaN: each NaN a run of one).
template <typename C>
int64_t selectMode(SortKey<C>* keys, int64_t n) {
  std::sort(keys, keys + n,
            [](const SortKey<C>& a, const SortKey<C>& b) { return a.value < b.value; });
  int64_t best = 0, best_count = 0, count = 0;
  for (int64_t j = 0; j < n; ++j) {
    ++count;
    if (j == n - 1 || keys[j].value != keys[j + 1].value) {
      if (count > best_count) {
        best = j;
        best_count = count;
      }
      count = 0;
    }
  }
  return best;
}

enum class Selection : int64_t { kKthValue = 0, kMedian = 1, kNanMedian = 2, kMode = 3 };

// args: values, indices (i64; size 1 along dim), in (all rank 8), scratch
// (u8: programs * n * kSortKeyBytes), dim, selection (Selection), k
// (kthvalue: 1-based). Each slice's chosen value is copied from the input
// element it names.
template <typename T>
void selectOne(void* const* args, const maia_grid_t* grid) {
  using C = compute_t<T>;
  const SliceArgs<T> a(args);
  const auto& [values, indices, in, scratch, dim] = a;
  const auto selection = static_cast<Selection>(scalar<int64_t>(args, 5));
  const int64_t k = scalar<int64_t>(args, 6);
  const int64_t n = in.sizes[dim], sx = in.strides[dim];
  SortKey<C>* keys = programKeys<C>(scratch, n, grid);
  auto slice = maia_kernel::programSlice(grid, sliceCount(in, dim));
  for (int64_t s = slice.begin; s < slice.end; ++s) {
    const T* src = in.aligned + sliceOffset(in, dim, s);
    for (int64_t j = 0; j < n; ++j) keys[j] = {load(src[j * sx]), j};
    int64_t chosen = 0;
    switch (selection) {
      case Selection::kKthValue:
        quickSelect(keys, n, k - 1);
        chosen = k - 1;
        break;
      case Selection::kMedian:
      case Selection::kNanMedian:
        chosen = selectMedian(keys, n, selection == Selection::kNanMedian);
        break;
      case Selection::kMode:
        chosen = selectMode(keys, n);
        break;
    }
    const int64_t index = keys[chosen].index;
    values.aligned[sliceOffset(values, dim, s)] = src[index * sx];
    indices.aligned[sliceOffset(indices, dim, s)] = index;
  }
}

}  // namespace maia_nn
