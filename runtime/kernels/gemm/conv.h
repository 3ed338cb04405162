// Implicit-GEMM 2-D convolution on one core: out[pixel, o] = bias[o] +
// sum_k A[pixel, k] * B[k, o], with the pixels (n, y, x) of the output as
// the GEMM's rows, the output channels as its columns and (channel, tap) as
// the reduction. The Goto/BLIS loops of blocked.h, except that A blocks are
// gathered from the image (conv_pack.h) and the stores add the bias and
// scatter into the output's layout (channels-last rows, or NCHW columns).
//
//   for jc in O by kNC:              B panel (the weight) packed once per
//     for pc in K by kc:             (jc, pc) block and program
//       for ic in pixels by kMC:     A block gathered from the image, L2
//         for jr, ir:                microKernel into a register-tile
//                                    buffer, then merged into out
#pragma once

#include <algorithm>
#include <cstdint>

#include "blocked.h"
#include "conv_pack.h"
#include "microkernel.h"
#include "pack.h"
#include "scratch.h"

namespace maia_conv {

using maia_gemm::reductionBlock;
using maia_gemm::kMC;
using maia_gemm::kNC;
using maia_gemm::roundUp;

/// The output side: element (n, o, y, x) at n * sn + o * sc + y * sh + x * sw.
struct Output {
  float* data;
  int64_t sn, sc, sh, sw;
  const float* bias;  // [O] with stride bias_stride, or null
  int64_t bias_stride;
};

/// out tile = tile (rows x cols of a kMR x kNR buffer) + (first ? bias :
/// out) for the pixels at out.data + pixel_offset[p] and output channels
/// from o0.
inline void mergeTile(const float* tile, const Output& out, const int64_t* pixel_offset,
                      int64_t rows, int64_t o0, int64_t cols, bool first) {
  float bias[kNR];
  for (int64_t j = 0; j < cols; ++j) bias[j] = out.bias ? out.bias[(o0 + j) * out.bias_stride] : 0;
  int64_t offset[kMR];
  for (int64_t p = 0; p < rows; ++p) offset[p] = pixel_offset[p] + o0 * out.sc;
#if defined(__AVX512F__)
  const __mmask16 lo = static_cast<__mmask16>(cols >= 16 ? 0xffff : (1u << cols) - 1);
  const __mmask16 hi = static_cast<__mmask16>(cols >= 32 ? 0xffff : cols > 16 ? (1u << (cols - 16)) - 1 : 0);
  if (out.sc == 1) {
    // Channels-last: a row of the tile is contiguous in out.
    const __m512 b0 = _mm512_maskz_loadu_ps(lo, bias), b1 = _mm512_maskz_loadu_ps(hi, bias + 16);
    for (int64_t p = 0; p < rows; ++p) {
      float* dst = out.data + offset[p];
      __m512 v0 = _mm512_load_ps(tile + p * kNR), v1 = _mm512_load_ps(tile + p * kNR + 16);
      v0 = _mm512_add_ps(v0, first ? b0 : _mm512_maskz_loadu_ps(lo, dst));
      v1 = _mm512_add_ps(v1, first ? b1 : _mm512_maskz_loadu_ps(hi, dst + 16));
      _mm512_mask_storeu_ps(dst, lo, v0);
      _mm512_mask_storeu_ps(dst + 16, hi, v1);
    }
    return;
  }
  if (out.sw == 1 && rows == kMR && offset[kMR - 1] - offset[0] == kMR - 1) {
    // NCHW, the pixels adjacent in one image: a column of the tile is
    // contiguous in out. Transpose the tile, then merge by columns.
    alignas(64) float columns[kNR * 16];
    maia_gemm::transpose16x16(tile, kNR, columns, 16, kMR, 16);
    maia_gemm::transpose16x16(tile + 16, kNR, columns + 16 * 16, 16, kMR, 16);
    const __mmask16 row_mask = static_cast<__mmask16>((1u << kMR) - 1);
    for (int64_t j = 0; j < cols; ++j) {
      float* dst = out.data + offset[0] + j * out.sc;
      __m512 v = _mm512_load_ps(columns + j * 16);
      v = _mm512_add_ps(v, first ? _mm512_set1_ps(bias[j]) : _mm512_maskz_loadu_ps(row_mask, dst));
      _mm512_mask_storeu_ps(dst, row_mask, v);
    }
    return;
  }
#endif
  for (int64_t p = 0; p < rows; ++p)
    for (int64_t j = 0; j < cols; ++j) {
      float& dst = out.data[offset[p] + j * out.sc];
      dst = tile[p * kNR + j] + (first ? bias[j] : dst);
    }
}

/// Pixels [m_begin, m_end) x output channels [o_begin, o_end) of the
/// convolution. weight is B: [K, O] with strides (rs, cs), K ordered as
/// g.channels_inner says.
inline void convolve(const float* in, const Geometry& g, maia_gemm::View<float> weight,
                     const Output& out, int64_t m_begin, int64_t m_end, int64_t o_begin,
                     int64_t o_end, maia_gemm::Scratch& s) {
  const int64_t k_total = g.reduction(), kc_max = reductionBlock(k_total);
  const int64_t nc_max = std::min(kNC, roundUp(o_end - o_begin, kNR));
  const int64_t mc_max = std::min(kMC, roundUp(m_end - m_begin, kMR));
  float* bp = s.b.get(kc_max * nc_max);
  float* ap = s.a.get(mc_max * kc_max);
  alignas(64) float tile[kMR * kNR];
  for (int64_t jc = o_begin; jc < o_end; jc += kNC) {
    const int64_t nc = std::min(kNC, o_end - jc);
    for (int64_t pc = 0; pc < k_total; pc += kc_max) {
      const int64_t kc = std::min(kc_max, k_total - pc);
      maia_gemm::packB(maia_gemm::View<float>{&weight.at(pc, jc), weight.rs, weight.cs}, kc, nc,
                       bp);
      for (int64_t ic = m_begin; ic < m_end; ic += kMC) {
        const int64_t mc = std::min(kMC, m_end - ic);
        const BlockPixels block(g, ic, mc);
        int64_t pixel_offset[kMC];
        for (int64_t p = 0; p < mc; ++p)
          pixel_offset[p] = block.n[p] * out.sn + block.y[p] * out.sh + block.x[p] * out.sw;
        packImageBlock(in, g, block, pc, kc, ap);
        for (int64_t j0 = 0; j0 < nc; j0 += kNR) {
          const int64_t cols = std::min<int64_t>(kNR, nc - j0);
          for (int64_t i0 = 0; i0 < mc; i0 += kMR) {
            const int64_t rows = std::min<int64_t>(kMR, mc - i0);
            maia_gemm::microKernel(kc, ap + i0 * kc, bp + j0 * kc, kNR, tile, kNR, 1.0f, 0.0f);
            mergeTile(tile, out, pixel_offset + i0, rows, jc + j0, cols, pc == 0);
          }
        }
      }
    }
  }
}

}  // namespace maia_conv
