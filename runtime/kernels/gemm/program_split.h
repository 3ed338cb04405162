// How a kernel program finds its share of a dimension of the problem.
#pragma once

#include <cstdint>

namespace maia_gemm {

struct Range {
  int64_t begin, end;
};

/// [begin, end) of the part-th of parts near-equal slices of n elements,
/// cut at multiples of unit.
inline Range split(int64_t n, int64_t unit, int64_t parts, int64_t part) {
  int64_t units = (n + unit - 1) / unit;
  int64_t begin = units * part / parts * unit, end = units * (part + 1) / parts * unit;
  return {begin < n ? begin : n, end < n ? end : n};
}

}  // namespace maia_gemm
