// 2-D pooling over (N, C, H, W) memrefs of any strides: max pooling (with
// flat h * W + w indices per plane), average pooling, adaptive average and
// adaptive max pooling, and their backwards. Templated over the storage
// type, instantiated by gen_nn_kernels.py.
//
// The arithmetic is PyTorch's CPU kernels' (MaxPoolKernel.cpp,
// AvgPoolKernel.cpp, AdaptiveAvgPoolKernel.cpp, AdaptiveMaxPoolKernel.cpp):
// the same windows, the same summation order and divisions, a NaN always
// wins a max (the last NaN of a window gives the index), float16/bfloat16
// compute in float32. So float32 and float64 results equal the CPU's bit for
// bit.
//
// Forward kernels: each program owns a contiguous block of output rows
// (n, c, oh), in rowIndex's order. Backward kernels never write an element
// another program writes: average pooling gathers each input element's
// gradient from the outputs whose windows cover it (a program owns rows of
// grad_input); max pooling scatters through the indices, so a program owns whole (n, c)
// planes of grad_input and accumulates only into them.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include <immintrin.h>

#include <maia/kernel_abi.h>

#include "nn.h"

namespace maia_nn {

/// The window geometry scalars of max/avg pooling (8 consecutive args):
/// kernel, stride, padding, dilation, each (height, width).
struct PoolGeometry {
  int64_t kh, kw, sh, sw, ph, pw, dh, dw;

  static PoolGeometry from(void* const* args, int first) {
    PoolGeometry g;
    int64_t* fields[] = {&g.kh, &g.kw, &g.sh, &g.sw, &g.ph, &g.pw, &g.dh, &g.dw};
    for (int k = 0; k < 8; ++k) *fields[k] = scalar<int64_t>(args, first + k);
    return g;
  }
};

/// The (n, c, y) of row `row` of an (N, C, rows) grid of rows. Plane by
/// plane, except for channels-last memrefs (channels innermost): then
/// consecutive rows are consecutive channels of one (n, y), which read and
/// write the same cache lines (plane by plane, they are a plane apart and
/// measured 5-9x slower than the CPU's channels-last kernels).
struct RowIndex {
  int64_t n, c, y;
};
template <typename T>
RowIndex rowIndex(const MemRef<T, 4>& m, int64_t row, int64_t channels, int64_t rows) {
  if (m.strides[1] < m.strides[3])
    return {row / channels / rows, row % channels, row / channels % rows};
  return {row / rows / channels, row / rows % channels, row % rows};
}

/// Element (n, c, y, x) of a 4-D memref.
template <typename T>
T& at4(const MemRef<T, 4>& m, int64_t n, int64_t c, int64_t y, int64_t x) {
  return m.aligned[m.offset + n * m.strides[0] + c * m.strides[1] + y * m.strides[2] +
                   x * m.strides[3]];
}

/// Element (n, c, z, y, x) of a 5-D memref.
template <typename T>
T& at5(const MemRef<T, 5>& m, int64_t n, int64_t c, int64_t z, int64_t y, int64_t x) {
  return m.aligned[m.offset + n * m.strides[0] + c * m.strides[1] + z * m.strides[2] +
                   y * m.strides[3] + x * m.strides[4]];
}

/// Whether v replaces best in a max: larger, or NaN (NaN wins; a later NaN
/// replaces an earlier one, as on the CPU).
template <typename C>
bool replacesMax(C v, C best) {
  if constexpr (std::is_floating_point_v<C>)
    return v > best || std::isnan(v);
  else
    return v > best;
}

/// The max's starting value: -inf, or the lowest integer.
template <typename C>
constexpr C lowestValue() {
  return std::numeric_limits<C>::has_infinity ? -std::numeric_limits<C>::infinity()
                                              : std::numeric_limits<C>::lowest();
}

/// Adaptive pooling's window of output o of `out` over `in` elements:
/// [adaptiveStart, adaptiveEnd), ATen's start_index/end_index.
inline int64_t adaptiveStart(int64_t o, int64_t out, int64_t in) {
  return (o / out) * in + ((o % out) * in) / out;
}
inline int64_t adaptiveEnd(int64_t o, int64_t out, int64_t in) {
  return 1 + ((o + 1) * in - 1) / out;
}

/// Max of window rows [y0, y1) step ystep, columns [x0, x1) step xstep of
/// plane (n, c) into out/indices (n, c, oy, ox). The index starts at the
/// window's first element (kept when every value is -inf).
template <typename T>
void windowMax(const MemRef<T, 4>& in, const MemRef<T, 4>& out,
               const MemRef<int64_t, 4>& indices, int64_t n, int64_t c, int64_t oy, int64_t ox,
               int64_t y0, int64_t y1, int64_t ystep, int64_t x0, int64_t x1, int64_t xstep) {
  using C = compute_t<T>;
  const int64_t width = in.sizes[3];
  C best = lowestValue<C>();
  int64_t best_index = y0 * width + x0;
  for (int64_t y = y0; y < y1; y += ystep) {
    for (int64_t x = x0; x < x1; x += xstep) {
      const C v = load(at4(in, n, c, y, x));
      if (replacesMax(v, best)) {
        best = v;
        best_index = y * width + x;
      }
    }
  }
  at4(out, n, c, oy, ox) = store<T>(best);
  at4(indices, n, c, oy, ox) = best_index;
}

/// Channels per block of the channels-last kernels: their per-channel
/// state lives on the stack.
constexpr int64_t kChannelBlock = 16;

/// Whether the kernels can walk these memrefs' channels as unit-stride
/// vectors (channels-last tensors).
template <typename... M>
bool channelsContiguous(const M&... m) {
  return ((m.strides[1] == 1) && ...);
}

/// One output pixel's max over 8 float32 channels at src0 + tap offsets, in
/// AVX2 (the binary's x86-64-v3): GCC leaves the generic channel loop
/// scalar (a float compare selecting a 64-bit index), 10x slower than the
/// CPU's channels-last kernel. Indices are int32 in the loop (the caller
/// checks h * w fits) and widen once at the store.
struct MaxOf8Channels {
  __m256 best = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  __m256i index;

