// The pointwise losses on maia, forward and backward: mse_loss,
// smooth_l1_loss, huber_loss and binary_cross_entropy. As the CPU's kernels
// do, the forward computes the elementwise loss with one eager kernel
// (functors in runtime/kernels/eager/loss_ops.h) and reduces it with maia's
// sum or mean; the backward is one kernel over (self, target, grad) with the
// reduction's scale folded in. reduction: 0 none, 1 mean, 2 sum.
#include <ATen/core/Reduction.h>
#include <ATen/ops/mean.h>
#include <ATen/ops/result_type.h>
#include <ATen/ops/sum.h>
#include <torch/library.h>

#include <optional>

#include "ops/ElementwiseLaunch.h"
#include "ops/HostRouting.h"
#include "ops/MaiaOps.h"
#include "ops/OpUtils.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;
using OptionalTensor = const std::optional<Tensor>&;

Tensor reduced(const Tensor& loss, int64_t reduction) {
  if (reduction == at::Reduction::Mean) return loss.mean();
  if (reduction == at::Reduction::Sum) return loss.sum();
  return loss;
}

/// The backward's scale: `factor` (2 for the squared error) over the
/// number of elements for a mean.
double normFor(const Tensor& self, int64_t reduction, double factor) {
  return reduction == at::Reduction::Mean ? factor / static_cast<double>(self.numel()) : factor;
}

/// The elementwise loss `kernel`(self, target) with its parameter, reduced.
Tensor pointwiseLoss(const char* kernel, const char* cpu_name, const Tensor& self,
                     const Tensor& target, int64_t reduction, c10::ArrayRef<maiaKernelArg> params) {
  checkFloatDtype(cpu_name, at::result_type(self, target));
  Tensor loss;
  binaryOut(kernel, Result::Common, self, target, loss, params);
  return reduced(loss, reduction);
}

/// grad_input = `kernel`(self, target, grad) with norm and the parameter.
Tensor& pointwiseLossBackward(const char* kernel, const Tensor& grad, const Tensor& self,
                              const Tensor& target, FloatArgs params, Tensor& out) {
  checkFloatDtype(kernel, self.scalar_type());
  return ternaryOut(kernel, resultType(self, target, grad), self, target, grad, out, params);
}

Tensor mseLoss(const Tensor& self, const Tensor& target, int64_t reduction) {
  return pointwiseLoss("squared_error", "mse_cpu", self, target, reduction, {});
}

Tensor& mseLossBackwardOut(const Tensor& grad, const Tensor& self, const Tensor& target,
                           int64_t reduction, Tensor& out) {
  return pointwiseLossBackward("mse_backward", grad, self, target,
                               {normFor(self, reduction, 2.0)}, out);
}

Tensor smoothL1Loss(const Tensor& self, const Tensor& target, int64_t reduction, double beta) {
  TORCH_CHECK(beta >= 0, "smooth_l1_loss does not support negative values for beta.");
  return pointwiseLoss("smooth_l1", "smooth_l1_cpu", self, target, reduction, FloatArgs{beta});
}

Tensor& smoothL1LossBackwardOut(const Tensor& grad, const Tensor& self, const Tensor& target,
                                int64_t reduction, double beta, Tensor& out) {
  return pointwiseLossBackward("smooth_l1_backward", grad, self, target,
                               {normFor(self, reduction, 1.0), beta}, out);
}

Tensor huberLoss(const Tensor& self, const Tensor& target, int64_t reduction, double delta) {
  TORCH_CHECK(delta > 0, "huber_loss does not support non-positive values for delta.");
  return pointwiseLoss("huber", "huber_cpu", self, target, reduction, FloatArgs{delta});
}

Tensor& huberLossBackwardOut(const Tensor& grad, const Tensor& self, const Tensor& target,
                             int64_t reduction, double delta, Tensor& out) {
  return pointwiseLossBackward("huber_backward", grad, self, target,
                               {normFor(self, reduction, 1.0), delta}, out);
}

bool hasWeight(OptionalTensor weight) { return weight.has_value() && weight->defined(); }

