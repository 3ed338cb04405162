// 3-D pooling over (N, C, D, H, W) memrefs of any strides: max pooling
// (flat (d * H + h) * W + w indices per plane), average pooling, adaptive
// average and adaptive max pooling, and the average poolings' backwards
// (the max poolings' backward is max_pool2d_bwd of pooling.h over the
// (N, C, D * H, W) view, whose flat plane indices are the same). The
// arithmetic is the CPU kernels', as in pooling.h: windows walked d, h, w
// in order, the same divisions, NaN winning a max, float16/bfloat16 in
// float32.
//
// Forward kernels: each program owns a block of output rows (n, c, od, oh);
// backward kernels own rows (n, c, d, h) of grad_input and gather what the
// windows covering each element contribute, in output order (the order the
// CPU adds them in).
#pragma once

#include <cstdint>

#include <maia/kernel_abi.h>

#include "nn.h"
#include "pooling.h"

namespace maia_nn {

/// Row `row` of an (N, C, D, H) grid of rows of a 5-D memref m.
struct Row3d {
  int64_t n, c, d, y;
};
template <typename T>
Row3d row3d(const MemRef<T, 5>& m, int64_t row) {
  const int64_t y = row % m.sizes[3], d = row / m.sizes[3] % m.sizes[2];
  const int64_t planes = row / m.sizes[3] / m.sizes[2];
  return {planes / m.sizes[1], planes % m.sizes[1], d, y};
}

template <typename T>
int64_t rowCount3d(const MemRef<T, 5>& m) {
  return m.sizes[0] * m.sizes[1] * m.sizes[2] * m.sizes[3];
}

/// kernel, stride, padding, dilation, each (depth, height, width).
struct Pool3dGeometry {
  int64_t k[3], s[3], p[3], dil[3];

  static Pool3dGeometry from(void* const* args, int first, bool dilated) {
    Pool3dGeometry g;
    for (int i = 0; i < 3; ++i) {
      g.k[i] = scalar<int64_t>(args, first + i);
      g.s[i] = scalar<int64_t>(args, first + 3 + i);
      g.p[i] = scalar<int64_t>(args, first + 6 + i);
      g.dil[i] = dilated ? scalar<int64_t>(args, first + 9 + i) : 1;
    }
    return g;
  }