  explicit MaxOf8Channels(int32_t first) : index(_mm256_set1_epi32(first)) {}
  void tap(const float* src, int32_t position) {
    const __m256 v = _mm256_loadu_ps(src);
    // Larger, or NaN (NaN wins; a later NaN replaces an earlier one).
    const __m256 take = _mm256_or_ps(_mm256_cmp_ps(v, best, _CMP_GT_OQ),
                                     _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    best = _mm256_blendv_ps(best, v, take);
    index = _mm256_castps_si256(_mm256_blendv_ps(
        _mm256_castsi256_ps(index), _mm256_castsi256_ps(_mm256_set1_epi32(position)), take));
  }
  void store(float* dst, int64_t* dst_index) const {
    _mm256_storeu_ps(dst, best);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst_index),
                        _mm256_cvtepi32_epi64(_mm256_castsi256_si128(index)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst_index + 4),
                        _mm256_cvtepi32_epi64(_mm256_extracti128_si256(index, 1)));
  }
};

/// Max pooling of channels-last memrefs: each program owns output pixels
/// (n, oy, ox) and does all their channels, kChannelBlock at a time, so
/// every load is unit-stride (the CPU's channels-last order; each channel's
/// arithmetic is the same as plane by plane).
template <typename T>
void maxPool2dChannelsLast(const MemRef<T, 4>& out, const MemRef<int64_t, 4>& indices,
                           const MemRef<T, 4>& in, const PoolGeometry& g,
                           const maia_grid_t* grid) {
  using C = compute_t<T>;
  const int64_t channels = out.sizes[1], oh = out.sizes[2], ow = out.sizes[3];
  const int64_t h = in.sizes[2], w = in.sizes[3];
  auto slice = maia_kernel::programSlice(grid, out.sizes[0] * oh * ow);
  for (int64_t pixel = slice.begin; pixel < slice.end; ++pixel) {
    const int64_t ox = pixel % ow, oy = pixel / ow % oh, n = pixel / ow / oh;
    int64_t y0 = oy * g.sh - g.ph, x0 = ox * g.sw - g.pw;
    const int64_t y1 = std::min(y0 + (g.kh - 1) * g.dh + 1, h);
    const int64_t x1 = std::min(x0 + (g.kw - 1) * g.dw + 1, w);
    while (y0 < 0) y0 += g.dh;
    while (x0 < 0) x0 += g.dw;
    int64_t c0 = 0;
    if constexpr (std::is_same_v<T, float>) {
      if (h * w <= std::numeric_limits<int32_t>::max()) {
        for (; c0 + 8 <= channels; c0 += 8) {
          MaxOf8Channels m(static_cast<int32_t>(y0 * w + x0));
          for (int64_t y = y0; y < y1; y += g.dh)
            for (int64_t x = x0; x < x1; x += g.dw)
              m.tap(&at4(in, n, c0, y, x), static_cast<int32_t>(y * w + x));
          m.store(&at4(out, n, c0, oy, ox), &at4(indices, n, c0, oy, ox));
        }
      }
    }
    for (; c0 < channels; c0 += kChannelBlock) {
      const int64_t block = std::min(kChannelBlock, channels - c0);
      C best[kChannelBlock];
      int64_t best_index[kChannelBlock];
      for (int64_t k = 0; k < block; ++k) {
        best[k] = lowestValue<C>();
        best_index[k] = y0 * w + x0;
      }
      // A full block has a constant trip count, which the compiler vectorizes.
      auto taps = [&](auto count) {
        for (int64_t y = y0; y < y1; y += g.dh) {
          for (int64_t x = x0; x < x1; x += g.dw) {
            const T* src = &at4(in, n, c0, y, x);
            const int64_t index = y * w + x;
            for (int64_t k = 0; k < static_cast<int64_t>(count); ++k) {
              const C v = load(src[k]);
              const bool take = replacesMax(v, best[k]);
              best[k] = take ? v : best[k];
              best_index[k] = take ? index : best_index[k];
            }
          }
        }
      };
      if (block == kChannelBlock)
        taps(std::integral_constant<int64_t, kChannelBlock>());
      else
        taps(block);
      T* dst = &at4(out, n, c0, oy, ox);
      int64_t* dst_index = &at4(indices, n, c0, oy, ox);
      for (int64_t k = 0; k < block; ++k) {
        dst[k] = store<T>(best[k]);
        dst_index[k] = best_index[k];
      }
    }
  }
}

