// The reduction loops of the reduce kernel binary (maia_reduce_kernels.maiabin).
//
// The input is a rank-3 memref [outer, reduced, inner] with any strides, the
// output a rank-2 memref [outer, inner] (scans: rank 3, the input's shape).
// Each program owns a contiguous slice of the outer*inner outputs and walks
// it in blocks of at most kBlock outputs along inner: a unit-stride inner
// dimension makes the per-row loop vectorize; a single output (inner == 1)
// reduces its line with kLanes independent accumulators, which vectorize too.
// Accumulation is in float for float16/bfloat16, double for float64, int64
// for integers and bool, as PyTorch accumulates on the CPU.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include <maia/kernel_abi.h>

#include "scalar_types.h"

namespace maia_reduce {

using maia_eager::load;
using maia_eager::store;
using maia_eager::compute_t;

constexpr int64_t kBlock = 1024;  // outputs per block: 4 KiB float rows
constexpr int kLanes = 16;

/// The accumulate type for storage type T.
template <typename T>
using acc_t = std::conditional_t<std::is_floating_point_v<compute_t<T>>, compute_t<T>, int64_t>;

template <typename C>
constexpr C lowest() {
  if constexpr (std::is_floating_point_v<C>) return -std::numeric_limits<C>::infinity();
  else return std::numeric_limits<C>::lowest();
}
template <typename C>
constexpr C highest() {
  if constexpr (std::is_floating_point_v<C>) return std::numeric_limits<C>::infinity();
  else return std::numeric_limits<C>::max();
}
template <typename C>
inline bool isNan(C x) {
  if constexpr (std::is_floating_point_v<C>) return x != x;
  else return false;
}

// ------------------------------------------------------------------ operators
// Each has Acc, init(), step(acc, x) (x in the compute type), combine(a, b)
// and finish(acc, n) -> a value converted to the output by store<>.

template <typename A>
struct SumOp {
  using Acc = A;
  static constexpr bool kCascade = true;
  Acc init() const { return Acc(0); }
  template <typename C> Acc step(Acc a, C x) const { return a + static_cast<Acc>(x); }
  Acc combine(Acc a, Acc b) const { return a + b; }
  Acc finish(Acc a, int64_t) const { return a; }
};
template <typename A>
struct MeanOp : SumOp<A> {
  A finish(A a, int64_t n) const { return a / static_cast<A>(n); }
};
template <typename A>
struct ProdOp {
  using Acc = A;
  Acc init() const { return Acc(1); }
  template <typename C> Acc step(Acc a, C x) const { return a * static_cast<Acc>(x); }
  Acc combine(Acc a, Acc b) const { return a * b; }
  Acc finish(Acc a, int64_t) const { return a; }
};
/// Exclusive or of the 64-bit patterns (hash_tensor's mode 0): the host
/// passes int64 elements (floats as their float64 bits).
struct XorSumOp {
  using Acc = int64_t;
  Acc init() const { return 0; }
  Acc step(Acc a, int64_t x) const { return a ^ x; }
  Acc combine(Acc a, Acc b) const { return a ^ b; }
  Acc finish(Acc a, int64_t) const { return a; }
};
/// max/min with NaN propagation (a NaN, once seen, stays).
template <typename C, bool IsMax>
struct ExtremeOp {
  using Acc = C;
  Acc init() const { return IsMax ? lowest<C>() : highest<C>(); }
  Acc step(Acc a, C x) const {
    bool take = IsMax ? (x > a) : (x < a);
    return (isNan(x) | take) ? x : a;  // branch-free: vectorizes
  }
  Acc combine(Acc a, Acc b) const { return step(a, b); }
  Acc finish(Acc a, int64_t) const { return a; }
};
template <typename Op>
struct IsExtremeF32 : std::false_type {};
template <bool IsMax>
struct IsExtremeF32<ExtremeOp<float, IsMax>> : std::true_type {
  static constexpr bool kMax = IsMax;
};

/// max/min of a unit-stride float line with AVX2 (the compiler does not
/// vectorize the NaN-propagating select); NaN if any element is NaN.
template <bool IsMax>
float extremeLineF32(const float* p, int64_t n) {
  const float init = IsMax ? -std::numeric_limits<float>::infinity()
                           : std::numeric_limits<float>::infinity();
  __m256 m0 = _mm256_set1_ps(init), m1 = m0, m2 = m0, m3 = m0;
  __m256 unordered = _mm256_setzero_ps();
  int64_t r = 0;
  for (; r + 32 <= n; r += 32) {
    __m256 x0 = _mm256_loadu_ps(p + r), x1 = _mm256_loadu_ps(p + r + 8);
    __m256 x2 = _mm256_loadu_ps(p + r + 16), x3 = _mm256_loadu_ps(p + r + 24);
    unordered = _mm256_or_ps(unordered, _mm256_cmp_ps(x0, x1, _CMP_UNORD_Q));
    unordered = _mm256_or_ps(unordered, _mm256_cmp_ps(x2, x3, _CMP_UNORD_Q));
    if constexpr (IsMax) {
      m0 = _mm256_max_ps(m0, x0); m1 = _mm256_max_ps(m1, x1);
      m2 = _mm256_max_ps(m2, x2); m3 = _mm256_max_ps(m3, x3);
    } else {
      m0 = _mm256_min_ps(m0, x0); m1 = _mm256_min_ps(m1, x1);
      m2 = _mm256_min_ps(m2, x2); m3 = _mm256_min_ps(m3, x3);
    }
  }
  if (_mm256_movemask_ps(unordered) != 0) return std::numeric_limits<float>::quiet_NaN();
  alignas(32) float lanes[32];
  _mm256_store_ps(lanes, m0); _mm256_store_ps(lanes + 8, m1);
  _mm256_store_ps(lanes + 16, m2); _mm256_store_ps(lanes + 24, m3);
  ExtremeOp<float, IsMax> op;
  float acc = op.init();
  for (int k = 0; k < 32; ++k) acc = op.step(acc, lanes[k]);
  for (; r < n; ++r) acc = op.step(acc, p[r]);
  return acc;
}

template <bool IsAny>
struct AnyAllOp {
  using Acc = bool;
  Acc init() const { return !IsAny; }
  template <typename C> Acc step(Acc a, C x) const {
    return IsAny ? (a || x != C(0)) : (a && x != C(0));
  }
  Acc combine(Acc a, Acc b) const { return IsAny ? (a || b) : (a && b); }
  Acc finish(Acc a, int64_t) const { return a; }
};
/// Vector norms: 0 (count of non-zeros), 1, 2, inf, -inf, and general p.
enum class Norm { Zero, One, Two, Inf, NegInf, P };
template <typename A, Norm N>
struct NormOp {
  using Acc = A;
  static constexpr bool kCascade = N != Norm::Inf && N != Norm::NegInf;
  A p;
  Acc init() const {
    if constexpr (N == Norm::NegInf) return std::numeric_limits<A>::infinity();
    else return A(0);
  }
  Acc step(Acc a, A x) const {
    if constexpr (N == Norm::Zero) return a + A(x != A(0));
    else if constexpr (N == Norm::One) return a + std::fabs(x);
    else if constexpr (N == Norm::Two) return a + x * x;
    else if constexpr (N == Norm::Inf) { A v = std::fabs(x); return (isNan(v) || v > a) ? v : a; }
    else if constexpr (N == Norm::NegInf) { A v = std::fabs(x); return (isNan(v) || v < a) ? v : a; }
    else return a + std::pow(std::fabs(x), p);
  }
  Acc combine(Acc a, Acc b) const {
    if constexpr (N == Norm::Inf) return (isNan(b) || b > a) ? b : a;
    else if constexpr (N == Norm::NegInf) return (isNan(b) || b < a) ? b : a;
    else return a + b;
  }
  Acc finish(Acc a, int64_t) const {
    if constexpr (N == Norm::Two) return std::sqrt(a);
    else if constexpr (N == Norm::P) return std::pow(a, A(1) / p);
    else return a;
  }
};
/// Sum of squared deviations from a mean (the second pass of var).
struct SqDevOp {
  using Acc = double;
  static constexpr bool kCascade = true;
  double mean;
  Acc init() const { return 0.0; }
  template <typename C> Acc step(Acc a, C x) const {
    double d = static_cast<double>(x) - mean;
    return a + d * d;
  }
  Acc combine(Acc a, Acc b) const { return a + b; }
};

// ------------------------------------------------------------------ loops

/// Whether Op is a sum (Op::kCascade), whose rounding errors grow with the
/// length of one chain of adds: such reductions add in cascades.
template <typename Op, typename = void>
struct Cascades : std::false_type {};
template <typename Op>
struct Cascades<Op, std::void_t<decltype(Op::kCascade)>> : std::bool_constant<Op::kCascade> {};

// Cascade summation, as the CPU's (ATen's cascade_sum): rows are summed
// kPartialRows at a time (elements of a line kPartialLine at a time, 512 per
// lane) into a fresh partial, partials kChunk at a time into the next level,
// and so on, so that no value passes through more than a few hundred adds:
// one chain of n adds loses O(n) roundings. The partial loops are inlined
// and a line's lanes are combined once, at its end: a call or a lane combine
// per partial costs more than the partials' extra adds (RESULTS.md,
// 2026-12-07, reduce kernels).
constexpr int64_t kChunk = 32;
constexpr int kLevels = 5;  // kChunk^5 partials before the top level grows
constexpr int64_t kPartialRows = 32;
constexpr int64_t kPartialLine = 512 * 4 * kLanes;

/// The levels of a cascade over `count` accumulators at a time.
template <typename Op>
class Cascade {
 public:
  using Acc = typename Op::Acc;
  Cascade(const Op& op, int64_t count, Acc* storage) : op_(op), count_(count), level_(storage) {}

