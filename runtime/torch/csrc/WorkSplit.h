// How work splits into programs, the driver's unit of parallelism (a program
// runs on one core): the one place that decides it for eager operators
// (runtime/torch/csrc/ops) and for the launch grids of compiled graphs
// (maia_inductor.runtime calls pointwiseGrid/reductionGrid through
// torch_maia._C). Matrix products tile on their own (maia_gemm_grid, in
// runtime/kernels/gemm).
//
// Enough programs for the cores to balance, few enough that each amortizes
// its dispatch: about 32K elements of elementwise work per program.
#pragma once

#include <array>
#include <cstdint>

namespace torch_maia {

/// Cores of the device (device 0's count, read once).
int deviceCores();

/// Eager operators: how many programs to split `units` independent pieces
/// of work (`work` elements in all) over. One below 64K elements, where one
/// core is faster than a split, else up to the device's cores.
int64_t programsFor(int64_t units, int64_t work);

/// Eager reductions: whether reducing one line of n elements to one value
/// is worth splitting over the cores (one program per core reduces a part,
/// one more combines the parts), rather than one program reading it all.
bool splitsOneLine(int64_t n);

/// The grid of a compiled kernel whose vector lanes walk x: a pointwise
/// kernel over numel elements in rows of `inner` (or an outer reduction,
/// reduction_numel elements per output). (programs over rows, programs over
/// chunks of a row, a chunk being whole vectors of `lanes`); (0, 1) when
/// numel is 0. At most 32 programs, one per ~32K elements (~8K for outer
/// reductions).
std::array<int64_t, 2> pointwiseGrid(int64_t numel, int64_t inner, int64_t reduction_numel,
                                     int64_t lanes);

/// The 1-D grid of a compiled reduction of xnumel outputs over rnumel
/// elements each: programs over contiguous blocks of x (0 when xnumel is
/// 0), one per ~8K elements, at most 32.
int64_t reductionGrid(int64_t xnumel, int64_t rnumel);

}  // namespace torch_maia
