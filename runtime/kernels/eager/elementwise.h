// The strided elementwise loop shared by every eager elementwise kernel.
//
// Operands are rank-4 memrefs over the same iteration shape (the output's);
// broadcast inputs have stride 0. Each program owns a contiguous slice of
// the linear iteration space and walks it one innermost run at a time: runs
// whose operands are all unit-stride use a loop the compiler vectorizes, and
// when the output is large, streaming stores (streaming_store.h).
#pragma once

#include <array>
#include <cstdint>
#include <tuple>
#include <utility>

#include <maia/kernel_abi.h>

#include "scalar_types.h"
#include "streaming_store.h"

namespace maia_eager {

constexpr int kRank = 4;

template <typename T>
using Ref = maia_kernel::MemRef<T, kRank>;

/// Calls body(out_ptr, in_ptrs..., count, unit_stride, streaming, strides...)
/// for each innermost run of this program's slice. streaming: the run is
/// unit-stride and the whole output large enough for streaming stores
/// (writeRun); the slice ends with the fence they need.
template <typename Out, typename... Ins, typename Body>
void forEachRun(const maia_grid_t* grid, const Ref<Out>& out, const Ref<Ins>&... ins,
                Body&& body) {
  int64_t total = 1;
  for (int d = 0; d < kRank; ++d) total *= out.sizes[d];
  if (total == 0) return;
  maia_kernel::Slice slice = maia_kernel::programSlice(grid, total);
  if (slice.begin >= slice.end) return;
  const int64_t inner = out.sizes[kRank - 1];
  // Multi-index of the slice start (dimension kRank-1 fastest).
  std::array<int64_t, kRank> index{};
  int64_t rest = slice.begin;
  for (int d = kRank - 1; d >= 0; --d) {
    index[d] = rest % out.sizes[d];
    rest /= out.sizes[d];
  }
  auto offsetOf = [&](const auto& ref) {
    int64_t offset = ref.offset;
    for (int d = 0; d < kRank; ++d) offset += index[d] * ref.strides[d];
    return offset;
  };
  const bool unit = out.strides[kRank - 1] == 1 && ((ins.strides[kRank - 1] == 1) && ...);
  const bool streaming =
      unit && total * static_cast<int64_t>(sizeof(Out)) >= kStreamingStoreMinBytes;
  int64_t position = slice.begin;
  while (position < slice.end) {
    int64_t count = std::min(inner - index[kRank - 1], slice.end - position);
    body(out.aligned + offsetOf(out), (ins.aligned + offsetOf(ins))..., count, unit, streaming,
         out.strides[kRank - 1], ins.strides[kRank - 1]...);
    position += count;
    index[kRank - 1] += count;
    for (int d = kRank - 1; d > 0 && index[d] == out.sizes[d]; --d) {
      index[d] = 0;
      ++index[d - 1];
    }
  }
  if (streaming) _mm_sfence();
}

/// out = fn(in) elementwise.
template <typename Out, typename In, typename Fn>
void unary(void* const* args, const maia_grid_t* grid, Fn fn) {
  const auto& out = maia_kernel::memref<Out, kRank>(args, 0);
  const auto& in = maia_kernel::memref<In, kRank>(args, 1);
  forEachRun<Out, In>(grid, out, in,
                      [&](Out* o, const In* a, int64_t n, bool unit, bool streaming, int64_t so,
                          int64_t sa) {
                        if (unit) {
                          writeRun(o, n, streaming, [&](Out* d, int64_t first, int64_t count) {
                            const In* x = a + first;
                            for (int64_t i = 0; i < count; ++i) d[i] = store<Out>(fn(load(x[i])));
                          });
                        } else {
                          for (int64_t i = 0; i < n; ++i)
                            o[i * so] = store<Out>(fn(load(a[i * sa])));
                        }
                      });
}

/// out = fn(a, b) elementwise.
template <typename Out, typename A, typename B, typename Fn>
void binary(void* const* args, const maia_grid_t* grid, Fn fn) {
  const auto& out = maia_kernel::memref<Out, kRank>(args, 0);
  const auto& a = maia_kernel::memref<A, kRank>(args, 1);
  const auto& b = maia_kernel::memref<B, kRank>(args, 2);
  forEachRun<Out, A, B>(grid, out, a, b,
                        [&](Out* o, const A* x, const B* y, int64_t n, bool unit,
                            bool streaming, int64_t so, int64_t sx, int64_t sy) {
                          if (unit) {
                            writeRun(o, n, streaming, [&](Out* d, int64_t first, int64_t count) {
                              const A* xs = x + first;
                              const B* ys = y + first;
                              for (int64_t i = 0; i < count; ++i)
                                d[i] = store<Out>(fn(load(xs[i]), load(ys[i])));
                            });
                          } else {
                            for (int64_t i = 0; i < n; ++i)
                              o[i * so] = store<Out>(fn(load(x[i * sx]), load(y[i * sy])));
                          }
                        });
}

/// out = fn(a, b, c) elementwise over the stored values (fn loads and stores).
template <typename Out, typename A, typename B, typename C, typename Fn>
void ternaryStored(void* const* args, const maia_grid_t* grid, Fn fn) {
  const auto& out = maia_kernel::memref<Out, kRank>(args, 0);
  const auto& a = maia_kernel::memref<A, kRank>(args, 1);
  const auto& b = maia_kernel::memref<B, kRank>(args, 2);
  const auto& c = maia_kernel::memref<C, kRank>(args, 3);
  forEachRun<Out, A, B, C>(grid, out, a, b, c,
                           [&](Out* o, const A* x, const B* y, const C* z, int64_t n, bool unit,
                               bool streaming, int64_t so, int64_t sx, int64_t sy, int64_t sz) {
                             if (unit) {
                               writeRun(o, n, streaming,
                                        [&](Out* d, int64_t first, int64_t count) {
                                          for (int64_t i = 0; i < count; ++i)
                                            d[i] = fn(x[first + i], y[first + i], z[first + i]);
                                        });
                             } else {
                               for (int64_t i = 0; i < n; ++i)
                                 o[i * so] = fn(x[i * sx], y[i * sy], z[i * sz]);
                             }
                           });
}

/// out = fn(a, b, c) elementwise, computed in T's compute type.
template <typename T, typename Fn>
void ternary(void* const* args, const maia_grid_t* grid, Fn fn) {
  ternaryStored<T, T, T, T>(args, grid, [&](T x, T y, T z) {
    return store<T>(fn(load(x), load(y), load(z)));
  });
}

/// (out0, out1) = fn(a, b, c) elementwise, computed in T's compute type: fn
/// returns a pair. out0's shape is the iteration's; out1 is walked like an
/// input operand of the same shape.
template <typename T, typename Fn>
void ternaryTwoOutputs(void* const* args, const maia_grid_t* grid, Fn fn) {
  const auto& out0 = maia_kernel::memref<T, kRank>(args, 0);
  const auto& out1 = maia_kernel::memref<T, kRank>(args, 1);
  const auto& a = maia_kernel::memref<T, kRank>(args, 2);
  const auto& b = maia_kernel::memref<T, kRank>(args, 3);
  const auto& c = maia_kernel::memref<T, kRank>(args, 4);
  forEachRun<T, T, T, T, T>(grid, out0, out1, a, b, c,
                            [&](T* o0, T* o1, T* x, T* y, T* z, int64_t n, bool unit,
                                bool /*streaming: two outputs, written in place*/, int64_t s0,
                                int64_t s1, int64_t sx, int64_t sy, int64_t sz) {
                              if (unit) {
                                s0 = s1 = sx = sy = sz = 1;  // constant strides vectorize
                              }
                              for (int64_t i = 0; i < n; ++i) {
                                const auto [r0, r1] =
                                    fn(load(x[i * sx]), load(y[i * sy]), load(z[i * sz]));
                                o0[i * s0] = store<T>(r0);
                                o1[i * s1] = store<T>(r1);
                              }
                            });
}

namespace detail {

template <size_t, typename T>
using Repeat = T;

template <typename C, typename Fn>
C foldLeft(Fn& fn, C first) {
  return first;
}
template <typename C, typename Fn, typename... Rest>
C foldLeft(Fn& fn, C first, C second, Rest... rest) {
  return foldLeft(fn, fn(first, second), rest...);
}

template <typename T, typename Fn, size_t... I>
void fold(void* const* args, const maia_grid_t* grid, Fn fn, std::index_sequence<I...>) {
  constexpr size_t N = sizeof...(I);
  const auto& out = maia_kernel::memref<T, kRank>(args, 0);
  forEachRun<T, Repeat<I, T>...>(
      grid, out, maia_kernel::memref<T, kRank>(args, I + 1)..., [&](T* o, auto... run) {
        // run: the N input pointers, count, unit, streaming, the output's
        // stride, the N inputs' strides.
        const auto parts = std::make_tuple(run...);
        const std::array<const T*, N> x{std::get<I>(parts)...};
        const int64_t n = std::get<N>(parts);
        const bool unit = std::get<N + 1>(parts), streaming = std::get<N + 2>(parts);
        if (unit) {
          writeRun(o, n, streaming, [&](T* d, int64_t first, int64_t count) {
            for (int64_t i = 0; i < count; ++i)
              d[i] = store<T>(foldLeft(fn, load(x[I][first + i])...));
          });
        } else {
          const int64_t so = std::get<N + 3>(parts);
          const std::array<int64_t, N> sx{std::get<N + 4 + I>(parts)...};
          for (int64_t i = 0; i < n; ++i)
            o[i * so] = store<T>(foldLeft(fn, load(x[I][i * sx[I]])...));
        }
      });
}

}  // namespace detail

/// out = fn(...fn(fn(in_0, in_1), in_2)..., in_{N-1}) elementwise, computed
/// in T's compute type: N tensors reduced in one pass (each element read
/// once and written once, where a chain of binary kernels would write and
/// re-read N-2 intermediate results), in the same order, so with the same
/// bits as the chain.
template <typename T, size_t N, typename Fn>
void fold(void* const* args, const maia_grid_t* grid, Fn fn) {
  detail::fold<T>(args, grid, fn, std::make_index_sequence<N>{});
}

/// out = fn(cond, a, b) elementwise (where: values copied as stored).
template <typename Out, typename Fn>
void ternarySelect(void* const* args, const maia_grid_t* grid, Fn fn) {
  ternaryStored<Out, bool, Out, Out>(args, grid, fn);
}

}  // namespace maia_eager
