// The CTC loss on maia (_ctc_loss and its backward, which F.ctc_loss and
// nn.CTCLoss reach through ATen's composite ctc_loss): the NN binary's
// kernels (runtime/kernels/nn/ctc_loss.h), one program per batch element.
// The host does what the CPU's kernel does before its loops: the argument
// checks with the CPU's messages, where each element's targets start, the
// outputs' shapes.
#include <ATen/TensorUtils.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <torch/library.h>

#include <algorithm>
#include <tuple>
#include <vector>

#include "WorkSplit.h"
#include "ops/EagerKernels.h"
#include "ops/HostRouting.h"
#include "ops/MaiaOps.h"
#include "ops/OpUtils.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;
using c10::IntArrayRef;

/// The targets as the kernels read them: int64, contiguous, on the device,
/// with where each batch element's targets start.
struct CtcTargets {
  Tensor flat, offsets;
  int64_t max_length = 0;
};

/// Element b's targets start at the sum of the earlier lengths
/// (concatenated targets) or at row b (batch x max length); checks the
/// lengths as the CPU does when `checked` names the calling function.
CtcTargets ctcTargets(const Tensor& log_probs, const Tensor& targets, IntArrayRef target_lengths,
                      const char* checked) {
  const int64_t batch = log_probs.size(1);
  std::vector<int64_t> offsets(batch);
  CtcTargets result;
  int64_t position = 0;
  for (int64_t b = 0; b < batch; ++b) {
    TORCH_CHECK(checked == nullptr || target_lengths[b] >= 0,
                "Expected target_lengths to have value at least ", 0, ", but got value ",
                target_lengths[b], " (while checking arguments for ", checked, ")");
    offsets[b] = targets.dim() == 1 ? position : b * targets.size(1);
    position += target_lengths[b];
    result.max_length = std::max(result.max_length, target_lengths[b]);
  }
  if (checked != nullptr) {
    const at::TensorArg targets_arg(targets, "targets", 2);
    if (targets.dim() == 1) {
      at::checkSize(checked, targets_arg, 0, position);
    } else {
      at::checkSize(checked, targets_arg, 0, batch);
    }
  }
  result.flat = targets.to(log_probs.device(), at::kLong).contiguous().view({-1});
  result.offsets = int64Tensor(offsets, log_probs.device());
  return result;
}


std::tuple<Tensor, Tensor> ctcLoss(const Tensor& log_probs, const Tensor& targets,
                                   IntArrayRef input_lengths, IntArrayRef target_lengths,
                                   int64_t blank, bool /*zero_infinity: the backward's*/) {
  checkSingleOrDouble("ctc_loss_cpu", log_probs);
  const char* checked = "ctc_loss_allocate_outputs";
  const at::TensorArg log_probs_arg(log_probs, "log_probs", 1), targets_arg(targets, "targets", 2);
  at::checkScalarType(checked, targets_arg,
                      targets.scalar_type() == at::kLong ? at::kLong : at::kInt);
  at::checkDim(checked, log_probs_arg, 3);
  at::checkDimRange(checked, targets_arg, 1, 3);
  const int64_t batch = log_probs.size(1), labels = log_probs.size(2);
  TORCH_CHECK(0 <= blank && blank < labels, "blank must be in label range");
  TORCH_CHECK(static_cast<int64_t>(input_lengths.size()) == batch,
              "input_lengths must be of size batch_size");
  TORCH_CHECK(static_cast<int64_t>(target_lengths.size()) == batch,
              "target_lengths must be of size batch_size");
  const CtcTargets tg = ctcTargets(log_probs, targets, target_lengths, checked);
  TORCH_CHECK(targets.dim() == 1 || targets.size(1) >= tg.max_length, "Expected tensor to have ",
              "size at least ", tg.max_length, " at dimension 1, but got size ", targets.size(1),
              " for ", targets_arg, " (while checking arguments for ", checked, ")");
  const int64_t steps = log_probs.size(0);
  for (int64_t b = 0; b < batch; ++b) {
    TORCH_CHECK(input_lengths[b] >= 0, "Expected input_lengths to have value at least ", 0,
                ", but got value ", input_lengths[b], " (while checking arguments for ", checked,
                ")");
    TORCH_CHECK(input_lengths[b] <= steps, "Expected input_lengths to have value at most ", steps,
                ", but got value ", input_lengths[b], " (while checking arguments for ", checked,
                ")");
  }
  Tensor log_alpha = newEmpty({batch, steps, 2 * tg.max_length + 1}, log_probs.options());
  Tensor nll = newEmpty({batch}, log_probs.options());
  if (batch > 0) {
    launchNn("ctc_loss", log_probs.scalar_type(),
             {memrefOf(nll), memrefOf(log_alpha), memrefOf(log_probs), memrefOf(tg.flat),
              memrefOf(tg.offsets), memrefOf(int64Tensor(input_lengths, log_probs.device())),
              memrefOf(int64Tensor(target_lengths, log_probs.device())), intArg(blank)},
             programsFor(batch, log_alpha.numel()), log_probs.device());
  }
  return {nll, log_alpha};
}

