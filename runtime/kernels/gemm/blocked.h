// The cache-blocked GEMM loops (Goto/BLIS order) around the microkernel.
//
//   for jc in N by kNC:             B panel  kKC x kNC  packed, lives in L3
//     for pc in K by kKC:
//       for ic in M by kMC:         A block  kMC x kKC  packed, lives in L2
//         for jr in nc by kNR:      B micro-panel kKC x kNR stays in L1
//           for ir in mc by kMR:    microkernel streams A micro-panels
//
// fp32 C accumulates in place across K blocks (the first applies beta, the
// rest add), as BLAS does. bf16/f16 C must be rounded once, so those
// outputs accumulate an kMC x kNC block in an fp32 buffer over all of K and
// are converted at the end (B is then repacked per A block: ~1/(2 kMC) of
// the work).
#pragma once

#include <algorithm>
#include <cstdint>

#include "edge_kernel.h"
#include "element.h"
#include "microkernel.h"
#include "pack.h"
#include "scratch.h"

namespace maia_gemm {

// Sized for Zen 5 (1 MiB L2 per core, 32 MiB shared L3). KC is 256-512:
// a shorter K block loads and stores each C tile more often per FMA; the
// speed is flat in MC and NC around these values. NC 2048 keeps the two
// cores' B panels (4 MiB each) well inside L3 next to other tenants. With
// AVX-512, KC is 512: faster than 384 on this VM's 2 MiB L2 at every size
// measured (tools/bench/RESULTS.md); K is cut into near-equal blocks of at
// most kKC (reductionBlock), so 768 is two blocks of 384, not 512 + 256.
#if defined(__AVX512F__)
constexpr int64_t kKC = 512, kMC = 10 * kMR, kNC = 2048;
#else
constexpr int64_t kKC = 256, kMC = 24 * kMR, kNC = 2048;
#endif

inline int64_t roundUp(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

/// The K block length: K split into near-equal blocks of at most kKC (a
/// last block of a few k steps would load and store every C tile for
/// little work). Every blocked loop, packing and macro-kernel uses it.
inline int64_t reductionBlock(int64_t k) {
  const int64_t blocks = (k + kKC - 1) / kKC;
  return blocks <= 1 ? k : (k + blocks - 1) / blocks;
}

/// One GEMM: C[m x n] = alpha * A[m x k] @ B[k x n] + beta * C.
template <typename T>
struct Problem {
  int64_t m, n, k;
  View<T> a, b;
  T* c;
  int64_t rsc, csc;
  float alpha, beta;
};

/// c = alpha * tile + beta * c over rows x cols of a kMR x kNR fp32 tile
/// (row stride kNR); beta == 0 does not read c.
template <typename T>
void mergeTile(const float* tile, int64_t ldt, int64_t rows, int64_t cols, T* c, int64_t rs,
               int64_t cs, float alpha, float beta) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      T& out = c[i * rs + j * cs];
      float v = alpha * tile[i * ldt + j];
      if (beta != 0.0f) v += beta * toFloat(out);
      out = fromFloat<T>(v);
    }
}

/// Where a macro-kernel reads B: packed panels (kc x kNR each, one after the
/// other), or a row-major B in place (panel j0 starts at column j0).
struct BPanels {
  const float* base;
  int64_t column_step;  // floats from panel j0 to panel j0 + kNR, per column
  int64_t ldb;          // floats from one k to the next within a panel

  static BPanels packed(const float* bp, int64_t kc) { return {bp, kc, kNR}; }
  const float* at(int64_t j0) const { return base + j0 * column_step; }
};