  /// Adds one partial (count accumulators) to the cascade.
  void add(const Acc* partial) {
    const Acc* carry = partial;
    for (int k = 0;; ++k) {
      Acc* level = level_ + k * count_;
      if (filled_[k] == 0) {
        std::copy(carry, carry + count_, level);
        filled_[k] = 1;
        return;
      }
      for (int64_t j = 0; j < count_; ++j) level[j] = op_.combine(level[j], carry[j]);
      if (++filled_[k] < kChunk || k == kLevels - 1) return;
      filled_[k] = 0;  // full: carried up (read before this level is reused)
      carry = level;
    }
  }

  /// The total, lowest level first, into out.
  void total(Acc* out) const {
    for (int64_t j = 0; j < count_; ++j) out[j] = op_.init();
    for (int k = 0; k < kLevels; ++k)
      if (filled_[k] != 0)
        for (int64_t j = 0; j < count_; ++j) out[j] = op_.combine(out[j], level_[k * count_ + j]);
  }

 private:
  const Op& op_;
  int64_t count_;
  Acc* level_;
  int64_t filled_[kLevels] = {};
};

/// lanes[k] = reduction of base[r + k] over the whole Lanes-wide rows r of
/// base[0..n); returns the rows' end (the tail starts there).
template <int Lanes, typename T, typename Op>
inline __attribute__((always_inline)) int64_t reduceLaneRows(const T* base, int64_t n,
                                                             const Op& op,
                                                             typename Op::Acc* lanes) {
  for (int k = 0; k < Lanes; ++k) lanes[k] = op.init();
  int64_t r = 0;
  for (; r + Lanes <= n; r += Lanes)
    for (int k = 0; k < Lanes; ++k) lanes[k] = op.step(lanes[k], load(base[r + k]));
  return r;
}

/// The lanes combined, then the tail base[r..n) added.
template <int Lanes, typename T, typename Op>
typename Op::Acc finishLanes(const typename Op::Acc* lanes, const T* base, int64_t r, int64_t n,
                             const Op& op) {
  typename Op::Acc acc = lanes[0];
  for (int k = 1; k < Lanes; ++k) acc = op.combine(acc, lanes[k]);
  for (; r < n; ++r) acc = op.step(acc, load(base[r]));
  return acc;
}

/// Reduces the unit-stride line base[0..n) with Lanes independent
/// accumulators (n >= Lanes), which the compiler vectorizes.
template <int Lanes, typename T, typename Op>
typename Op::Acc reduceLanes(const T* base, int64_t n, const Op& op) {
  typename Op::Acc lanes[Lanes];
  const int64_t r = reduceLaneRows<Lanes>(base, n, op, lanes);
  return finishLanes<Lanes>(lanes, base, r, n, op);
}

/// A long unit-stride sum: each lane's partials of kPartialLine / Lanes
/// adds go through a cascade; the lanes are combined once, at the end.
template <int Lanes, typename T, typename Op>
typename Op::Acc cascadeLanes(const T* base, int64_t n, const Op& op) {
  using Acc = typename Op::Acc;
  Acc levels[kLevels * Lanes], partial[Lanes], lanes[Lanes];
  Cascade<Op> cascade(op, Lanes, levels);
  int64_t r = 0;
  for (; r + kPartialLine <= n; r += kPartialLine) {
    reduceLaneRows<Lanes>(base + r, kPartialLine, op, partial);
    cascade.add(partial);
  }
  const int64_t rows_end = r + reduceLaneRows<Lanes>(base + r, n - r, op, partial);
  cascade.add(partial);
  cascade.total(lanes);
  return finishLanes<Lanes>(lanes, base, rows_end, n, op);
}

/// One chain per column over all n rows.
template <typename T, typename Op>
inline __attribute__((always_inline)) void reduceColumnsOnce(const T* base, int64_t n, int64_t s1,
                                                             int64_t s2, int64_t count,
                                                             const Op& op, typename Op::Acc* acc) {
  for (int64_t j = 0; j < count; ++j) acc[j] = op.init();
  int64_t r = 0;
  if (s2 == 1) {
    // Four rows per pass over acc (the same order of operations per column).
    for (; r + 4 <= n; r += 4) {
      const T* r0 = base + r * s1;
      const T* r1 = r0 + s1;
      const T* r2 = r1 + s1;
      const T* r3 = r2 + s1;
      for (int64_t j = 0; j < count; ++j)
        acc[j] = op.step(op.step(op.step(op.step(acc[j], load(r0[j])), load(r1[j])),
                                 load(r2[j])),
                         load(r3[j]));
    }
  }
  for (; r < n; ++r) {
    const T* row = base + r * s1;
    if (s2 == 1) {
      for (int64_t j = 0; j < count; ++j) acc[j] = op.step(acc[j], load(row[j]));
    } else {
      for (int64_t j = 0; j < count; ++j) acc[j] = op.step(acc[j], load(row[j * s2]));
    }
  }
}

/// acc[j] = reduction over r of base[r * s1 + j * s2], j < count (at most
/// kBlock); sums in a cascade of kPartialRows-row partials.
template <typename T, typename Op>
void reduceColumns(const T* base, int64_t n, int64_t s1, int64_t s2, int64_t count,
                   const Op& op, typename Op::Acc* acc) {
  using Acc = typename Op::Acc;
  if constexpr (Cascades<Op>::value) {
    if (n > kPartialRows) {
      Acc levels[kLevels * kBlock], partial[kBlock];  // 48 KiB of stack at most
      Cascade<Op> cascade(op, count, levels);
      for (int64_t r = 0; r < n; r += kPartialRows) {
        reduceColumnsOnce(base + r * s1, std::min(kPartialRows, n - r), s1, s2, count, op,
                          partial);
        cascade.add(partial);
      }
      cascade.total(acc);
      return;
    }
  }
  reduceColumnsOnce(base, n, s1, s2, count, op, acc);
}

/// Reduces the line base[0], base[s], ... (n elements). Sums add in a
/// cascade: cascadeLanes for a unit-stride line; a strided line (a column
/// of a product's bias gradient, one column per program) is one column of
/// reduceColumns.
template <typename T, typename Op>
typename Op::Acc reduceLine(const T* base, int64_t n, int64_t s, const Op& op) {
  using Acc = typename Op::Acc;
  if constexpr (std::is_same_v<T, float> && IsExtremeF32<Op>::value) {
    if (s == 1 && n >= 64) return extremeLineF32<IsExtremeF32<Op>::kMax>(base, n);
  }
  if constexpr (Cascades<Op>::value) {
    if (s == 1 && n > kPartialLine) return cascadeLanes<4 * kLanes>(base, n, op);
    if (s != 1 && n > kPartialRows) {
      Acc acc;
      reduceColumns(base, n, s, 1, 1, op, &acc);
      return acc;
    }
  }
  // Long lines: four vectors of accumulators, so that the adds of one vector
  // do not wait for the previous one (one chain of adds is latency-bound,
  // below memory bandwidth).
  if (s == 1 && n >= 8 * kLanes) return reduceLanes<4 * kLanes>(base, n, op);
  if (s == 1 && n >= 2 * kLanes) return reduceLanes<kLanes>(base, n, op);
  Acc acc = op.init();
  for (int64_t r = 0; r < n; ++r) acc = op.step(acc, load(base[r * s]));
  return acc;
}

/// Calls block(o, j0, count) for the blocks of this program's slice of the
/// outer * inner outputs.
template <typename Block>
void forEachBlock(const maia_grid_t* grid, int64_t outer, int64_t inner, Block&& block) {
  const int64_t total = outer * inner;
  if (total == 0) return;
  maia_kernel::Slice slice = maia_kernel::programSlice(grid, total);
  for (int64_t pos = slice.begin; pos < slice.end;) {
    int64_t o = pos / inner, j0 = pos % inner;
    int64_t count = std::min({kBlock, inner - j0, slice.end - pos});
    block(o, j0, count);
    pos += count;
  }
}

/// out[o, j] = op over r of in[o, r, j]  (args: out, in).
template <typename T, typename Out, typename Op>
void reduce(void* const* args, const maia_grid_t* grid, const Op& op) {
  const auto& out = maia_kernel::memref<Out, 2>(args, 0);
  const auto& in = maia_kernel::memref<T, 3>(args, 1);
  const int64_t n = in.sizes[1];
  forEachBlock(grid, in.sizes[0], in.sizes[2], [&](int64_t o, int64_t j0, int64_t count) {
    const T* base = in.aligned + in.offset + o * in.strides[0] + j0 * in.strides[2];
    Out* dst = out.aligned + out.offset + o * out.strides[0] + j0 * out.strides[1];
    if (count == 1) {
      dst[0] = store<Out>(op.finish(reduceLine(base, n, in.strides[1], op), n));
      return;
    }
    typename Op::Acc acc[kBlock];
    reduceColumns(base, n, in.strides[1], in.strides[2], count, op, acc);
    for (int64_t j = 0; j < count; ++j) dst[j * out.strides[1]] = store<Out>(op.finish(acc[j], n));
  });
}

/// Values and first indices of the max (IsMax) or min over r, NaN winning
/// (args: values, indices, in).
template <typename T, bool IsMax>
void reduceWithIndex(void* const* args, const maia_grid_t* grid) {
  using C = compute_t<T>;
  const auto& values = maia_kernel::memref<T, 2>(args, 0);
  const auto& indices = maia_kernel::memref<int64_t, 2>(args, 1);
  const auto& in = maia_kernel::memref<T, 3>(args, 2);
  const int64_t n = in.sizes[1], s1 = in.strides[1], s2 = in.strides[2];
  if (n == 0) return;  // refused by the caller: no identity
  forEachBlock(grid, in.sizes[0], in.sizes[2], [&](int64_t o, int64_t j0, int64_t count) {
    const T* base = in.aligned + in.offset + o * in.strides[0] + j0 * s2;
    if (count == 1) {  // one line: a scalar loop without the column bookkeeping
      // The extreme (vectorized), then its first occurrence: the first NaN if
      // there is one, else the first element equal to it (as a strict
      // comparison in order would find).
      C best = reduceLine(base, n, s1, ExtremeOp<C, IsMax>{});
      const bool nan = isNan(best);
      int64_t index = 0;
      while (index < n - 1) {
        C x = load(base[index * s1]);
        if (nan ? isNan(x) : x == best) break;
        ++index;
      }
      values.aligned[values.offset + o * values.strides[0] + j0 * values.strides[1]] =
          base[index * s1];
      indices.aligned[indices.offset + o * indices.strides[0] + j0 * indices.strides[1]] = index;
      return;
    }
    C best[kBlock];
    int64_t index[kBlock];
    for (int64_t j = 0; j < count; ++j) {
      best[j] = load(base[j * s2]);
      index[j] = 0;
    }
    for (int64_t r = 1; r < n; ++r) {
      const T* row = base + r * s1;
      for (int64_t j = 0; j < count; ++j) {
        C x = load(row[j * s2]);
        bool take = !isNan(best[j]) && (isNan(x) || (IsMax ? x > best[j] : x < best[j]));
        best[j] = take ? x : best[j];
        index[j] = take ? r : index[j];
      }
    }
    for (int64_t j = 0; j < count; ++j) {
      values.aligned[values.offset + o * values.strides[0] + (j0 + j) * values.strides[1]] =
          store<T>(best[j]);
      indices.aligned[indices.offset + o * indices.strides[0] + (j0 + j) * indices.strides[1]] =
          index[j];
    }
  });
}

/// Variance (or standard deviation) and mean, two passes in double
/// (args: var, mean, in, correction f64, take_sqrt i64).
template <typename T>
void moments(void* const* args, const maia_grid_t* grid) {
  const auto& var = maia_kernel::memref<T, 2>(args, 0);
  const auto& mean = maia_kernel::memref<T, 2>(args, 1);
  const auto& in = maia_kernel::memref<T, 3>(args, 2);
  const double correction = maia_kernel::scalar<double>(args, 3);
  const bool take_sqrt = maia_kernel::scalar<int64_t>(args, 4) != 0;
  const int64_t n = in.sizes[1], s1 = in.strides[1], s2 = in.strides[2];
  const double divisor = std::max(0.0, static_cast<double>(n) - correction);
  forEachBlock(grid, in.sizes[0], in.sizes[2], [&](int64_t o, int64_t j0, int64_t count) {
    const T* base = in.aligned + in.offset + o * in.strides[0] + j0 * s2;
    for (int64_t j = 0; j < count; ++j) {
      const T* line = base + j * s2;
      double m = reduceLine(line, n, s1, SumOp<double>{}) / static_cast<double>(n);
      double v = reduceLine(line, n, s1, SqDevOp{m}) / divisor;
      if (take_sqrt) v = std::sqrt(v);
      var.aligned[var.offset + o * var.strides[0] + (j0 + j) * var.strides[1]] = store<T>(v);
      mean.aligned[mean.offset + o * mean.strides[0] + (j0 + j) * mean.strides[1]] = store<T>(m);
    }
  });
}

struct ScanSum {
  template <typename A> static A identity() { return A(0); }
  template <typename A> A operator()(A acc, A x) const { return acc + x; }
};
struct ScanProd {
  template <typename A> static A identity() { return A(1); }
  template <typename A> A operator()(A acc, A x) const { return acc * x; }
};

/// log(exp(acc) + exp(x)) as the CPU's logcumsumexp step: NaN propagates;
/// equal infinities stay (their difference would be NaN).
struct ScanLogAddExp {
  template <typename A> static A identity() { return -std::numeric_limits<A>::infinity(); }
  template <typename A> A operator()(A acc, A x) const {
    const A lo = isNan(acc) ? acc : std::min(x, acc);
    const A hi = isNan(acc) ? acc : std::max(x, acc);
    if (lo != hi || std::isfinite(lo)) return std::log1p(std::exp(lo - hi)) + hi;
    return x;
  }
};

/// Inclusive prefix sums (ScanSum), products (ScanProd) or log-sum-exps
/// (ScanLogAddExp) along r in accumulate type A (args: out [outer, n,
/// inner], in, same shape).
template <typename T, typename Op, typename A = acc_t<T>>
void scan(void* const* args, const maia_grid_t* grid) {
  const Op op;
  const auto& out = maia_kernel::memref<T, 3>(args, 0);
  const auto& in = maia_kernel::memref<T, 3>(args, 1);
  const int64_t n = in.sizes[1];
  forEachBlock(grid, in.sizes[0], in.sizes[2], [&](int64_t o, int64_t j0, int64_t count) {
    const T* src = in.aligned + in.offset + o * in.strides[0] + j0 * in.strides[2];
    T* dst = out.aligned + out.offset + o * out.strides[0] + j0 * out.strides[2];
    if (count == 1) {  // one line
      const int64_t si = in.strides[1], so = out.strides[1];
      A acc = Op::template identity<A>();
      for (int64_t r = 0; r < n; ++r) {
        acc = op(acc, static_cast<A>(load(src[r * si])));
        dst[r * so] = store<T>(acc);
      }
      return;
    }
    A acc[kBlock];
    for (int64_t j = 0; j < count; ++j) acc[j] = Op::template identity<A>();
    for (int64_t r = 0; r < n; ++r) {
      const T* row = src + r * in.strides[1];
      T* orow = dst + r * out.strides[1];
      for (int64_t j = 0; j < count; ++j) {
        acc[j] = op(acc[j], static_cast<A>(load(row[j * in.strides[2]])));
        orow[j * out.strides[2]] = store<T>(acc[j]);
      }
    }
  });
}

/// Running maximum (IsMax) or minimum along r with the index it was taken
/// at (args: values [outer, n, inner], int64 indices, in), as the CPU's
/// cummax/cummin: a NaN is taken and kept until the next NaN; ties take the
/// later index (>= and <=).
template <typename T, bool IsMax>
void scanWithIndex(void* const* args, const maia_grid_t* grid) {
  using C = compute_t<T>;
  const auto& values = maia_kernel::memref<T, 3>(args, 0);
  const auto& indices = maia_kernel::memref<int64_t, 3>(args, 1);
  const auto& in = maia_kernel::memref<T, 3>(args, 2);
  const int64_t n = in.sizes[1];
  if (n == 0) return;
  forEachBlock(grid, in.sizes[0], in.sizes[2], [&](int64_t o, int64_t j0, int64_t count) {
    for (int64_t j = j0; j < j0 + count; ++j) {
      const T* src = in.aligned + in.offset + o * in.strides[0] + j * in.strides[2];
      T* dst = values.aligned + values.offset + o * values.strides[0] + j * values.strides[2];
      int64_t* at = indices.aligned + indices.offset + o * indices.strides[0] +
                    j * indices.strides[2];
      C best = load(src[0]);
      int64_t best_at = 0;
      for (int64_t r = 0; r < n; ++r) {
        const C x = load(src[r * in.strides[1]]);
        if (isNan(x) || (!isNan(best) && (IsMax ? x >= best : x <= best))) {
          best = x;
          best_at = r;
        }
        dst[r * values.strides[1]] = store<T>(best);
        at[r * indices.strides[1]] = best_at;
      }
    }
  });
}

/// Dispatches the vector norm on p (args: out, in, p f64).
template <typename T>
void norm(void* const* args, const maia_grid_t* grid) {
  using A = compute_t<T>;
  const double p = maia_kernel::scalar<double>(args, 2);
  if (p == 0) reduce<T, T>(args, grid, NormOp<A, Norm::Zero>{A(p)});
  else if (p == 1) reduce<T, T>(args, grid, NormOp<A, Norm::One>{A(p)});
  else if (p == 2) reduce<T, T>(args, grid, NormOp<A, Norm::Two>{A(p)});
  else if (std::isinf(p) && p > 0) reduce<T, T>(args, grid, NormOp<A, Norm::Inf>{A(p)});
  else if (std::isinf(p)) reduce<T, T>(args, grid, NormOp<A, Norm::NegInf>{A(p)});
  else reduce<T, T>(args, grid, NormOp<A, Norm::P>{A(p)});
}

}  // namespace maia_reduce