/// An input outside [0, 1] traps in the kernel (loss_ops.h): a sticky
/// device error naming binary_cross_entropy_<dtype>, not a host check.
Tensor binaryCrossEntropy(const Tensor& self, const Tensor& target, OptionalTensor weight,
                          int64_t reduction) {
  checkFloatDtype("binary_cross_entropy", self.scalar_type());
  Tensor loss;
  binaryOut("binary_cross_entropy", Result::Common, self, target, loss);
  if (hasWeight(weight)) loss.mul_(*weight);
  return reduced(loss, reduction);
}

Tensor& binaryCrossEntropyBackwardOut(const Tensor& grad, const Tensor& self,
                                      const Tensor& target, OptionalTensor weight,
                                      int64_t reduction, Tensor& out) {
  checkFloatDtype("binary_cross_entropy_backward", self.scalar_type());
  ternaryOut("binary_cross_entropy_backward", resultType(self, target, grad), self, target, grad,
             out);
  if (hasWeight(weight)) out.mul_(*weight);
  if (reduction == at::Reduction::Mean) out.div_(static_cast<double>(self.numel()));
  return out;
}

}  // namespace

MAIA_NATIVE_KERNELS(m) {
  m.impl("mse_loss", TORCH_FN(mseLoss));
  m.impl("mse_loss.out", [](const Tensor& self, const Tensor& target, int64_t reduction,
                            Tensor& out) -> Tensor& {
    return resultInto(out, mseLoss(self, target, reduction));
  });
  m.impl("mse_loss_backward", [](const Tensor& g, const Tensor& self, const Tensor& target,
                                 int64_t reduction) {
    Tensor out;
    return mseLossBackwardOut(g, self, target, reduction, out);
  });
  m.impl("mse_loss_backward.grad_input", TORCH_FN(mseLossBackwardOut));
  m.impl("smooth_l1_loss", TORCH_FN(smoothL1Loss));
  m.impl("smooth_l1_loss.out", [](const Tensor& self, const Tensor& target, int64_t reduction,
                                  double beta, Tensor& out) -> Tensor& {
    return resultInto(out, smoothL1Loss(self, target, reduction, beta));
  });
  m.impl("smooth_l1_loss_backward", [](const Tensor& g, const Tensor& self, const Tensor& target,
                                       int64_t reduction, double beta) {
    Tensor out;
    return smoothL1LossBackwardOut(g, self, target, reduction, beta, out);
  });
  m.impl("smooth_l1_loss_backward.grad_input", TORCH_FN(smoothL1LossBackwardOut));
  m.impl("huber_loss", TORCH_FN(huberLoss));
  m.impl("huber_loss.out", [](const Tensor& self, const Tensor& target, int64_t reduction,
                              double delta, Tensor& out) -> Tensor& {
    return resultInto(out, huberLoss(self, target, reduction, delta));
  });
  m.impl("huber_loss_backward", [](const Tensor& g, const Tensor& self, const Tensor& target,
                                   int64_t reduction, double delta) {
    Tensor out;
    return huberLossBackwardOut(g, self, target, reduction, delta, out);
  });
  m.impl("huber_loss_backward.out", TORCH_FN(huberLossBackwardOut));
  m.impl("binary_cross_entropy", TORCH_FN(binaryCrossEntropy));
  m.impl("binary_cross_entropy.out", [](const Tensor& self, const Tensor& target,
                                        OptionalTensor weight, int64_t reduction,
                                        Tensor& out) -> Tensor& {
    return resultInto(out, binaryCrossEntropy(self, target, weight, reduction));
  });
  m.impl("binary_cross_entropy_backward", [](const Tensor& g, const Tensor& self,
                                             const Tensor& target, OptionalTensor weight,
                                             int64_t reduction) {
    Tensor out;
    return binaryCrossEntropyBackwardOut(g, self, target, weight, reduction, out);
  });
  m.impl("binary_cross_entropy_backward.grad_input", TORCH_FN(binaryCrossEntropyBackwardOut));
}

}  // namespace torch_maia::ops
