// arange's fill (iota): out[i] = start + i * step, bit for bit as PyTorch's
// CPU kernel computes it. Templated over the storage type, instantiated for
// every dtype but bool by gen_nn_kernels.py.
//
// The CPU kernel (aten/src/ATen/native/cpu/RangeFactoriesKernel.cpp) splits
// the range into at::parallel_for chunks; in each chunk, groups of 2W
// elements (W = one 256-bit vector) are written as vectors whose lane j is
// base + j * step, base = start + k * step rounded to the element type at
// the group's first index k; the chunk's tail is start + i * step. Each sum
// is one fused multiply-add (the CPU build contracts them) in the
// accumulate type: double for float32/float64, float for float16/bfloat16,
// int64 for integers. Integers are exact either way (wrapping as a cast).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include <maia/kernel_abi.h>

#include "nn.h"

namespace maia_nn {

// args: out ([n], unit stride), start, step (f64: the float types'), start,
// step (i64: the integer types'), vector width W (elements), chunk (the CPU's
// parallel_for chunk length).
template <typename T>
void arange(void* const* args, const maia_grid_t* grid) {
  const auto& out = memref<T, 1>(args, 0);
  T* y = out.aligned + out.offset;
  const int64_t n = out.sizes[0];
  auto slice = maia_kernel::programSlice(grid, n);
  if constexpr (std::is_floating_point_v<compute_t<T>>) {
    // float32 accumulates in double on the CPU, float16/bfloat16 in float.
    using A = std::conditional_t<std::is_same_v<compute_t<T>, double> ||
                                     std::is_same_v<T, float>,
                                 double, float>;
    const A start = static_cast<A>(scalar<double>(args, 1));
    const A step = static_cast<A>(scalar<double>(args, 2));
    const int64_t width = scalar<int64_t>(args, 5), chunk = scalar<int64_t>(args, 6);
    for (int64_t i = slice.begin; i < slice.end; ++i) {
      const int64_t begin = i / chunk * chunk;
      const int64_t vectorized = (std::min(n, begin + chunk) - begin) / (2 * width) * (2 * width);
      A value;
      if (i - begin < vectorized) {
        const int64_t k = begin + (i - begin) / width * width;
        const A base = static_cast<A>(load(store<T>(std::fma(step, static_cast<A>(k), start))));
        value = std::fma(static_cast<A>(i - k), step, base);
      } else {
        value = std::fma(step, static_cast<A>(i), start);
      }
      y[i] = store<T>(value);
    }
  } else {
    // Unsigned arithmetic: wraps like the CPU's int64 math, without UB.
    const uint64_t start = static_cast<uint64_t>(scalar<int64_t>(args, 3));
    const uint64_t step = static_cast<uint64_t>(scalar<int64_t>(args, 4));
    for (int64_t i = slice.begin; i < slice.end; ++i)
      y[i] = static_cast<T>(static_cast<int64_t>(start + step * static_cast<uint64_t>(i)));
  }
}

/// One arithmetic step of the CPU's linspace in its step type S: float and
/// double contract a + b * c into one FMA; float16/bfloat16 round every
/// operation (c10::Half arithmetic, the integer operand first converted);
/// integers compute in double and truncate at the store.
template <typename T, typename S>
S fusedStep(S a, S b, int64_t c, bool subtract) {
  if constexpr (maia_eager::kIsReducedFloat<T>) {
    const float product = load(store<T>(load(b) * load(store<T>(static_cast<float>(c)))));
    return store<T>(subtract ? load(a) - product : load(a) + product);
  } else {
    return std::fma(subtract ? -b : b, static_cast<S>(c), a);
  }
}

/// linspace's fill, bit for bit as the CPU's kernel (RangeFactoriesKernel.cpp):
/// out[i] = start + step * i below steps / 2, end - step * (steps - 1 - i)
/// from there, the step (end - start) / (steps - 1) in the element type for
/// floating types, in double for integers. Every element follows this scalar
/// formula: unlike arange's, the CPU's linspace never takes its vector path.
/// args: out ([n], unit stride), start, end (f64).
template <typename T>
void linspace(void* const* args, const maia_grid_t* grid) {
  constexpr bool kReduced = maia_eager::kIsReducedFloat<T>;
  using S = std::conditional_t<kReduced || std::is_floating_point_v<T>, T, double>;
  const auto& out = memref<T, 1>(args, 0);
  T* y = out.aligned + out.offset;
  const int64_t n = out.sizes[0];
  // start and end as the element type first (Scalar::to<scalar_t>), then S.
  auto asStep = [](double v) -> S {
    if constexpr (kReduced) return store<T>(v);
    else if constexpr (std::is_floating_point_v<T>) return static_cast<T>(v);
    else return static_cast<double>(static_cast<T>(static_cast<int64_t>(v)));
  };
  const S start = asStep(scalar<double>(args, 1)), end = asStep(scalar<double>(args, 2));
  S step;
  if constexpr (kReduced)
    step = store<T>(load(store<T>(load(end) - load(start))) /
                    load(store<T>(static_cast<float>(n - 1))));
  else
    step = (end - start) / static_cast<S>(n - 1);
  const int64_t halfway = n / 2;
  auto slice = maia_kernel::programSlice(grid, n);
  for (int64_t i = slice.begin; i < slice.end; ++i) {
    const S v = i < halfway ? fusedStep<T>(start, step, i, false)
                            : fusedStep<T>(end, step, n - i - 1, true);
    if constexpr (kReduced || std::is_floating_point_v<T>) y[i] = v;
    else y[i] = static_cast<T>(static_cast<int64_t>(v));
  }
}

/// v with its rounding kept: the compiler may not fuse it into an FMA with
/// the next addition (the CPU's logspace is built without FMA).
inline double unfused(double v) {
  asm("" : "+x"(v));
  return v;
}

/// v converted to integer type T as x86 code does: truncated through int32
/// (int64 for 64-bit types), a value out of that range (or NaN) becoming
/// its "integer indefinite", the lowest value; then narrowed with wrapping.
template <typename T>
T truncateLikeX86(double v) {
  using Wide = std::conditional_t<sizeof(T) == 8, int64_t, int32_t>;
  constexpr double kLimit = sizeof(T) == 8 ? 9223372036854775808.0 : 2147483648.0;
  const Wide wide = (v > -kLimit - 1.0 && v < kLimit) ? static_cast<Wide>(v)
                                                       : std::numeric_limits<Wide>::min();
  return static_cast<T>(wide);
}

/// logspace's fill as the CPU's loop (RangeFactories.cpp): out[i] =
/// pow(base, start + step * i) below steps / 2, pow(base, end - step *
/// (steps - 1 - i)) from there, in double without FMA; integer dtypes take
/// start and end as the integer type first (wrapping) and truncate the
/// power as x86 converts; float16/bfloat16 round start and end to their type
/// first, as the CPU does (4.3 is 4.3125 in bfloat16). Integers match the
/// CPU bit for bit; floating types within one rounding of the result (the
/// CPU rounds parts of the exponent to the element type).
/// args: out ([n], unit stride), start, end, base (f64).
template <typename T>
void logspace(void* const* args, const maia_grid_t* grid) {
  const auto& out = memref<T, 1>(args, 0);
  T* y = out.aligned + out.offset;
  const int64_t n = out.sizes[0];
  double start = scalar<double>(args, 1), end = scalar<double>(args, 2);
  const double base = scalar<double>(args, 3);
  const int64_t halfway = n / 2;
  auto slice = maia_kernel::programSlice(grid, n);
  if constexpr (maia_eager::kIsReducedFloat<T>) {
    start = load(store<T>(start));  // the bounds in T first: 4.3 is 4.3125 in bfloat16
    end = load(store<T>(end));
  }
  constexpr bool kInteger = std::is_integral_v<T>;
  double span = end - start;
  if constexpr (kInteger) {
    const T first = static_cast<T>(static_cast<int64_t>(start));
    const T last = static_cast<T>(static_cast<int64_t>(end));
    start = first;
    end = last;
    span = static_cast<double>(last - first);  // in int (promoted), as the CPU's
  }
  const double step = span / static_cast<double>(n - 1);
  for (int64_t i = slice.begin; i < slice.end; ++i) {
    const double exponent = i < halfway
                                ? start + unfused(step * static_cast<double>(i))
                                : end - unfused(step * static_cast<double>(n - i - 1));
    const double value = std::pow(base, exponent);
    if constexpr (kInteger) y[i] = truncateLikeX86<T>(value);
    else y[i] = store<T>(value);
  }
}

}  // namespace maia_nn
