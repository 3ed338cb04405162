// maia_conv_grid: the launch grid for conv2d_f32 of
// maia_conv_kernels_{v4,v3}.maiabin (host side: plain C++, no driver calls).
//
// grid[0] splits the output pixels, grid[1] the output channels (see
// conv_kernels.cpp); any grid >= 1 is correct. One program per core, as
// for the GEMM (gemm_launch.h): each program packs the weight block it
// needs, so splitting along the output channels divides that packing,
// splitting along the pixels repeats it per program.
#pragma once

#include <cstdint>

/// Writes into grid the launch grid of a convolution with `pixels` output
/// pixels (N * OH * OW), `channels` output channels and a reduction of
/// length K (C * KH * KW) on `cores` device cores.
inline void maia_conv_grid(int64_t pixels, int64_t channels, int64_t K, int cores,
                           int64_t grid[2]) {
  grid[0] = 1;
  grid[1] = 1;
  if (cores <= 1 || pixels * channels * (K < 1 ? 1 : K) < 64 * 64 * 64) return;
  // Split the longer side in micro-tiles (14 pixels x 32 channels with
  // AVX-512): the shorter one is then the one each program sees whole.
  if ((pixels + 13) / 14 >= (channels + 31) / 32)
    grid[0] = cores;
  else
    grid[1] = cores;
}
