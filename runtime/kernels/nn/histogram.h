// histogram/histogramdd bin counting: the points of an (M, D) input placed
// in the D-dimensional bins their edge sequences define, as the CPU's
// kernel places them (an element outside [first, last] edge or NaN skips
// its point; the last bin includes its right edge). Each program counts
// its share of the points into its own row of float64 partial sums, which
// the host adds up; bin positions are computed in the storage type.
#pragma once

#include <cstdint>

#include <maia/kernel_abi.h>

#include "nn.h"

namespace maia_nn {

/// How a coordinate finds its bin (the host's choice, as ATen's stubs):
/// by linear interpolation between the outer edges (histc), the same
/// corrected by the neighbouring edges (linspace edges of histogram), or
/// by binary search over arbitrary increasing edges.
enum class BinSearch : int64_t { Linear = 0, LinearLocal = 1, Binary = 2 };

namespace histogram_detail {

/// The position of the first edge in [first, last) greater than x, minus
/// one (std::upper_bound's, over strided edges).
template <typename T>
int64_t upperBoundBefore(const MemRef<T, 1>& edges, int64_t first, int64_t last,
                         compute_t<T> x) {
  int64_t lo = first, hi = last;
  while (lo < hi) {
    const int64_t mid = lo + ((hi - lo) >> 1);
    if (x < load(edges.at(mid))) hi = mid;
    else lo = mid + 1;
  }
  return lo - 1;
}

/// x rounded to T, so 16-bit inputs interpolate in their own precision.
template <typename T>
compute_t<T> inT(compute_t<T> x) {
  return load(store<T>(x));
}

}  // namespace histogram_detail

// args: partial f64 (programs, bins), input (M, D), weight (M; read when
// has_weight), edges (all dimensions' edges, concatenated), edge_offsets
// i64 (D + 1: dimension d's edges are [edge_offsets[d], edge_offsets[d+1])),
// has_weight, search. Bins are numbered row-major over the D dimensions.
template <typename T>
void histogramdd(void* const* args, const maia_grid_t* grid) {
  using namespace histogram_detail;
  using C = compute_t<T>;
  const auto& partial = memref<double, 2>(args, 0);
  const auto& input = memref<T, 2>(args, 1);
  const auto& weight = memref<T, 1>(args, 2);
  const auto& edges = memref<T, 1>(args, 3);
  const auto& edge_offsets = memref<int64_t, 1>(args, 4);
  const bool has_weight = scalar<int64_t>(args, 5) != 0;
  const auto search = static_cast<BinSearch>(scalar<int64_t>(args, 6));
  const int64_t dims = input.sizes[1];
  const int64_t program = maia_kernel::linearProgramId(grid);
  double* counts = partial.aligned + partial.offset + program * partial.strides[0];
  auto slice = maia_kernel::programSlice(grid, input.sizes[0]);
  for (int64_t i = slice.begin; i < slice.end; ++i) {
    int64_t bin = 0;
    bool inside = true;
    for (int64_t d = 0; d < dims && inside; ++d) {
      const int64_t first = edge_offsets.at(d), last = edge_offsets.at(d + 1);
      const int64_t edge_count = last - first;
      const C x = load(input.at(i, d));
      const C left = load(edges.at(first)), right = load(edges.at(last - 1));
      if (!(x >= left && x <= right)) {
        inside = false;
        break;
      }
      int64_t pos;
      if (search == BinSearch::Binary) {
        pos = upperBoundBefore(edges, first, last, x) - first;
      } else {
        pos = static_cast<int64_t>(
            inT<T>(inT<T>(inT<T>(x - left) * static_cast<C>(edge_count - 1)) / inT<T>(right - left)));
        if (search == BinSearch::LinearLocal) {
          const int64_t lo = std::max<int64_t>(0, pos - 1), hi = std::min(pos + 2, edge_count);
          pos = upperBoundBefore(edges, first + lo, first + hi, x) - first;
        }
      }
      if (pos == edge_count - 1) pos -= 1;
      bin = bin * (edge_count - 1) + pos;
    }
    if (!inside) continue;
    counts[bin * partial.strides[1]] += has_weight ? static_cast<double>(load(weight.at(i))) : 1.0;
  }
}

}  // namespace maia_nn