/// C[mc x nc] = alpha * Ap @ B + beta * C for packed A (mc rows) and B (nc
/// columns). Full tiles of a unit-column-stride C go straight from the
/// registers, and with AVX-512 so do its edge tiles (edge_kernel.h); a C
/// with unit row stride is stored by transposed blocks; any other C, and
/// AVX2 edge tiles, through a small tile.
inline void macroKernel(int64_t mc, int64_t nc, int64_t kc, const float* ap, const BPanels& b,
                        float* c, int64_t rs, int64_t cs, float alpha, float beta) {
  alignas(64) float tile[kMR * kNR];
  for (int64_t j0 = 0; j0 < nc; j0 += kNR) {
    int64_t cols = std::min<int64_t>(kNR, nc - j0);
    const float* bpanel = b.at(j0);
    for (int64_t i0 = 0; i0 < mc; i0 += kMR) {
      int64_t rows = std::min<int64_t>(kMR, mc - i0);
      const float* apanel = ap + i0 * kc;
      float* ct = c + i0 * rs + j0 * cs;
      const bool full = rows == kMR && cols == kNR;
      if (cs == 1 && full) {
        microKernel(kc, apanel, bpanel, b.ldb, ct, rs, alpha, beta);
        continue;
      }
#if defined(__AVX512F__)
      if (cs == 1) {
        edgeKernelFor(rows, cols)(kc, apanel, bpanel, b.ldb, ct, rs, cols, alpha, beta);
        continue;
      }
      if (full) {
        microKernel(kc, apanel, bpanel, b.ldb, tile, kNR, 1.0f, 0.0f);
      } else {
        edgeKernelFor(rows, cols)(kc, apanel, bpanel, b.ldb, tile, kNR, cols, 1.0f, 0.0f);
      }
#else
      microKernel(kc, apanel, bpanel, b.ldb, tile, kNR, 1.0f, 0.0f);
#endif
      if (rs == 1) {
        mergeTileTransposed(tile, rows, cols, ct, cs, alpha, beta);
      } else {
        mergeTile(tile, kNR, rows, cols, ct, rs, cs, alpha, beta);
      }
    }
  }
}

/// Whether the fp32 GEMM reads B in place instead of packing it: B is
/// row-major with whole panels, and B is reused by few row tiles (small M)
/// or the panels are short (small K), where packing costs more than it
/// saves. With long panels, only a B of at most 2 MiB (likely in cache:
/// read in place from memory, a panel's rows are a page apart and stall
/// the microkernel; 64 x 3136 x 576 over 4 images ran 1.4x faster packed,
/// alone and in cache 4% slower), and not when its rows are a multiple of
/// 4 KiB apart (a panel's rows then share one L1 set and evict each other:
/// 64 x 1024 x 1024 ran 22% faster packed).
inline bool readsBInPlace(const Problem<float>& p) {
  if (p.b.cs != 1 || p.n % kNR != 0) return false;
  if (p.k <= 64) return true;
  return p.m <= 64 && p.b.rs % 1024 != 0 && p.k * p.n <= (int64_t{2} << 20) / 4;
}

/// C = beta * C (K == 0 or alpha == 0: A and B are not read, as in BLAS).
template <typename T>
void scaleC(const Problem<T>& p) {
  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t j = 0; j < p.n; ++j) {
      T& out = p.c[i * p.rsc + j * p.csc];
      out = fromFloat<T>(p.beta == 0.0f ? 0.0f : p.beta * toFloat(out));
    }
}

/// A batch of fp32 products sharing A: C[b] = alpha * A @ B[b] + beta * C[b]
/// for b < count, B[b] and C[b] b_stride and c_stride elements after B and
/// C of p (count 1: p alone).
struct SharedABatch {
  int64_t count = 1, b_stride = 0, c_stride = 0;
};

/// How many products of a batch sharing A have their B panels packed side
/// by side, so that each A block is packed once for all of them (a
/// convolution's kernel is shared by the images of its batch; at 512 x 49
/// x 4608 packing that kernel again for every image was a fifth of the
/// time): as many as fit half of a 2 MiB L2, where the macro-kernels find
/// them (at least one).
inline int64_t imagesPerBPanel(int64_t kc_max, int64_t nc_max, int64_t count) {
  constexpr int64_t kSharedBFloats = (int64_t{1} << 20) / 4;
  return std::max<int64_t>(1, std::min(count, kSharedBFloats / (kc_max * nc_max)));
}

