// segment_reduce and its backward: reductions of consecutive runs of rows
// of dimension 1 of (outer, n, inner) data, the runs given per outer index
// by offsets (outer, segments + 1; the host turns lengths into offsets).
// Arithmetic in the storage type, step by step, as the CPU's kernel does
// (a bfloat16 sum rounds after every add), so both agree to the last bit
// on short segments.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>

#include <maia/kernel_abi.h>

#include "nn.h"

namespace maia_nn {

/// The reduction codes the host passes (ops/SegmentReduce.cpp).
enum class SegmentOp : int64_t { Max = 0, Mean = 1, Min = 2, Sum = 3, Prod = 4 };

namespace segment_detail {

template <typename T>
T identity(SegmentOp op) {
  using C = compute_t<T>;
  switch (op) {
    case SegmentOp::Max: return store<T>(-std::numeric_limits<C>::infinity());
    case SegmentOp::Min: return store<T>(std::numeric_limits<C>::infinity());
    case SegmentOp::Prod: return store<T>(C(1));
    default: return store<T>(C(0));
  }
}

/// One step in the storage type; max/min take a NaN and keep it, and keep
/// the accumulator on ties (std::max/std::min, as the CPU).
template <typename T>
T step(SegmentOp op, T acc, T value) {
  const auto a = load(acc), x = load(value);
  switch (op) {
    case SegmentOp::Max: return (x != x || a < x) ? value : acc;
    case SegmentOp::Min: return (x != x || x < a) ? value : acc;
    case SegmentOp::Prod: return store<T>(a * x);
    default: return store<T>(a + x);
  }
}

/// Position of segment s of outer row o: [begin, end).
struct Segment {
  int64_t begin, end;
};
inline Segment segmentAt(const MemRef<int64_t, 2>& offsets, int64_t o, int64_t s) {
  return {offsets.at(o, s), offsets.at(o, s + 1)};
}

/// The `initial` scalar at args[index + 1] in T when the flag at
/// args[index] says it was given.
template <typename T>
std::optional<T> initialArg(void* const* args, int index) {
  if (scalar<int64_t>(args, index) == 0) return std::nullopt;
  return store<T>(static_cast<compute_t<T>>(scalar<double>(args, index + 1)));
}

/// Calls body(o, s, j, segment) for this program's share of the (outer,
/// segments, inner) outputs.
template <typename Body>
void forEachOutput(const maia_grid_t* grid, const MemRef<int64_t, 2>& offsets, int64_t outer,
                   int64_t segments, int64_t inner, Body body) {
  auto slice = maia_kernel::programSlice(grid, outer * segments * inner);
  for (int64_t index = slice.begin; index < slice.end; ++index) {
    const int64_t j = index % inner, s = (index / inner) % segments, o = index / inner / segments;
    body(o, s, j, segmentAt(offsets, o, s));
  }
}

}  // namespace segment_detail

// args: out (outer, segments, inner), data (outer, n, inner), offsets i64
// (outer, segments + 1), op, has_initial, initial. One output per step.
template <typename T>
void segmentReduce(void* const* args, const maia_grid_t* grid) {
  using namespace segment_detail;
  const auto& out = memref<T, 3>(args, 0);
  const auto& data = memref<T, 3>(args, 1);
  const auto& offsets = memref<int64_t, 2>(args, 2);
  const auto op = static_cast<SegmentOp>(scalar<int64_t>(args, 3));
  const std::optional<T> given = initialArg<T>(args, 4);
  const T initial = given.value_or(identity<T>(op));
  forEachOutput(grid, offsets, out.sizes[0], out.sizes[1], out.sizes[2],
                [&](int64_t o, int64_t s, int64_t j, Segment seg) {
    T acc = initial;
    for (int64_t r = seg.begin; r < seg.end; ++r) acc = step(op, acc, at3(data, o, r, j));
    const int64_t length = seg.end - seg.begin;
    if (op == SegmentOp::Mean) {
      const auto a = load(acc);
      if (length == 0 && !given) acc = store<T>(std::numeric_limits<compute_t<T>>::quiet_NaN());
      else if (length > 0 && a == a) acc = store<T>(a / static_cast<compute_t<T>>(length));
    }
    at3(out, o, s, j) = acc;
  });
}

// args: grad_input (outer, n, inner; zeros outside every segment, written
// by the host), grad (outer, segments, inner), output (of the forward),
// data, offsets, op, has_initial, initial. Max/min share the gradient
// among the elements equal to the result (a NaN counts as equal); like the
// CPU, only positive shares are divided by their count. Prod divides the
// output by the element, or multiplies out the others when it is 0 or NaN.
template <typename T>
void segmentReduceBackward(void* const* args, const maia_grid_t* grid) {
  using namespace segment_detail;
  const auto& grad_input = memref<T, 3>(args, 0);
  const auto& grad = memref<T, 3>(args, 1);
  const auto& output = memref<T, 3>(args, 2);
  const auto& data = memref<T, 3>(args, 3);
  const auto& offsets = memref<int64_t, 2>(args, 4);
  const auto op = static_cast<SegmentOp>(scalar<int64_t>(args, 5));
  const T initial_prod = initialArg<T>(args, 6).value_or(identity<T>(SegmentOp::Prod));
  forEachOutput(grid, offsets, grad.sizes[0], grad.sizes[1], grad.sizes[2],
                [&](int64_t o, int64_t s, int64_t j, Segment seg) {
    const int64_t length = seg.end - seg.begin;
    if (length <= 0) return;
    const T g = at3(grad, o, s, j);
    if (op == SegmentOp::Max || op == SegmentOp::Min) {
      const auto result = load(at3(output, o, s, j));
      int64_t count = 0;
      for (int64_t r = seg.begin; r < seg.end; ++r) {
        const auto x = load(at3(data, o, r, j));
        if (x != x || x == result) {
          at3(grad_input, o, r, j) = g;
          ++count;
        }
      }
      if (count < 2) return;
      for (int64_t r = seg.begin; r < seg.end; ++r) {
        T& gi = at3(grad_input, o, r, j);
        if (load(gi) > 0) gi = store<T>(load(gi) / static_cast<compute_t<T>>(count));
      }
    } else if (op == SegmentOp::Mean || op == SegmentOp::Sum) {
      const T share = op == SegmentOp::Sum
                          ? g
                          : store<T>(load(g) / static_cast<compute_t<T>>(length));
      for (int64_t r = seg.begin; r < seg.end; ++r) at3(grad_input, o, r, j) = share;
    } else {
      const T scaled = store<T>(load(g) * load(at3(output, o, s, j)));
      for (int64_t r = seg.begin; r < seg.end; ++r) {
        const auto x = load(at3(data, o, r, j));
        if (x != x || x == 0) {
          T others = initial_prod;
          for (int64_t k = seg.begin; k < seg.end; ++k)
            if (k != r) others = store<T>(load(others) * load(at3(data, o, k, j)));
          at3(grad_input, o, r, j) = store<T>(load(g) * load(others));
        } else {
          at3(grad_input, o, r, j) = store<T>(load(scaled) / x);
        }
      }
    }
  });
}

}  // namespace maia_nn
