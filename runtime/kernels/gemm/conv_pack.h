// Implicit-GEMM convolution, the A side: packs micro-panels of kMR output
// pixels x a block of the reduction (input channel x kernel tap) straight
// from the input image, in the layout microKernel streams
// (panel[k * kMR + pixel]), zero where a tap falls into the padding. This is
// im2col restricted to one L2-sized block: the column matrix is never
// written to memory.
//
// The reduction index k runs over (c, i, j) or (i, j, c), whichever keeps
// the image's fastest dimension innermost: with channels innermost
// (channels-last input) a tap's kMR pixels are kMR contiguous runs of C
// values, packed by in-register transposes; with columns innermost (NCHW)
// one k is kMR pixels of one row, a single masked load when they are
// adjacent. Anything else (strides, padding, pixels straddling an output row
// or image) gathers.
#pragma once

#include <algorithm>
#include <cstdint>

#include "blocked.h"
#include "microkernel.h"
#include "pack.h"

namespace maia_conv {

using maia_gemm::kMR;
using maia_gemm::kNR;

/// The convolution as the kernel sees it. Strides in elements; the input
/// is [N, C, H, W] with any strides (channels-last included), the output
/// [N, O, OH, OW] likewise.
struct Geometry {
  int64_t n, c, h, w;            // input
  int64_t o, kh, kw;             // output channels, kernel
  int64_t sh, sw, ph, pw, dh, dw;
  int64_t oh, ow;                // output
  int64_t in_sn, in_sc, in_sh, in_sw;
  bool channels_inner;           // k = (i, j, c); else k = (c, i, j)

  int64_t taps() const { return kh * kw; }
  int64_t reduction() const { return c * taps(); }
  int64_t pixels() const { return n * oh * ow; }
};

/// Where the kMR pixels of one A panel read the input for one kernel tap:
/// element offsets from the input's start (for channel 0), and which are
/// inside the image. `step` is the common distance between consecutive
/// offsets when all kMR are inside and evenly spaced, else 0. `pitch` is
/// that distance for pixels of one output row even when some fall into the
/// padding: their offsets are first + p * pitch, and offset[] is left unset
/// (most packings never need it); else 0 and offset[] holds them (read only
/// where inside).
struct TapSources {
  alignas(64) int32_t offset[16];
  uint32_t inside;  // bit p: pixel p reads the image
  int64_t first, step, pitch;

  int64_t offsetOf(int p) const { return pitch != 0 ? first + p * pitch : offset[p]; }
  /// Fills offset[] when pitch left it unset.
  void spellOutOffsets() {
    if (pitch != 0)
      for (int p = 0; p < 16; ++p) offset[p] = static_cast<int32_t>(first + p * pitch);
  }
};

/// The output coordinates of the pixels [m0, m0 + count) of the flattened
/// (n, y, x) output, count <= kMC: one division for the block, then steps
/// (divisions per pixel cost as much as packing a small tap).
struct BlockPixels {
  int64_t count;
  int32_t n[maia_gemm::kMC], y[maia_gemm::kMC], x[maia_gemm::kMC];

  BlockPixels(const Geometry& g, int64_t m0, int64_t count_) : count(count_) {
    const int64_t plane = g.oh * g.ow;
    int64_t ni = m0 / plane, yi = m0 % plane / g.ow, xi = m0 % g.ow;
    for (int64_t p = 0; p < count; ++p) {
      n[p] = static_cast<int32_t>(ni);
      y[p] = static_cast<int32_t>(yi);
      x[p] = static_cast<int32_t>(xi);
      if (++xi == g.ow) {
        xi = 0;
        if (++yi == g.oh) yi = 0, ++ni;
      }
    }
  }
};

/// The input positions of kMR (or fewer) pixels of a block: their top-left
/// tap.
struct PanelPixels {
  int64_t rows;
  int64_t n[kMR], iy[kMR], ix[kMR];
  bool one_row;  // all in one output row of one image: ix[p] = ix[0] + p * sw

  PanelPixels(const Geometry& g, const BlockPixels& block, int64_t p0, int64_t rows_)
      : rows(rows_) {
    for (int64_t p = 0; p < rows; ++p) {
      n[p] = block.n[p0 + p];
      iy[p] = block.y[p0 + p] * g.sh - g.ph;
      ix[p] = block.x[p0 + p] * g.sw - g.pw;
    }
    one_row = n[0] == n[rows - 1] && iy[0] == iy[rows - 1];
  }

  TapSources tap(const Geometry& g, int64_t i, int64_t j) const {
    return one_row ? rowTap(g, i, j) : anyTap(g, i, j);
  }