// args: out, indices (N, C, OH, OW), in (N, C, H, W), geometry (8 scalars).
template <typename T>
void maxPool2d(void* const* args, const maia_grid_t* grid) {
  const auto& out = memref<T, 4>(args, 0);
  const auto& indices = memref<int64_t, 4>(args, 1);
  const auto& in = memref<T, 4>(args, 2);
  const PoolGeometry g = PoolGeometry::from(args, 3);
  const int64_t channels = out.sizes[1], oh = out.sizes[2], ow = out.sizes[3];
  const int64_t h = in.sizes[2], w = in.sizes[3];
  if (channels > 1 && channelsContiguous(out, indices, in))
    return maxPool2dChannelsLast(out, indices, in, g, grid);
  auto slice = maia_kernel::programSlice(grid, out.sizes[0] * channels * oh);
  for (int64_t row = slice.begin; row < slice.end; ++row) {
    const auto [n, c, oy] = rowIndex(in, row, channels, oh);
    int64_t y0 = oy * g.sh - g.ph;
    const int64_t y1 = std::min(y0 + (g.kh - 1) * g.dh + 1, h);
    while (y0 < 0) y0 += g.dh;  // the first dilated tap inside the input
    for (int64_t ox = 0; ox < ow; ++ox) {
      int64_t x0 = ox * g.sw - g.pw;
      const int64_t x1 = std::min(x0 + (g.kw - 1) * g.dw + 1, w);
      while (x0 < 0) x0 += g.dw;
      windowMax(in, out, indices, n, c, oy, ox, y0, y1, g.dh, x0, x1, g.dw);
    }
  }
}

// args: out, indices (N, C, OH, OW), in (N, C, H, W).
template <typename T>
void adaptiveMaxPool2d(void* const* args, const maia_grid_t* grid) {
  const auto& out = memref<T, 4>(args, 0);
  const auto& indices = memref<int64_t, 4>(args, 1);
  const auto& in = memref<T, 4>(args, 2);
  const int64_t channels = out.sizes[1], oh = out.sizes[2], ow = out.sizes[3];
  const int64_t h = in.sizes[2], w = in.sizes[3];
  auto slice = maia_kernel::programSlice(grid, out.sizes[0] * channels * oh);
  for (int64_t row = slice.begin; row < slice.end; ++row) {
    const auto [n, c, oy] = rowIndex(in, row, channels, oh);
    const int64_t y0 = adaptiveStart(oy, oh, h), y1 = adaptiveEnd(oy, oh, h);
    for (int64_t ox = 0; ox < ow; ++ox)
      windowMax(in, out, indices, n, c, oy, ox, y0, y1, 1, adaptiveStart(ox, ow, w),
                adaptiveEnd(ox, ow, w), 1);
  }
}

