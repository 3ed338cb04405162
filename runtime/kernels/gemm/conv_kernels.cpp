// maia_conv_kernels_{v4,v3}.maiabin: the implicit-GEMM 2-D convolution.
//
//   conv2d_f32(out, input, weight, bias, kh, kw, sh, sw, ph, pw, dh, dw,
//              channels_inner, has_bias)
//
// out [N, O, OH, OW] and input [N, C, H, W]: memref<?x?x?x?xf32>, any strides
// (NCHW and channels-last alike). weight: the [K, O] reduction x output
// channel matrix, memref<?x?xf32>, K = C * kh * kw ordered (i, j, c) when
// channels_inner, else (c, i, j). bias: memref<?xf32> of O elements, read
// only when has_bias. out = conv(input, weight) + bias, written (never
// read before the first reduction block). Input offsets must fit in int32
// (the host checks). Shapes that do not agree trap.
//
// Grid: grid[0] splits the output pixels (N * OH * OW, in whole kMR
// micro-tiles), grid[1] the output channels (in kNR tiles); any grid >= 1
// is correct. Launch with maia_conv_grid() from conv_launch.h.
//
// Built like the GEMM binaries, from the GEMM's packing and microkernel:
// _v4 (AVX-512) and _v3 (AVX2); a loader tries _v4 first.
#include <maia/kernel_abi.h>

// GCC 12 flags the deliberately undefined pass-through operands of the
// AVX-512 unpack intrinsics (transpose16x16 of pack.h, inlined here) as
// maybe uninitialized: a false positive, GCC bug 105593.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <cstdint>

#include "conv.h"
#include "program_split.h"

namespace maia_conv {
namespace {

using maia_gemm::Range;
using maia_gemm::split;

void conv2dProgram(void* const* args, const maia_grid_t* grid) {
  using maia_kernel::memref;
  using maia_kernel::scalar;
  const auto& out = memref<float, 4>(args, 0);
  const auto& in = memref<float, 4>(args, 1);
  const auto& weight = memref<float, 2>(args, 2);
  const auto& bias = memref<float, 1>(args, 3);
  Geometry g;
  g.n = in.sizes[0];
  g.c = in.sizes[1];
  g.h = in.sizes[2];
  g.w = in.sizes[3];
  g.o = out.sizes[1];
  int64_t* fields[] = {&g.kh, &g.kw, &g.sh, &g.sw, &g.ph, &g.pw, &g.dh, &g.dw};
  for (int i = 0; i < 8; ++i) *fields[i] = scalar<int64_t>(args, 4 + i);
  g.channels_inner = scalar<int64_t>(args, 12) != 0;
  const bool has_bias = scalar<int64_t>(args, 13) != 0;
  g.oh = out.sizes[2];
  g.ow = out.sizes[3];
  g.in_sn = in.strides[0];
  g.in_sc = in.strides[1];
  g.in_sh = in.strides[2];
  g.in_sw = in.strides[3];
  if (out.sizes[0] != g.n || weight.sizes[0] != g.reduction() || weight.sizes[1] != g.o ||
      (has_bias && bias.sizes[0] != g.o))
    __builtin_trap();
  if (g.pixels() == 0 || g.o == 0) return;

  const Output o{out.aligned + out.offset, out.strides[0], out.strides[1], out.strides[2],
                 out.strides[3], has_bias ? bias.aligned + bias.offset : nullptr,
                 bias.strides[0]};
  const Range pixels = split(g.pixels(), kMR, grid->num_programs[0], grid->program_id[0]);
  const Range channels = split(g.o, kNR, grid->num_programs[1], grid->program_id[1]);
  if (pixels.begin == pixels.end || channels.begin == channels.end) return;
  if (g.reduction() == 0) {
    // An empty reduction (no input channels): out = bias.
    for (int64_t m = pixels.begin; m < pixels.end; ++m)
      for (int64_t c = channels.begin; c < channels.end; ++c) {
        const int64_t plane = g.oh * g.ow;
        o.data[m / plane * o.sn + c * o.sc + m % plane / g.ow * o.sh + m % g.ow * o.sw] =
            o.bias ? o.bias[c * o.bias_stride] : 0.0f;
      }
    return;
  }
  convolve(in.aligned + in.offset, g,
           maia_gemm::View<float>{weight.aligned + weight.offset, weight.strides[0],
                                  weight.strides[1]},
           o, pixels.begin, pixels.end, channels.begin, channels.end, maia_gemm::threadScratch());
}

}  // namespace
}  // namespace maia_conv

MAIA_KERNEL conv2d_f32(void* const* args, const maia_grid_t* grid) {
  maia_conv::conv2dProgram(args, grid);
}