 private:
  // The panel's pixels are one run of a row: which are inside is a range,
  // found by two divisions instead of a test per pixel (a panel computes
  // this per tap and reduction block).
  TapSources rowTap(const Geometry& g, int64_t i, int64_t j) const {
    TapSources t;
    const int64_t y = iy[0] + i * g.dh, x0 = ix[0] + j * g.dw;
    const int64_t pitch = g.sw * g.in_sw;
    t.first = n[0] * g.in_sn + y * g.in_sh + x0 * g.in_sw;
    t.inside = 0;
    t.step = 0;
    t.pitch = pitch;
    if (pitch == 0)  // a broadcast (stride-0) width: offset[] is the record
      for (int p = 0; p < 16; ++p) t.offset[p] = static_cast<int32_t>(t.first);
    if (y < 0 || y >= g.h || x0 + (rows - 1) * g.sw < 0 || x0 >= g.w) return t;
    if (rows == kMR && x0 >= 0 && x0 + (kMR - 1) * g.sw < g.w) {
      t.inside = (1u << kMR) - 1;
      t.step = pitch;
      return t;
    }
    const int64_t lo = x0 >= 0 ? 0 : (-x0 + g.sw - 1) / g.sw;
    const int64_t hi = std::min(rows, (g.w - 1 - x0) / g.sw + 1);
    if (hi <= lo) return t;
    t.inside = static_cast<uint32_t>(((uint64_t{1} << hi) - 1) & ~((uint64_t{1} << lo) - 1));
    if (lo == 0 && hi == kMR) t.step = pitch;
    return t;
  }

  TapSources anyTap(const Geometry& g, int64_t i, int64_t j) const {
    TapSources t{};
    bool even = rows == kMR;
    for (int64_t p = 0; p < rows; ++p) {
      const int64_t y = iy[p] + i * g.dh, x = ix[p] + j * g.dw;
      if (y < 0 || y >= g.h || x < 0 || x >= g.w) {
        even = false;
        continue;
      }
      t.inside |= 1u << p;
      t.offset[p] = static_cast<int32_t>(n[p] * g.in_sn + y * g.in_sh + x * g.in_sw);
    }
    t.first = t.offset[0];
    t.step = 0;
    t.pitch = 0;
    if (even) {
      const int64_t step = t.offset[1] - t.offset[0];
      for (int64_t p = 2; p < rows && even; ++p) even = t.offset[p] - t.offset[p - 1] == step;
      if (even) t.step = step;
    }
    return t;
  }
};

#if defined(__AVX512F__)
/// panel[c * kMR + p] = rows[p][c] for c < channels (<= 16) and p < kMR,
/// 0 where bit p of inside is clear (that row is not read): 16 x 16
/// in-register transposes (pack.h's network) over rows that each have their
/// own address, so a panel whose pixels reach the padding or straddle
/// output rows packs like any other, where a gather per channel costs
/// several times as much.
inline void transposeRows(const float* const* rows, uint32_t inside, int64_t channels,
                          float* panel) {
  const __mmask16 lanes = static_cast<__mmask16>(channels >= 16 ? 0xffff : (1u << channels) - 1);
  __m512 r[16];
  for (int i = 0; i < 16; ++i)
    r[i] = i < kMR && (inside >> i & 1u) ? _mm512_maskz_loadu_ps(lanes, rows[i])
                                         : _mm512_setzero_ps();
  maia_gemm::transposeInRegisters(r);
  const __mmask16 row_mask = static_cast<__mmask16>((1u << kMR) - 1);
  for (int c = 0; c < channels; ++c) _mm512_mask_storeu_ps(panel + c * kMR, row_mask, r[c]);
}
#endif

/// panel[k * kMR + p] = input at pixel p, channel c, for `count` channels
/// from c0 (k advancing by k_stride per channel), all from one tap.
inline void packTapChannels(const float* in, const Geometry& g, const TapSources& t, int64_t rows,
                            int64_t c0, int64_t count, float* panel, int64_t k_stride) {
  const float* base = in + c0 * g.in_sc;
#if defined(__AVX512F__)
  static_assert(kMR <= 16, "one vector per k step");
  const __mmask16 row_mask = static_cast<__mmask16>((1u << kMR) - 1);
  if (t.inside == 0) {
    // The whole panel reads the padding of this tap.
    for (int64_t c = 0; c < count; ++c)
      _mm512_mask_storeu_ps(panel + c * k_stride, row_mask, _mm512_setzero_ps());
    return;
  }
  if (t.pitch == 1) {
    // Adjacent pixels of one row (NCHW, stride 1): one masked load each,
    // the mask leaving out the padding (masked lanes are not read).
    const __mmask16 inside = static_cast<__mmask16>(t.inside);
    for (int64_t c = 0; c < count; ++c)
      _mm512_mask_storeu_ps(panel + c * k_stride, row_mask,
                            _mm512_maskz_loadu_ps(inside, base + t.first + c * g.in_sc));
    return;
  }
  if (t.pitch == 2) {
    // Every other element of one row (NCHW, stride 2): two masked loads and
    // one permute, where a gather takes several times as long. Pixel p
    // reads element 2p: the load masks are the inside bits spread out.
    const __m512i evens = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const uint32_t elements = _pdep_u32(t.inside, 0x55555555u);
    const __mmask16 lo = static_cast<__mmask16>(elements), hi = static_cast<__mmask16>(elements >> 16);
    for (int64_t c = 0; c < count; ++c) {
      const float* src = base + t.first + c * g.in_sc;
      const __m512 v = _mm512_permutex2var_ps(_mm512_maskz_loadu_ps(lo, src), evens,
                                              _mm512_maskz_loadu_ps(hi, src + 16));
      _mm512_mask_storeu_ps(panel + c * k_stride, row_mask, v);
    }
    return;
  }
  if (g.in_sc == 1 && k_stride == kMR) {
    // Channels contiguous per pixel (channels-last): transpose kMR runs of
    // up to 16 channels at a time.
    const float* sources[kMR];
    for (int p = 0; p < kMR; ++p) sources[p] = base + t.offsetOf(p);
    for (int64_t c = 0; c < count; c += 16) {
      transposeRows(sources, t.inside, std::min<int64_t>(16, count - c), panel + c * kMR);
      for (int p = 0; p < kMR; ++p) sources[p] += 16;
    }
    return;
  }
  TapSources spelled = t;
  spelled.spellOutOffsets();
  const __m512i index = _mm512_load_si512(spelled.offset);
  const __mmask16 inside = static_cast<__mmask16>(t.inside);
  for (int64_t c = 0; c < count; ++c) {
    const __m512 v = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), inside, index,
                                              base + c * g.in_sc, sizeof(float));
    _mm512_mask_storeu_ps(panel + c * k_stride, row_mask, v);
  }
