// The convolution micro-kernel of libmaia_ukernels_{v4,v3}.a: one block of
// an implicit-GEMM 2-D convolution, for the convolution template kernels of
// maia_inductor (conv_template.py), which keep the grid, the loop over
// blocks and the fused epilogue (BatchNorm affine, activation, residual) in
// MLIR. The code is the eager convolution's (runtime/kernels/gemm/conv.h,
// included read-only), so compiled and eager convolutions agree bit for bit.
//
// The convolution as a GEMM: rows are the output pixels p = (n, y, x) in
// that order, columns the output channels o, the reduction k = (c, i, j), or
// (i, j, c) when channels_inner. One call computes
//
//   out[p, o] = sum_k A[p, k] * W[k, o]   for row0 <= p < row0 + rows,
//                                             col0 <= o < col0 + cols
//
// A gathered from the input (element (n, c, y, x) at in_offset + n * in_sn +
// c * in_sc + y * in_sh + x * in_sw), W element (k, o) at w_offset + k *
// w_rs + o * w_cs, out element (n, o, y, x) at out_offset + n * out_sn + ...
// Out is overwritten, never read; no bias (the template adds it in the
// epilogue).
//
// ABI: what MLIR's func-to-LLVM lowering passes for
//   func.func private @maia_ukernel_conv2d_f32(
//       memref<?xf32>, index x 9,   // input; offset, sn, sc, sh, sw, n, c, h, w
//       memref<?xf32>, index x 3,   // weight [K, O]; offset, rs, cs
//       memref<?xf32>, index x 5,   // out; offset, sn, sc, sh, sw
//       index x 11,                 // o, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow
//       index x 5)                  // channels_inner, row0, rows, col0, cols
// a memref<?xT> being expanded to (allocated, aligned, offset, size, stride).
// Input offsets must fit in int32 (the template checks at compile time).
#include <cstdint>

// GCC 12 flags the deliberately undefined pass-through operands of the
// AVX-512 unpack intrinsics (transpose16x16 of pack.h) as maybe
// uninitialized: a false positive, GCC bug 105593.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "conv.h"

namespace {

struct FlatMemref {  // the expanded descriptor of a memref<?xf32>
  const float* allocated;
  float* aligned;
  int64_t offset, size, stride;
};

}  // namespace

extern "C" __attribute__((visibility("hidden"))) void maia_ukernel_conv2d_f32(
    const float* in_al, float* in_ptr, int64_t in_off, int64_t in_size, int64_t in_stride,
    int64_t in_offset, int64_t in_sn, int64_t in_sc, int64_t in_sh, int64_t in_sw, int64_t n,
    int64_t c, int64_t h, int64_t w, const float* w_al, float* w_ptr, int64_t w_off,
    int64_t w_size, int64_t w_stride, int64_t w_offset, int64_t w_rs, int64_t w_cs,
    const float* out_al, float* out_ptr, int64_t out_off, int64_t out_size, int64_t out_stride,
    int64_t out_offset, int64_t out_sn, int64_t out_sc, int64_t out_sh, int64_t out_sw,
    int64_t o, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw,
    int64_t dh, int64_t dw, int64_t oh, int64_t ow, int64_t channels_inner, int64_t row0,
    int64_t rows, int64_t col0, int64_t cols) {
  (void)in_al, (void)in_size, (void)in_stride, (void)w_al, (void)w_size, (void)w_stride;
  (void)out_al, (void)out_size, (void)out_stride;
  if (rows <= 0 || cols <= 0) return;
  maia_conv::Geometry g;
  g.n = n, g.c = c, g.h = h, g.w = w, g.o = o, g.kh = kh, g.kw = kw;
  g.sh = sh, g.sw = sw, g.ph = ph, g.pw = pw, g.dh = dh, g.dw = dw, g.oh = oh, g.ow = ow;
  g.in_sn = in_sn, g.in_sc = in_sc, g.in_sh = in_sh, g.in_sw = in_sw;
  g.channels_inner = channels_inner != 0;
  const maia_conv::Output out{out_ptr + out_off + out_offset, out_sn, out_sc, out_sh, out_sw,
                              nullptr, 0};
  const maia_gemm::View<float> weight{w_ptr + w_off + w_offset, w_rs, w_cs};
  maia_conv::convolve(in_ptr + in_off + in_offset, g, weight, out, row0, row0 + rows, col0,
                      col0 + cols, maia_gemm::threadScratch());
}
