// The two operators torch.amp.GradScaler("maia") calls each step, on the
// device and on the current stream: no host synchronization (the scale and
// the found-inf flag stay device tensors, as on CUDA), and no host fallback.
// Each is composed of maia's elementwise and reduction kernels rather than a
// fused kernel of its own: the per-tensor cost is a few launches, small
// next to the optimizer step that follows.
#include <ATen/ATen.h>
#include <torch/library.h>

#include "ops/HostRouting.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;

void checkScalarFloat(const Tensor& t, const char* what, const Tensor& like) {
  TORCH_CHECK(t.numel() == 1, what, " must be a 1-element tensor, but has ", t.numel(),
              " elements");
  TORCH_CHECK(t.scalar_type() == at::kFloat, what, " must be a float32 tensor, but is ",
              t.scalar_type());
  TORCH_CHECK(t.device() == like.device(), what, " must be on ", like.device(), ", but is on ",
              t.device());
}

// For each gradient: found_inf = 1 if it holds an inf or a NaN; then it is
// multiplied by inv_scale in place (also when not finite, as on CUDA: the
// step is skipped anyway).
void nonFiniteCheckAndUnscale(at::TensorList grads, Tensor& found_inf, const Tensor& inv_scale) {
  if (grads.empty()) return;
  checkScalarFloat(found_inf, "found_inf", grads[0]);
  checkScalarFloat(inv_scale, "inv_scale", grads[0]);
  for (const Tensor& grad : grads) {
    TORCH_CHECK(grad.device() == found_inf.device(), "_amp_foreach_non_finite_check_and_unscale_: "
                "every gradient must be on ", found_inf.device(), ", but one is on ", grad.device());
    TORCH_CHECK(at::isFloatingType(grad.scalar_type()),
                "_amp_foreach_non_finite_check_and_unscale_: gradients must be floating point, "
                "but one is ", grad.scalar_type());
    if (grad.numel() == 0) continue;
    const Tensor bad = at::logical_not(at::isfinite(grad)).any().to(at::kFloat).reshape(
        found_inf.sizes());
    found_inf.copy_(at::maximum(found_inf, bad));
    grad.mul_(inv_scale);  // computed in float32 for half types, as on CUDA
  }
}

// CUDA's rule: after a step with infs the scale shrinks by backoff_factor and
// the growth count restarts; after growth_interval clean steps in a row it
// grows by growth_factor (unless that overflows float32) and the count
// restarts.
Tensor& updateScale(Tensor& scale, Tensor& growth_tracker, const Tensor& found_inf,
                    double growth_factor, double backoff_factor, int64_t growth_interval) {
  checkScalarFloat(scale, "current_scale", scale);
  checkScalarFloat(found_inf, "found_inf", scale);
  TORCH_CHECK(growth_tracker.numel() == 1 && growth_tracker.scalar_type() == at::kInt &&
                  growth_tracker.device() == scale.device(),
              "growth_tracker must be a 1-element int32 tensor on ", scale.device());
  const Tensor found = at::gt(found_inf, 0);
  const Tensor successful = at::add(growth_tracker, 1);
  const Tensor grow = at::logical_and(at::logical_not(found), at::eq(successful, growth_interval));
  const Tensor grown = at::mul(scale, growth_factor);
  const Tensor kept_or_grown =
      at::where(at::logical_and(grow, at::isfinite(grown)), grown, scale);
  const Tensor new_scale = at::where(found, at::mul(scale, backoff_factor), kept_or_grown);
  const Tensor new_tracker =
      at::where(at::logical_or(found, grow), at::zeros_like(growth_tracker), successful);
  scale.copy_(new_scale);
  growth_tracker.copy_(new_tracker);
  return scale;
}

MAIA_NATIVE_KERNELS(m) {
  m.impl("_amp_foreach_non_finite_check_and_unscale_", TORCH_FN(nonFiniteCheckAndUnscale));
  m.impl("_amp_update_scale_", TORCH_FN(updateScale));
}

}  // namespace
}  // namespace torch_maia::ops