// args: grad_input (N, C, H, W; of the compute type: float32 for
// float16/bfloat16, so a position chosen by several windows accumulates in
// float32), grad_output, indices (N, C, OH, OW). Max pooling's and adaptive
// max pooling's backward. Programs own (n, c) planes: zero the plane, then
// add each output's gradient at its index, in output order (the CPU's). An
// index of -1 is skipped (as on the CPU); any other outside the plane traps.
template <typename T>
void maxPool2dBackward(void* const* args, const maia_grid_t* grid) {
  using C = compute_t<T>;
  const auto& gi = memref<C, 4>(args, 0);
  const auto& go = memref<T, 4>(args, 1);
  const auto& indices = memref<int64_t, 4>(args, 2);
  const int64_t channels = gi.sizes[1], h = gi.sizes[2], w = gi.sizes[3];
  const int64_t oh = go.sizes[2], ow = go.sizes[3];
  auto slice = maia_kernel::programSlice(grid, gi.sizes[0] * channels);
  for (int64_t plane = slice.begin; plane < slice.end; ++plane) {
    const int64_t n = plane / channels, c = plane % channels;
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x) at4(gi, n, c, y, x) = C(0);
    for (int64_t oy = 0; oy < oh; ++oy) {
      for (int64_t ox = 0; ox < ow; ++ox) {
        const int64_t index = at4(indices, n, c, oy, ox);
        if (index == -1) continue;
        checkIndex(index, h * w);
        at4(gi, n, c, index / w, index % w) += load(at4(go, n, c, oy, ox));
      }
    }
  }
}

/// Average pooling's window of output o along one dimension: the clipped
/// bounds [begin, end) and the unclipped extent that count_include_pad
/// divides by (padding counts, positions past it do not).
struct AvgWindow {
  int64_t begin, end, padded;
};
inline AvgWindow avgWindow(int64_t o, int64_t stride, int64_t pad, int64_t kernel,
                           int64_t size) {
  const int64_t start = o * stride - pad;
  const int64_t stop = std::min(start + kernel, size + pad);
  return {std::max<int64_t>(start, 0), std::min(stop, size), stop - start};
}

/// The divisor of one average-pooling output.
inline int64_t avgDivisor(const AvgWindow& y, const AvgWindow& x, bool count_include_pad,
                          int64_t divisor_override) {
  if (divisor_override != 0) return divisor_override;
  if (count_include_pad) return y.padded * x.padded;
  return (y.end - y.begin) * (x.end - x.begin);
}

/// Average pooling of channels-last memrefs, like maxPool2dChannelsLast:
/// output pixels, their channels kChannelBlock at a time, each channel
/// summed in the same order as plane by plane.
template <typename T>
void avgPool2dChannelsLast(const MemRef<T, 4>& out, const MemRef<T, 4>& in,
                           const PoolGeometry& g, bool count_include_pad,
                           int64_t divisor_override, const maia_grid_t* grid) {
  using C = compute_t<T>;
  const int64_t channels = out.sizes[1], oh = out.sizes[2], ow = out.sizes[3];
  const int64_t h = in.sizes[2], w = in.sizes[3];
  auto slice = maia_kernel::programSlice(grid, out.sizes[0] * oh * ow);
  for (int64_t pixel = slice.begin; pixel < slice.end; ++pixel) {
    const int64_t ox = pixel % ow, oy = pixel / ow % oh, n = pixel / ow / oh;
    const AvgWindow wy = avgWindow(oy, g.sh, g.ph, g.kh, h);
    const AvgWindow wx = avgWindow(ox, g.sw, g.pw, g.kw, w);
    const bool empty = wy.begin >= wy.end || wx.begin >= wx.end;  // only padding
    const C divisor =
        static_cast<C>(avgDivisor(wy, wx, count_include_pad, divisor_override));
    for (int64_t c0 = 0; c0 < channels; c0 += kChannelBlock) {
      const int64_t block = std::min(kChannelBlock, channels - c0);
      C sum[kChannelBlock] = {};
      for (int64_t y = wy.begin; y < wy.end; ++y) {
        for (int64_t x = wx.begin; x < wx.end; ++x) {
          const T* src = &at4(in, n, c0, y, x);
          for (int64_t k = 0; k < block; ++k) sum[k] += load(src[k]);
        }
      }
      T* dst = &at4(out, n, c0, oy, ox);
      for (int64_t k = 0; k < block; ++k) dst[k] = empty ? store<T>(0) : store<T>(sum[k] / divisor);
    }
  }
}