Tensor ctcLossBackward(const Tensor& grad_out, const Tensor& log_probs, const Tensor& targets,
                       IntArrayRef input_lengths, IntArrayRef target_lengths, const Tensor& nll,
                       const Tensor& log_alpha, int64_t blank, bool zero_infinity) {
  checkSingleOrDouble("ctc_loss_backward_cpu", log_probs);
  Tensor grad = at::empty_like(log_probs, at::MemoryFormat::Contiguous);
  const int64_t batch = log_probs.size(1);
  if (batch == 0 || grad.numel() == 0) return grad;
  const CtcTargets tg = ctcTargets(log_probs, targets, target_lengths, nullptr);
  Tensor log_beta = at::empty_like(log_alpha, at::MemoryFormat::Contiguous);
  launchNn("ctc_loss_bwd", log_probs.scalar_type(),
           {memrefOf(grad), memrefOf(grad_out), memrefOf(log_probs), memrefOf(tg.flat),
            memrefOf(tg.offsets), memrefOf(int64Tensor(input_lengths, log_probs.device())),
            memrefOf(int64Tensor(target_lengths, log_probs.device())), memrefOf(nll),
            memrefOf(log_alpha), memrefOf(log_beta), intArg(blank), intArg(zero_infinity)},
           programsFor(batch, grad.numel() + 2 * log_alpha.numel()), log_probs.device());
  return grad;
}

/// Length tensors as the host lists the IntArrayRef overloads take.
std::vector<int64_t> hostLengths(const Tensor& lengths, const char* name) {
  TORCH_CHECK(at::isIntegralType(lengths.scalar_type(), /*includeBool=*/false), name,
              " must be integral");
  const Tensor host = lengths.to(at::kCPU, at::kLong).contiguous();
  return {host.const_data_ptr<int64_t>(), host.const_data_ptr<int64_t>() + host.numel()};
}

}  // namespace

MAIA_NATIVE_KERNELS(m) {
  m.impl("_ctc_loss", TORCH_FN(ctcLoss));
  m.impl("_ctc_loss.Tensor", [](const Tensor& log_probs, const Tensor& targets,
                                const Tensor& input_lengths, const Tensor& target_lengths,
                                int64_t blank, bool zero_infinity) {
    return ctcLoss(log_probs, targets, hostLengths(input_lengths, "input_lengths"),
                   hostLengths(target_lengths, "target_lengths"), blank, zero_infinity);
  });
  m.impl("_ctc_loss_backward", TORCH_FN(ctcLossBackward));
  m.impl("_ctc_loss_backward.Tensor",
         [](const Tensor& grad, const Tensor& log_probs, const Tensor& targets,
            const Tensor& input_lengths, const Tensor& target_lengths, const Tensor& nll,
            const Tensor& log_alpha, int64_t blank, bool zero_infinity) {
           return ctcLossBackward(grad, log_probs, targets,
                                  hostLengths(input_lengths, "input_lengths"),
                                  hostLengths(target_lengths, "target_lengths"), nll, log_alpha,
                                  blank, zero_infinity);
         });
}

}  // namespace torch_maia::ops
