// maia_gemm_grid: the launch grid for the gemm_{f32,bf16,f16} kernels of
// maia_gemm_kernels_{v4,v3}.maiabin (host side: plain C++, no driver calls).
//
// Grid mapping (what the kernels expect, see gemm_kernels.cpp):
//   grid[0] = row blocks of C, grid[1] = column blocks of C, grid[2] = batch
//   slices. Program (i, j, b) computes the i-th of grid[0] near-equal row
//   ranges (whole micro-tiles) x the j-th of grid[1] column ranges, for the
//   b-th of grid[2] contiguous batch slices. Any grid >= 1 in each dimension
//   is correct; this helper picks a fast one.
//
// The driver hands each core one contiguous block of linear program ids
// (i fastest, then j, then b) and one block per core is all it does, so the
// grid should have a multiple of `cores` programs of equal work, as few as
// possible: each program packs its own panels of A and B, and a smaller
// tile repacks the other operand more often.
#pragma once

#include <cstdint>

/// Writes into grid the launch grid for a [batch x] M x N x K GEMM on
/// `cores` device cores (maiaDeviceProp::core_count). M, N, batch >= 1.
inline void maia_gemm_grid(int64_t M, int64_t N, int64_t K, int64_t batch, int cores,
                           int64_t grid[3]) {
  grid[0] = 1;
  grid[1] = 1;
  grid[2] = batch < 1 ? 1 : batch;
  if (cores <= 1) {
    grid[2] = 1;  // one program: every matrix on the one core, sharing packed A
    return;
  }
  // Tiny problems (a few us of FMAs): handing work to a second core costs
  // more (~1 us) than it saves. K counts: a linear layer at batch 1 is
  // 1 x N, yet reads an N x K weight.
  if (M * N * (K < 1 ? 1 : K) * grid[2] < 64 * 64 * 64) return;
  // Enough whole matrices to balance the cores: split the batch only, one
  // program per core (a program with several matrices sharing A, such as
  // a convolution's images, packs each block of A once for all of them).
  if (grid[2] % cores == 0 || grid[2] >= 8 * cores) {
    grid[2] = cores;
    return;
  }
  // Otherwise split every matrix into `cores` blocks along its longer side
  // (counted in micro-tiles: 14 rows x 32 columns with AVX-512), so batch *
  // cores programs of equal work.
  if ((M + 13) / 14 >= (N + 31) / 32)
    grid[0] = cores;
  else
    grid[1] = cores;
}
