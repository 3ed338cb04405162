// grid_sampler_2d/3d and their backwards on maia (F.grid_sample, spatial
// transformers, optical flow warps): one launch each of the NN kernel
// binary (runtime/kernels/nn/grid_sample.h) over (N, C, D, H, W) views,
// 2-D with D = 1. ATen's own argument checks (GridSamplerUtils.h); every
// float dtype, float16/bfloat16 computed in float32 with the input gradient
// accumulated in a float32 buffer.
#include <ATen/OpMathType.h>
#include <ATen/native/GridSamplerUtils.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros_like.h>
#include <torch/library.h>

#include <array>
#include <tuple>

#include "WorkSplit.h"
#include "ops/EagerKernels.h"
#include "ops/HostRouting.h"
#include "ops/OpUtils.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;

/// A 2-D operator's (N, C, H, W) tensor or (N, H, W, 2) grid as rank 5.
Tensor asRank5(const Tensor& t, bool is_grid) {
  if (t.dim() == 5) return t;
  return t.unsqueeze(is_grid ? 1 : 2);
}

/// The kernels take input and grid of one dtype; the CPU's error otherwise.
void checkSameDtype(const Tensor& input, const Tensor& grid) {
  TORCH_CHECK(input.scalar_type() == grid.scalar_type(), "expected scalar type ",
              input.scalar_type(), " but found ", grid.scalar_type());
}

Tensor gridSample(const char* op, const Tensor& input, const Tensor& grid, int64_t mode,
                  int64_t padding, bool align_corners) {
  at::native::check_grid_sampler_common(input, grid);
  checkSameDtype(input, grid);
  if (input.dim() == 4)
    at::native::check_grid_sampler_2d(input, grid);
  else
    at::native::check_grid_sampler_3d(input, grid, mode);
  checkFloatDtype(op, input.scalar_type());
  std::vector<int64_t> shape{input.size(0), input.size(1)};
  for (int64_t d = 1; d < grid.dim() - 1; ++d) shape.push_back(grid.size(d));
  Tensor out = at::empty(shape, input.options());
  if (out.numel() == 0) return out;
  const Tensor out5 = asRank5(out, false);
  launchNn("grid_sample", input.scalar_type(),
           {memrefOf(out5), memrefOf(asRank5(input, false)), memrefOf(asRank5(grid, true)),
            intArg(mode), intArg(padding), intArg(align_corners)},
           programsFor(out.numel() / out.size(-1) / out.size(1),
                       out.numel() * (input.dim() == 5 ? 8 : 16)),
           input.device());
  return out;
}

std::tuple<Tensor, Tensor> gridSampleBackward(const char* op, const Tensor& grad_output,
                                              const Tensor& input, const Tensor& grid,
                                              int64_t mode, int64_t padding,
                                              bool align_corners,
                                              std::array<bool, 2> output_mask) {
  at::native::check_grid_sampler_common(input, grid);
  checkSameDtype(input, grid);
  checkSameDtype(input, grad_output);
  checkFloatDtype(op, input.scalar_type());
  const bool input_grad = output_mask[0];
  Tensor grad_input =
      input_grad ? at::zeros_like(input, at::MemoryFormat::Contiguous) : Tensor();
  Tensor grad_grid = at::zeros_like(grid, at::MemoryFormat::Contiguous);
  if (grid.numel() == 0 || input.numel() == 0) return {grad_input, grad_grid};
  // Without an input gradient the kernel gets a placeholder it never writes.
  const auto compute_type = at::toOpMathType(input.scalar_type());
  const Tensor accumulator = input_grad ? computeTypeTarget(grad_input)
                                        : at::empty({1, 1, 1, 1, 1},
                                                    input.options().dtype(compute_type));
  launchNn("grid_sample_bwd", input.scalar_type(),
           {memrefOf(asRank5(accumulator, false)), memrefOf(asRank5(grad_grid, true)),
            memrefOf(asRank5(grad_output, false)), memrefOf(asRank5(input, false)),
            memrefOf(asRank5(grid, true)), intArg(mode), intArg(padding),
            intArg(align_corners), intArg(input_grad)},
           programsFor(input.size(0), grad_output.numel() * (input.dim() == 5 ? 16 : 32)),
           input.device());
  if (input_grad && !accumulator.is_same(grad_input)) grad_input.copy_(accumulator);
  return {grad_input, grad_grid};
}

}  // namespace

MAIA_NATIVE_KERNELS(m) {
  m.impl("grid_sampler_2d", [](const Tensor& input, const Tensor& grid, int64_t mode,
                               int64_t padding, bool align_corners) {
    return gridSample("grid_sampler_2d_cpu", input, grid, mode, padding, align_corners);
  });
  m.impl("grid_sampler_3d", [](const Tensor& input, const Tensor& grid, int64_t mode,
                               int64_t padding, bool align_corners) {
    return gridSample("grid_sampler_3d_cpu", input, grid, mode, padding, align_corners);
  });
  m.impl("grid_sampler_2d_backward",
         [](const Tensor& grad_output, const Tensor& input, const Tensor& grid, int64_t mode,
            int64_t padding, bool align_corners, std::array<bool, 2> output_mask) {
           return gridSampleBackward("grid_sampler_2d_backward_cpu", grad_output, input, grid,
                                     mode, padding, align_corners, output_mask);
         });
  m.impl("grid_sampler_3d_backward",
         [](const Tensor& grad_output, const Tensor& input, const Tensor& grid, int64_t mode,
            int64_t padding, bool align_corners, std::array<bool, 2> output_mask) {
           return gridSampleBackward("grid_sampler_3d_backward_cpu", grad_output, input, grid,
                                     mode, padding, align_corners, output_mask);
         });
}

}  // namespace torch_maia::ops