// args: out (N, C, OH, OW), in (N, C, H, W), geometry (8 scalars; dilation
// 1), count_include_pad, divisor_override (0: none). Integer dtypes divide
// as integers (truncating), as the CPU does for int64.
template <typename T>
void avgPool2d(void* const* args, const maia_grid_t* grid) {
  using C = compute_t<T>;
  const auto& out = memref<T, 4>(args, 0);
  const auto& in = memref<T, 4>(args, 1);
  const PoolGeometry g = PoolGeometry::from(args, 2);
  const bool count_include_pad = scalar<int64_t>(args, 10) != 0;
  const int64_t divisor_override = scalar<int64_t>(args, 11);
  const int64_t channels = out.sizes[1], oh = out.sizes[2], ow = out.sizes[3];
  const int64_t h = in.sizes[2], w = in.sizes[3];
  if (channels > 1 && channelsContiguous(out, in))
    return avgPool2dChannelsLast(out, in, g, count_include_pad, divisor_override, grid);
  auto slice = maia_kernel::programSlice(grid, out.sizes[0] * channels * oh);
  for (int64_t row = slice.begin; row < slice.end; ++row) {
    const auto [n, c, oy] = rowIndex(in, row, channels, oh);
    const AvgWindow wy = avgWindow(oy, g.sh, g.ph, g.kh, h);
    for (int64_t ox = 0; ox < ow; ++ox) {
      const AvgWindow wx = avgWindow(ox, g.sw, g.pw, g.kw, w);
      if (wy.begin >= wy.end || wx.begin >= wx.end) {  // only padding
        at4(out, n, c, oy, ox) = store<T>(0);
        continue;
      }
      C sum = 0;
      for (int64_t y = wy.begin; y < wy.end; ++y)
        for (int64_t x = wx.begin; x < wx.end; ++x) sum += load(at4(in, n, c, y, x));
      const int64_t divisor = avgDivisor(wy, wx, count_include_pad, divisor_override);
      at4(out, n, c, oy, ox) = store<T>(sum / static_cast<C>(divisor));
    }
  }
}

/// Outputs [begin, end) along one dimension whose windows (start o * stride
/// - pad, extent `reach`) contain input position i, within [0, outputs).
inline maia_kernel::Slice coveringOutputs(int64_t i, int64_t stride, int64_t pad, int64_t reach,
                                          int64_t outputs) {
  const int64_t lo = i + pad - reach + 1;  // o * stride >= lo
  const int64_t begin = lo <= 0 ? 0 : (lo + stride - 1) / stride;
  const int64_t end = std::min(outputs, (i + pad) / stride + 1);
  return {begin, std::max(begin, end)};
}