  /// Average pooling's window of output o along dimension dim of `size`
  /// inputs.
  AvgWindow avg(int dim, int64_t o, int64_t size) const {
    return avgWindow(o, s[dim], p[dim], k[dim], size);
  }
};

/// Max of the window [begin, end) step dilation per dimension of plane
/// (n, c) into out/indices (n, c, od, oy, ox); the index starts at the
/// window's first element (kept when every value is -inf).
template <typename T>
void windowMax3d(const MemRef<T, 5>& in, const MemRef<T, 5>& out,
                 const MemRef<int64_t, 5>& indices, const int64_t (&o)[5],
                 const int64_t (&begin)[3], const int64_t (&end)[3], const int64_t (&step)[3]) {
  using C = compute_t<T>;
  const int64_t h = in.sizes[3], w = in.sizes[4];
  C best = lowestValue<C>();
  int64_t best_index = (begin[0] * h + begin[1]) * w + begin[2];
  for (int64_t d = begin[0]; d < end[0]; d += step[0])
    for (int64_t y = begin[1]; y < end[1]; y += step[1])
      for (int64_t x = begin[2]; x < end[2]; x += step[2]) {
        const C v = load(at5(in, o[0], o[1], d, y, x));
        if (replacesMax(v, best)) {
          best = v;
          best_index = (d * h + y) * w + x;
        }
      }
  at5(out, o[0], o[1], o[2], o[3], o[4]) = store<T>(best);
  at5(indices, o[0], o[1], o[2], o[3], o[4]) = best_index;
}

// args: out, indices (i64), in (all 5-D), kernel, stride, padding, dilation
// (3 each). The window of output o along a dimension starts at o * stride -
// pad, reaches (kernel - 1) * dilation + 1 and skips the padding by whole
// dilation steps, as the CPU's.
template <typename T>
void maxPool3d(void* const* args, const maia_grid_t* grid) {
  const auto& out = memref<T, 5>(args, 0);
  const auto& indices = memref<int64_t, 5>(args, 1);
  const auto& in = memref<T, 5>(args, 2);
  const Pool3dGeometry g = Pool3dGeometry::from(args, 3, /*dilated=*/true);
  auto window = [&](int dim, int64_t o, int64_t size, int64_t& begin, int64_t& end) {
    begin = o * g.s[dim] - g.p[dim];
    end = std::min(begin + (g.k[dim] - 1) * g.dil[dim] + 1, size);
    while (begin < 0) begin += g.dil[dim];
  };
  auto slice = maia_kernel::programSlice(grid, rowCount3d(out));
  for (int64_t row = slice.begin; row < slice.end; ++row) {
    const auto [n, c, od, oy] = row3d(out, row);
    int64_t begin[3], end[3];
    window(0, od, in.sizes[2], begin[0], end[0]);
    window(1, oy, in.sizes[3], begin[1], end[1]);
    for (int64_t ox = 0; ox < out.sizes[4]; ++ox) {
      window(2, ox, in.sizes[4], begin[2], end[2]);
      windowMax3d(in, out, indices, {n, c, od, oy, ox}, begin, end, g.dil);
    }
  }
}

// args: out, indices (i64), in (all 5-D): adaptive windows per dimension.
template <typename T>
void adaptiveMaxPool3d(void* const* args, const maia_grid_t* grid) {
  const auto& out = memref<T, 5>(args, 0);
  const auto& indices = memref<int64_t, 5>(args, 1);
  const auto& in = memref<T, 5>(args, 2);
  const int64_t unit[3] = {1, 1, 1};
  auto slice = maia_kernel::programSlice(grid, rowCount3d(out));
  for (int64_t row = slice.begin; row < slice.end; ++row) {
    const auto [n, c, od, oy] = row3d(out, row);
    int64_t begin[3], end[3];
    const int64_t o[3] = {od, oy, 0};
    for (int dim = 0; dim < 2; ++dim) {
      begin[dim] = adaptiveStart(o[dim], out.sizes[2 + dim], in.sizes[2 + dim]);
      end[dim] = adaptiveEnd(o[dim], out.sizes[2 + dim], in.sizes[2 + dim]);
    }
    for (int64_t ox = 0; ox < out.sizes[4]; ++ox) {
      begin[2] = adaptiveStart(ox, out.sizes[4], in.sizes[4]);
      end[2] = adaptiveEnd(ox, out.sizes[4], in.sizes[4]);
      windowMax3d(in, out, indices, {n, c, od, oy, ox}, begin, end, unit);
    }
  }
}

/// The divisor of one 3-D average-pooling output.
inline int64_t avgDivisor3d(const AvgWindow (&w)[3], bool count_include_pad,
                            int64_t divisor_override) {
  if (divisor_override != 0) return divisor_override;
  if (count_include_pad) return w[0].padded * w[1].padded * w[2].padded;
  return (w[0].end - w[0].begin) * (w[1].end - w[1].begin) * (w[2].end - w[2].begin);
}

// args: out, in (5-D), kernel, stride, padding (3 each), count_include_pad,
// divisor_override (0: none). A window of padding only gives 0.
template <typename T>
void avgPool3d(void* const* args, const maia_grid_t* grid) {
  using C = compute_t<T>;
  const auto& out = memref<T, 5>(args, 0);
  const auto& in = memref<T, 5>(args, 1);
  const Pool3dGeometry g = Pool3dGeometry::from(args, 2, /*dilated=*/false);
  const bool count_include_pad = scalar<int64_t>(args, 11) != 0;
  const int64_t divisor_override = scalar<int64_t>(args, 12);
  auto slice = maia_kernel::programSlice(grid, rowCount3d(out));
  for (int64_t row = slice.begin; row < slice.end; ++row) {
    const auto [n, c, od, oy] = row3d(out, row);
    AvgWindow w[3] = {g.avg(0, od, in.sizes[2]), g.avg(1, oy, in.sizes[3]), {}};
    for (int64_t ox = 0; ox < out.sizes[4]; ++ox) {
      w[2] = g.avg(2, ox, in.sizes[4]);
      T& dst = at5(out, n, c, od, oy, ox);
      if (w[0].begin >= w[0].end || w[1].begin >= w[1].end || w[2].begin >= w[2].end) {
        dst = store<T>(0);  // only padding
        continue;
      }
      C sum = 0;
      for (int64_t d = w[0].begin; d < w[0].end; ++d)
        for (int64_t y = w[1].begin; y < w[1].end; ++y)
          for (int64_t x = w[2].begin; x < w[2].end; ++x) sum += load(at5(in, n, c, d, y, x));
      dst = store<T>(sum / static_cast<C>(avgDivisor3d(w, count_include_pad, divisor_override)));
    }
  }
}

// args: grad_input, grad_output (5-D), then avgPool3d's scalars. Each
// grad_input element sums grad_output / divisor over the windows covering
// it.
template <typename T>
void avgPool3dBackward(void* const* args, const maia_grid_t* grid) {
  using C = compute_t<T>;
  const auto& gi = memref<T, 5>(args, 0);
  const auto& go = memref<T, 5>(args, 1);
  const Pool3dGeometry g = Pool3dGeometry::from(args, 2, /*dilated=*/false);
  const bool count_include_pad = scalar<int64_t>(args, 11) != 0;
  const int64_t divisor_override = scalar<int64_t>(args, 12);
  auto slice = maia_kernel::programSlice(grid, rowCount3d(gi));
  for (int64_t row = slice.begin; row < slice.end; ++row) {
    const auto [n, c, d, y] = row3d(gi, row);
    const auto ods = coveringOutputs(d, g.s[0], g.p[0], g.k[0], go.sizes[2]);
    const auto oys = coveringOutputs(y, g.s[1], g.p[1], g.k[1], go.sizes[3]);
    for (int64_t x = 0; x < gi.sizes[4]; ++x) {
      const auto oxs = coveringOutputs(x, g.s[2], g.p[2], g.k[2], go.sizes[4]);
      C acc = 0;
      for (int64_t od = ods.begin; od < ods.end; ++od)
        for (int64_t oy = oys.begin; oy < oys.end; ++oy)
          for (int64_t ox = oxs.begin; ox < oxs.end; ++ox) {
            const AvgWindow w[3] = {g.avg(0, od, gi.sizes[2]), g.avg(1, oy, gi.sizes[3]),
                                    g.avg(2, ox, gi.sizes[4])};
            const int64_t divisor = avgDivisor3d(w, count_include_pad, divisor_override);
            acc += load(at5(go, n, c, od, oy, ox)) / static_cast<C>(divisor);
          }
      at5(gi, n, c, d, y, x) = store<T>(acc);
    }
  }
}

// args: out, in (5-D). The mean divides by the window's depth, height, then
// width (the CPU's rounding).
template <typename T>
void adaptiveAvgPool3d(void* const* args, const maia_grid_t* grid) {
  using C = compute_t<T>;
  const auto& out = memref<T, 5>(args, 0);
  const auto& in = memref<T, 5>(args, 1);
  auto slice = maia_kernel::programSlice(grid, rowCount3d(out));
  for (int64_t row = slice.begin; row < slice.end; ++row) {
    const auto [n, c, od, oy] = row3d(out, row);
    const int64_t d0 = adaptiveStart(od, out.sizes[2], in.sizes[2]);
    const int64_t d1 = adaptiveEnd(od, out.sizes[2], in.sizes[2]);
    const int64_t y0 = adaptiveStart(oy, out.sizes[3], in.sizes[3]);
    const int64_t y1 = adaptiveEnd(oy, out.sizes[3], in.sizes[3]);
    for (int64_t ox = 0; ox < out.sizes[4]; ++ox) {
      const int64_t x0 = adaptiveStart(ox, out.sizes[4], in.sizes[4]);
      const int64_t x1 = adaptiveEnd(ox, out.sizes[4], in.sizes[4]);
      C sum = 0;
      for (int64_t d = d0; d < d1; ++d)
        for (int64_t y = y0; y < y1; ++y)
          for (int64_t x = x0; x < x1; ++x) sum += load(at5(in, n, c, d, y, x));
      at5(out, n, c, od, oy, ox) = store<T>(sum / static_cast<C>(d1 - d0) /
                                            static_cast<C>(y1 - y0) / static_cast<C>(x1 - x0));
    }
  }
}

// args: grad_input, grad_output (5-D): the outputs covering input position
// i are adaptive windows read the other way, as in pooling.h.
template <typename T>
void adaptiveAvgPool3dBackward(void* const* args, const maia_grid_t* grid) {
  using C = compute_t<T>;
  const auto& gi = memref<T, 5>(args, 0);
  const auto& go = memref<T, 5>(args, 1);
  const int64_t id = gi.sizes[2], ih = gi.sizes[3], iw = gi.sizes[4];
  const int64_t od = go.sizes[2], oh = go.sizes[3], ow = go.sizes[4];
  auto extent = [](int64_t o, int64_t outputs, int64_t inputs) {
    return static_cast<C>(adaptiveEnd(o, outputs, inputs) - adaptiveStart(o, outputs, inputs));
  };
  auto slice = maia_kernel::programSlice(grid, rowCount3d(gi));
  for (int64_t row = slice.begin; row < slice.end; ++row) {
    const auto [n, c, d, y] = row3d(gi, row);
    const int64_t od0 = adaptiveStart(d, id, od), od1 = adaptiveEnd(d, id, od);
    const int64_t oy0 = adaptiveStart(y, ih, oh), oy1 = adaptiveEnd(y, ih, oh);
    for (int64_t x = 0; x < iw; ++x) {
      const int64_t ox0 = adaptiveStart(x, iw, ow), ox1 = adaptiveEnd(x, iw, ow);
      C acc = 0;
      for (int64_t a = od0; a < od1; ++a)
        for (int64_t b = oy0; b < oy1; ++b)
          for (int64_t e = ox0; e < ox1; ++e)
            acc += load(at5(go, n, c, a, b, e)) / extent(a, od, id) / extent(b, oh, ih) /
                   extent(e, ow, iw);
      at5(gi, n, c, d, y, x) = store<T>(acc);
    }
  }
}

}  // namespace maia_nn
