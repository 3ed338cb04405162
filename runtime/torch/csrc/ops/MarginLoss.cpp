// multi_margin_loss and multilabel_margin_loss on maia, forward and
// backward, by the NN binary's kernels (runtime/kernels/nn/margin_loss.h)
// over contiguous (N, C) frames; float32/float64 like the CPU, with its
// shape checks (ATen/native/LossMulti.h), output shapes and errors.
// Targets out of range trap in the kernel, as nll_loss's do (docs/torch.md,
// "Native kernels"), where the CPU checks them on the host.
#include <ATen/native/LossMulti.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include <optional>
#include <tuple>

#include "WorkSplit.h"
#include "ops/EagerKernels.h"
#include "ops/HostRouting.h"
#include "ops/MaiaOps.h"
#include "ops/OpUtils.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;

/// A loss input's frames: N rows of C classes.
struct Frames {
  int64_t rows = 0, classes = 0;
};

/// The CPU kernels' dtypes (float32, float64; int64 targets).
void checkSingleOrDouble(const char* cpu_kernel, const Tensor& self, const Tensor& target) {
  TORCH_CHECK(target.scalar_type() == at::kLong, "expected scalar type Long but found ",
              target.scalar_type());
  checkDtype(cpu_kernel, self.scalar_type(),
             self.scalar_type() == at::kFloat || self.scalar_type() == at::kDouble);
}

/// The class weights in like's dtype; an empty placeholder when absent.
Tensor classWeights(const std::optional<Tensor>& weight, const Tensor& like) {
  if (weight.has_value() && weight->defined())
    return weight->to(like.scalar_type()).contiguous().view({-1});
  return at::empty({0}, like.options());
}

bool hasWeight(const std::optional<Tensor>& weight) {
  return weight.has_value() && weight->defined();
}

int64_t checkP(const at::Scalar& p) {
  const int64_t value = p.toLong();
  TORCH_CHECK(value == 1 || value == 2, "only p == 1 and p == 2 supported");
  return value;
}

Frames multiMarginFrames(const Tensor& self, const Tensor& target,
                         const std::optional<Tensor>& weight) {
  Frames f;
  at::native::multi_margin_loss_shape_check(f.rows, f.classes, self.dim(), self, target, weight);
  return f;
}

Tensor multiMarginLoss(const Tensor& self, const Tensor& target, const at::Scalar& p,
                       const at::Scalar& margin, const std::optional<Tensor>& weight,
                       int64_t reduction) {
  const int64_t power = checkP(p);
  const Frames f = multiMarginFrames(self, target, weight);
  checkSingleOrDouble("multi_margin_loss_cpu_kernel", self, target);
  const bool per_frame = reduction == 0 && target.dim() > 0;
  Tensor out = per_frame ? at::empty({f.rows}, self.options())
                         : at::empty(c10::IntArrayRef{}, self.options());
  if (self.numel() == 0) return out;
  const Tensor input = self.contiguous().view({f.rows, f.classes});
  launchNn("multi_margin_loss", self.scalar_type(),
           {memrefOf(out.view({-1})), memrefOf(input), memrefOf(target.contiguous().view({-1})),
            memrefOf(classWeights(weight, self)), intArg(power),
            maiaKernelArgFloat(maiaDtypeF64, margin.toDouble()), intArg(hasWeight(weight)),
            intArg(reduction)},
           reduction == 0 ? programsFor(f.rows, self.numel()) : 1, self.device());
  return out;
}

Tensor multiMarginLossBackward(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                               const at::Scalar& p, const at::Scalar& margin,
                               const std::optional<Tensor>& weight, int64_t reduction) {
  const int64_t power = checkP(p);
  const Frames f = multiMarginFrames(self, target, weight);
  checkSingleOrDouble("multi_margin_loss_backward_cpu_kernel", self, target);
  Tensor grad_input = at::empty(self.sizes(), self.options());
  if (self.numel() == 0) return grad_input;
  const bool per_frame = reduction == 0 && grad_output.dim() > 0;
  launchNn("multi_margin_loss_bwd", self.scalar_type(),
           {memrefOf(grad_input.view({f.rows, f.classes})),
            memrefOf(grad_output.to(self.scalar_type()).contiguous().view({-1})),
            memrefOf(self.contiguous().view({f.rows, f.classes})),
            memrefOf(target.contiguous().view({-1})), memrefOf(classWeights(weight, self)),
            intArg(power), maiaKernelArgFloat(maiaDtypeF64, margin.toDouble()),
            intArg(hasWeight(weight)), intArg(reduction), intArg(per_frame)},
           programsFor(f.rows, self.numel()), self.device());
  return grad_input;
}