// args: grad_input (N, C, H, W), grad_output (N, C, OH, OW), geometry,
// count_include_pad, divisor_override. Programs own rows (n, c, y) of
// grad_input; each element sums grad_output / divisor over the windows
// covering it, in output order (the order the CPU adds them in).
template <typename T>
void avgPool2dBackward(void* const* args, const maia_grid_t* grid) {
  using C = compute_t<T>;
  const auto& gi = memref<T, 4>(args, 0);
  const auto& go = memref<T, 4>(args, 1);
  const PoolGeometry g = PoolGeometry::from(args, 2);
  const bool count_include_pad = scalar<int64_t>(args, 10) != 0;
  const int64_t divisor_override = scalar<int64_t>(args, 11);
  const int64_t channels = gi.sizes[1], h = gi.sizes[2], w = gi.sizes[3];
  const int64_t oh = go.sizes[2], ow = go.sizes[3];
  auto slice = maia_kernel::programSlice(grid, gi.sizes[0] * channels * h);
  for (int64_t row = slice.begin; row < slice.end; ++row) {
    const auto [n, c, y] = rowIndex(gi, row, channels, h);
    const auto ys = coveringOutputs(y, g.sh, g.ph, g.kh, oh);
    for (int64_t x = 0; x < w; ++x) {
      const auto xs = coveringOutputs(x, g.sw, g.pw, g.kw, ow);
      C acc = 0;
      for (int64_t oy = ys.begin; oy < ys.end; ++oy) {
        const AvgWindow wy = avgWindow(oy, g.sh, g.ph, g.kh, h);
        for (int64_t ox = xs.begin; ox < xs.end; ++ox) {
          const AvgWindow wx = avgWindow(ox, g.sw, g.pw, g.kw, w);
          const int64_t divisor = avgDivisor(wy, wx, count_include_pad, divisor_override);
          acc += load(at4(go, n, c, oy, ox)) / static_cast<C>(divisor);
        }
      }
      at4(gi, n, c, y, x) = store<T>(acc);
    }
  }
}

// args: out (N, C, OH, OW), in (N, C, H, W). The mean divides by the
// window's height, then its width (the CPU's rounding).
template <typename T>
void adaptiveAvgPool2d(void* const* args, const maia_grid_t* grid) {
  using C = compute_t<T>;
  const auto& out = memref<T, 4>(args, 0);
  const auto& in = memref<T, 4>(args, 1);
  const int64_t channels = out.sizes[1], oh = out.sizes[2], ow = out.sizes[3];
  const int64_t h = in.sizes[2], w = in.sizes[3];
  auto slice = maia_kernel::programSlice(grid, out.sizes[0] * channels * oh);
  for (int64_t row = slice.begin; row < slice.end; ++row) {
    const auto [n, c, oy] = rowIndex(in, row, channels, oh);
    const int64_t y0 = adaptiveStart(oy, oh, h), y1 = adaptiveEnd(oy, oh, h);
    for (int64_t ox = 0; ox < ow; ++ox) {
      const int64_t x0 = adaptiveStart(ox, ow, w), x1 = adaptiveEnd(ox, ow, w);
      C sum = 0;
      for (int64_t y = y0; y < y1; ++y)
        for (int64_t x = x0; x < x1; ++x) sum += load(at4(in, n, c, y, x));
      at4(out, n, c, oy, ox) =
          store<T>(sum / static_cast<C>(y1 - y0) / static_cast<C>(x1 - x0));
    }
  }
}

// args: grad_input (N, C, H, W), grad_output (N, C, OH, OW). Programs own
// rows of grad_input; the outputs covering input position i are
// [start_index(i, in, out), end_index(i, in, out)): adaptive windows are
// the same formulas read the other way.
template <typename T>
void adaptiveAvgPool2dBackward(void* const* args, const maia_grid_t* grid) {
  using C = compute_t<T>;
  const auto& gi = memref<T, 4>(args, 0);
  const auto& go = memref<T, 4>(args, 1);
  const int64_t channels = gi.sizes[1], h = gi.sizes[2], w = gi.sizes[3];
  const int64_t oh = go.sizes[2], ow = go.sizes[3];
  auto slice = maia_kernel::programSlice(grid, gi.sizes[0] * channels * h);
  for (int64_t row = slice.begin; row < slice.end; ++row) {
    const auto [n, c, y] = rowIndex(gi, row, channels, h);
    const int64_t oy0 = adaptiveStart(y, h, oh), oy1 = adaptiveEnd(y, h, oh);
    for (int64_t x = 0; x < w; ++x) {
      const int64_t ox0 = adaptiveStart(x, w, ow), ox1 = adaptiveEnd(x, w, ow);
      C acc = 0;
      for (int64_t oy = oy0; oy < oy1; ++oy) {
        const C kh = static_cast<C>(adaptiveEnd(oy, oh, h) - adaptiveStart(oy, oh, h));
        for (int64_t ox = ox0; ox < ox1; ++ox) {
          const C kw = static_cast<C>(adaptiveEnd(ox, ow, w) - adaptiveStart(ox, ow, w));
          acc += load(at4(go, n, c, oy, ox)) / kh / kw;
        }
      }
      at4(gi, n, c, y, x) = store<T>(acc);
    }
  }
}

}  // namespace maia_nn