#else
  for (int64_t c = 0; c < count; ++c) {
    float* dst = panel + c * k_stride;
    for (int64_t p = 0; p < kMR; ++p)
      dst[p] = p < rows && (t.inside >> p & 1u) ? base[t.offsetOf(p) + c * g.in_sc] : 0.0f;
  }
#endif
}

/// Packs the A block of pixels `block` x reduction [k0, k0 + kc) into
/// panels of kMR pixels: out[(p / kMR) * kMR * kc + (k - k0) * kMR + p % kMR].
inline void packImageBlock(const float* in, const Geometry& g, const BlockPixels& block,
                           int64_t k0, int64_t kc, float* __restrict out) {
  const int64_t taps = g.taps(), mc = block.count;
  // Channels-last pixels stored densely (C values per pixel, no gaps) with
  // an undilated kernel: the taps of one kernel row are one contiguous run
  // of kw * C values per pixel, packed as one (C = 3: 21 values where one
  // tap has 3).
  const bool row_runs = g.channels_inner && g.in_sc == 1 && g.in_sw == g.c && g.dw == 1;
  for (int64_t p0 = 0; p0 < mc; p0 += kMR) {
    const int64_t rows = mc - p0 < kMR ? mc - p0 : kMR;
    const PanelPixels pixels(g, block, p0, rows);
    float* panel = out + p0 * kc;
    if (g.channels_inner) {
      // k = tap * C + c: runs of channels of one tap. (i, j, c) of k
      // advance by steps: divisions per run showed in profiles.
      int64_t c = k0 % g.c, i = k0 / g.c / g.kw, j = k0 / g.c % g.kw;
      for (int64_t k = k0; k < k0 + kc;) {
        int64_t count = std::min(g.c - c, k0 + kc - k);
        const TapSources t = pixels.tap(g, i, j);
        if (row_runs && t.step != 0 && count < k0 + kc - k && j + 1 < g.kw) {
          const int64_t run = std::min((g.kw - j) * g.c - c, k0 + kc - k);
          const int64_t last_j = j + (c + run - 1) / g.c;
          if (pixels.tap(g, i, last_j).step != 0) count = run;
        }
        packTapChannels(in, g, t, rows, c, count, panel + (k - k0) * kMR, kMR);
        k += count;
        for (c += count; c >= g.c; c -= g.c)
          if (++j == g.kw) j = 0, ++i;
      }
    } else {
      // k = c * taps + tap: each tap's channels are taps k-steps apart.
      const int64_t c_first = k0 / taps, c_last = (k0 + kc - 1) / taps;
      for (int64_t tap = 0; tap < taps; ++tap) {
        // The channels whose k for this tap lies inside the block.
        int64_t c_begin = c_first + (c_first * taps + tap < k0 ? 1 : 0);
        int64_t c_end = c_last + 1 - ((c_last * taps + tap >= k0 + kc) ? 1 : 0);
        if (c_end <= c_begin) continue;
        const TapSources t = pixels.tap(g, tap / g.kw, tap % g.kw);
        packTapChannels(in, g, t, rows, c_begin, c_end - c_begin,
                        panel + (c_begin * taps + tap - k0) * kMR, taps * kMR);
      }
    }
  }
}

}  // namespace maia_conv