Frames multilabelFrames(const Tensor& self, const Tensor& target) {
  Frames f;
  at::native::multilabel_margin_loss_shape_check(f.rows, f.classes, self.dim(), self, target);
  return f;
}

std::tuple<Tensor, Tensor> multilabelMarginLoss(const Tensor& self, const Tensor& target,
                                                int64_t reduction) {
  const Frames f = multilabelFrames(self, target);
  checkSingleOrDouble("multilabel_margin_loss_forward_out_frame", self, target);
  const bool per_frame = reduction == 0 && target.dim() > 1;
  Tensor out = per_frame ? at::empty({f.rows}, self.options())
                         : at::empty(c10::IntArrayRef{}, self.options());
  Tensor is_target = at::empty(target.sizes(), self.options());
  if (self.numel() == 0) return {out, is_target.zero_()};
  launchNn("multilabel_margin_loss", self.scalar_type(),
           {memrefOf(out.view({-1})), memrefOf(is_target.view({f.rows, f.classes})),
            memrefOf(self.contiguous().view({f.rows, f.classes})),
            memrefOf(target.contiguous().view({f.rows, f.classes})), intArg(reduction),
            intArg(per_frame)},
           per_frame ? programsFor(f.rows, self.numel() * f.classes) : 1, self.device());
  return {out, is_target};
}

Tensor multilabelMarginLossBackward(const Tensor& grad_output, const Tensor& self,
                                    const Tensor& target, int64_t reduction,
                                    const Tensor& is_target) {
  const Frames f = multilabelFrames(self, target);
  checkSingleOrDouble("multilabel_margin_loss_backward_out_frame", self, target);
  TORCH_CHECK(is_target.sizes() == target.sizes(), "multilabel_margin_loss_backward: is_target ",
              is_target.sizes(), " and target ", target.sizes(), " differ in size");
  Tensor grad_input = at::empty(self.sizes(), self.options());
  if (self.numel() == 0) return grad_input;
  const bool per_frame = reduction == 0 && grad_output.dim() > 0;
  TORCH_CHECK(grad_output.numel() == (per_frame ? f.rows : 1),
              "multilabel_margin_loss_backward: grad_output has ", grad_output.numel(),
              " elements, expected ", per_frame ? f.rows : 1);
  launchNn("multilabel_margin_loss_bwd", self.scalar_type(),
           {memrefOf(grad_input.view({f.rows, f.classes})),
            memrefOf(grad_output.to(self.scalar_type()).contiguous().view({-1})),
            memrefOf(self.contiguous().view({f.rows, f.classes})),
            memrefOf(target.contiguous().view({f.rows, f.classes})),
            memrefOf(is_target.to(self.scalar_type()).contiguous().view({f.rows, f.classes})),
            intArg(reduction), intArg(per_frame)},
           programsFor(f.rows, self.numel() * f.classes), self.device());
  return grad_input;
}

}  // namespace

MAIA_NATIVE_KERNELS(m) {
  using T = const Tensor&;
  using S = const at::Scalar&;
  using W = const std::optional<Tensor>&;
  m.impl("multi_margin_loss", TORCH_FN(multiMarginLoss));
  m.impl("multi_margin_loss.out",
         [](T self, T target, S p, S margin, W weight, int64_t reduction, Tensor& out) -> Tensor& {
           return resultInto(out, multiMarginLoss(self, target, p, margin, weight, reduction));
         });
  m.impl("multi_margin_loss_backward", TORCH_FN(multiMarginLossBackward));
  m.impl("multi_margin_loss_backward.grad_input",
         [](T grad_output, T self, T target, S p, S margin, W weight, int64_t reduction,
            Tensor& grad_input) -> Tensor& {
           return resultInto(grad_input, multiMarginLossBackward(grad_output, self, target, p,
                                                                 margin, weight, reduction));
         });
  m.impl("multilabel_margin_loss_forward", TORCH_FN(multilabelMarginLoss));
  m.impl("multilabel_margin_loss_forward.output",
         [](T self, T target, int64_t reduction, Tensor& output, Tensor& is_target) {
           auto [out, targets] = multilabelMarginLoss(self, target, reduction);
           resultInto(output, out);
           resultInto(is_target, targets);
           return std::forward_as_tuple(output, is_target);
         });
  m.impl("multilabel_margin_loss_backward", TORCH_FN(multilabelMarginLossBackward));
  m.impl("multilabel_margin_loss_backward.grad_input",
         [](T grad_output, T self, T target, int64_t reduction, T is_target,
            Tensor& grad_input) -> Tensor& {
           return resultInto(grad_input, multilabelMarginLossBackward(grad_output, self, target,
                                                                      reduction, is_target));
         });
}

}  // namespace torch_maia::ops
