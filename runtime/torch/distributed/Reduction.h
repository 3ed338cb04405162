// The reductions of the collectives' transports: result = s0 op s1 op ...,
// elementwise, on the current stream, in source order (every rank that
// computes a block computes it the same way: the same bits everywhere).
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include <vector>

namespace torch_maia::distributed {

/// result = sources[0] op sources[1] op ... (at least two same-shape
/// contiguous sources: a transport has two ranks or more). result may be
/// sources[0], not a later source (a reduction of more than four sources
/// writes result before it reads the fifth). Up to four sources are read
/// in one pass (the eager binary's fold kernels) where a chain of binary
/// kernels would write and re-read every intermediate result.
void combine(const at::Tensor& result, const std::vector<at::Tensor>& sources,
             c10d::ReduceOp::RedOpType op);

}  // namespace torch_maia::distributed