inline void runBlocked(const Problem<float>& p, Scratch& s, SharedABatch batch = {}) {
  const bool in_place = readsBInPlace(p);
  const int64_t nc_max = std::min(kNC, roundUp(p.n, kNR));
  const int64_t kc_max = reductionBlock(p.k);
  const int64_t mc_max = std::min(kMC, roundUp(p.m, kMR));
  const int64_t images = imagesPerBPanel(kc_max, nc_max, batch.count);
  const int64_t panel_floats = kc_max * nc_max;
  float* bp = s.b.get(images * panel_floats);
  float* ap = s.a.get(mc_max * kc_max);
  for (int64_t b0 = 0; b0 < batch.count; b0 += images) {
    const int64_t nb = std::min(images, batch.count - b0);
    auto b_of = [&](int64_t b) { return p.b.data + (b0 + b) * batch.b_stride; };
    for (int64_t jc = 0; jc < p.n; jc += kNC) {
      int64_t nc = std::min(kNC, p.n - jc);
      for (int64_t pc = 0; pc < p.k; pc += kc_max) {
        int64_t kc = std::min(kc_max, p.k - pc);
        auto panels = [&](int64_t b) {
          const View<float> bb{b_of(b), p.b.rs, p.b.cs};
          return in_place ? BPanels{&bb.at(pc, jc), 1, p.b.rs}
                          : BPanels::packed(bp + b * panel_floats, kc);
        };
        if (!in_place)
          for (int64_t b = 0; b < nb; ++b)
            packB(View<float>{&View<float>{b_of(b), p.b.rs, p.b.cs}.at(pc, jc), p.b.rs, p.b.cs},
                  kc, nc, bp + b * panel_floats);
        float beta = pc == 0 ? p.beta : 1.0f;
        for (int64_t ic = 0; ic < p.m; ic += kMC) {
          int64_t mc = std::min(kMC, p.m - ic);
          packA(View<float>{&p.a.at(ic, pc), p.a.rs, p.a.cs}, mc, kc, ap);
          for (int64_t b = 0; b < nb; ++b)
            macroKernel(mc, nc, kc, ap, panels(b),
                        p.c + (b0 + b) * batch.c_stride + ic * p.rsc + jc * p.csc, p.rsc, p.csc,
                        p.alpha, beta);
        }
      }
    }
  }
}

template <typename T>
void runBlocked(const Problem<T>& p, Scratch& s) {
  const int64_t nc_max = std::min(kNC, roundUp(p.n, kNR));
  const int64_t kc_max = reductionBlock(p.k);
  const int64_t mc_max = std::min(kMC, roundUp(p.m, kMR));
  float* bp = s.b.get(kc_max * nc_max);
  float* ap = s.a.get(mc_max * kc_max);
  float* acc = s.acc.get(mc_max * nc_max);
  for (int64_t jc = 0; jc < p.n; jc += kNC) {
    int64_t nc = std::min(kNC, p.n - jc), nc_pad = roundUp(nc, kNR);
    for (int64_t ic = 0; ic < p.m; ic += kMC) {
      int64_t mc = std::min(kMC, p.m - ic), mc_pad = roundUp(mc, kMR);
      for (int64_t pc = 0; pc < p.k; pc += kc_max) {
        int64_t kc = std::min(kc_max, p.k - pc);
        packB(View<T>{&p.b.at(pc, jc), p.b.rs, p.b.cs}, kc, nc, bp);
        packA(View<T>{&p.a.at(ic, pc), p.a.rs, p.a.cs}, mc, kc, ap);
        // Padded panels are zero, so the whole padded block is full tiles.
        macroKernel(mc_pad, nc_pad, kc, ap, BPanels::packed(bp, kc), acc, nc_pad, 1, 1.0f,
                    pc == 0 ? 0.0f : 1.0f);
      }
      mergeTile(acc, nc_pad, mc, nc, p.c + ic * p.rsc + jc * p.csc, p.rsc, p.csc, p.alpha,
                p.beta);
    }
  }
}

}  // namespace maia_gemm
