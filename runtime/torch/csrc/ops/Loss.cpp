// Losses on maia: nll_loss and nll_loss2d (and with them cross_entropy),
// forward and backward, launched from the NN kernel binary
// (runtime/kernels/nn, maia_nn_kernels.maiabin) over the input made
// contiguous (a device copy when it is not) and viewed as [N, C] rows.
// reduction: 0 none, 1 mean, 2 sum.
//
// Out-of-range targets trap in the kernel, not checked on the host
// (docs/torch.md, "Native kernels").
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include <optional>
#include <tuple>
#include <utility>

#include "WorkSplit.h"
#include "ops/EagerKernels.h"
#include "ops/HostRouting.h"
#include "ops/OpUtils.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;

/// Checks shared by nll_loss's forward and backward; returns (N, C).
std::pair<int64_t, int64_t> checkNll(const Tensor& self, const Tensor& target,
                                     const std::optional<Tensor>& weight) {
  TORCH_CHECK(self.dim() > 0 && self.dim() <= 2, "input tensor should be 1D or 2D");
  TORCH_CHECK(target.dim() <= 1,
              "0D or 1D target tensor expected, multi-target not supported");
  const bool no_batch = self.dim() == 1 && target.dim() == 0;
  TORCH_CHECK(no_batch || self.size(0) == target.size(0), "Expected input batch_size (",
              self.size(0), ") to match target batch_size (", target.size(0), ").");
  TORCH_CHECK(target.scalar_type() == c10::ScalarType::Long,
              "expected scalar type Long but found ", target.scalar_type());
  const int64_t classes = self.size(-1);
  TORCH_CHECK(!weight.has_value() || !weight->defined() || weight->numel() == classes,
              "weight tensor should be defined either for all ", classes,
              " classes or no classes but got weight tensor of shape: ", weight->sizes());
  return {self.dim() == 1 ? 1 : self.size(0), classes};
}

std::tuple<Tensor, Tensor> nllLossForward(const Tensor& self, const Tensor& target,
                                          const std::optional<Tensor>& weight_opt,
                                          int64_t reduction, int64_t ignore_index) {
  checkFloating("nll_loss", self);
  auto [rows, classes] = checkNll(self, target, weight_opt);
  Tensor x = self.contiguous().view({rows, classes});
  Tensor t = target.contiguous().view({rows});
  Tensor total_weight = at::empty(c10::IntArrayRef{}, x.options());
  const bool has_w = weight_opt.has_value() && weight_opt->defined();
  Tensor w = has_w ? weight_opt->to(x.scalar_type()).contiguous().view({classes}) : Tensor();
  Tensor out = reduction == 0 ? at::empty({rows}, x.options()) : at::empty(c10::IntArrayRef{}, x.options());
  if (reduction == 0 && rows == 0) {
    total_weight.zero_();
    return {out, total_weight};
  }
  launchNn("nll_loss", x.scalar_type(),
         {memrefOf(out.view({-1})), memrefOf(total_weight.view({1})), memrefOf(x), memrefOf(t),
          memrefOf(has_w ? w : total_weight.view({1})), intArg(has_w), intArg(reduction),
          intArg(ignore_index)},
         1, x.device());
  if (reduction == 0 && self.dim() == 1) out = out.view(c10::IntArrayRef{});
  return {out, total_weight};
}

Tensor nllLossBackward(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                       const std::optional<Tensor>& weight_opt, int64_t reduction,
                       int64_t ignore_index, const Tensor& total_weight) {
  checkFloating("nll_loss_backward", self);
  auto [rows, classes] = checkNll(self, target, weight_opt);
  const auto dtype = self.scalar_type();
  Tensor gi = at::empty({rows, classes}, self.options().memory_format(c10::MemoryFormat::Contiguous));
  if (rows == 0 || classes == 0) return gi.view(self.sizes());
  Tensor go = grad_output.to(dtype).contiguous().view({-1});
  TORCH_CHECK(go.numel() == (reduction == 0 ? rows : 1),
              "nll_loss_backward: grad_output has ", go.numel(), " elements, expected ",
              reduction == 0 ? rows : 1);
  Tensor t = target.contiguous().view({rows});
  Tensor tw = total_weight.to(dtype).contiguous().view({1});
  const bool has_w = weight_opt.has_value() && weight_opt->defined();
  Tensor w = has_w ? weight_opt->to(dtype).contiguous().view({classes}) : Tensor();
  launchNn("nll_loss_bwd", dtype,
         {memrefOf(gi), memrefOf(go), memrefOf(t), memrefOf(has_w ? w : tw), memrefOf(tw),
          intArg(has_w), intArg(reduction), intArg(ignore_index)},
         programsFor(rows, rows * classes), self.device());
  return gi.view(self.sizes());
}

// nll_loss2d: (N, C, H, W) input, (N, H, W) target, as nll_loss over the
// (N*H*W, C) rows of the channels-last input.
std::tuple<Tensor, Tensor> nllLoss2dForward(const Tensor& self, const Tensor& target,
                                            const std::optional<Tensor>& weight,
                                            int64_t reduction, int64_t ignore_index) {
  TORCH_CHECK(self.dim() == 4, "only batches of spatial inputs supported (4D tensors), but got "
              "input of size: ", self.sizes());
  TORCH_CHECK(target.dim() == 3, "only batches of spatial targets supported (3D tensors) but "
              "got targets of size: ", target.sizes());
  TORCH_CHECK(self.size(0) == target.size(0) && self.size(2) == target.size(1) &&
                  self.size(3) == target.size(2),
              "input and target batch or spatial sizes don't match: target ", target.sizes(),
              ", input ", self.sizes());
  const int64_t classes = self.size(1);
  Tensor rows = self.permute({0, 2, 3, 1}).reshape({-1, classes});
  auto [out, total_weight] =
      nllLossForward(rows, target.reshape({-1}), weight, reduction, ignore_index);
  if (reduction == 0) out = out.view(target.sizes());
  return {out, total_weight};
}

Tensor nllLoss2dBackward(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                         const std::optional<Tensor>& weight, int64_t reduction,
                         int64_t ignore_index, const Tensor& total_weight) {
  const int64_t classes = self.size(1);
  Tensor rows = self.permute({0, 2, 3, 1}).reshape({-1, classes});
  Tensor gi = nllLossBackward(reduction == 0 ? grad_output.reshape({-1}) : grad_output, rows,
                              target.reshape({-1}), weight, reduction, ignore_index,
                              total_weight);
  return gi.view({self.size(0), self.size(2), self.size(3), classes})
      .permute({0, 3, 1, 2})
      .contiguous();
}

MAIA_NATIVE_KERNELS(m) {
  m.impl("nll_loss_forward", [](const Tensor& self, const Tensor& target,
                                const std::optional<Tensor>& weight, int64_t reduction,
                                c10::SymInt ignore_index) {
    return nllLossForward(self, target, weight, reduction, ignore_index.expect_int());
  });
  m.impl("nll_loss_backward", [](const Tensor& grad_output, const Tensor& self,
                                 const Tensor& target, const std::optional<Tensor>& weight,
                                 int64_t reduction, c10::SymInt ignore_index,
                                 const Tensor& total_weight) {
    return nllLossBackward(grad_output, self, target, weight, reduction,
                           ignore_index.expect_int(), total_weight);
  });
  m.impl("nll_loss2d_forward", [](const Tensor& self, const Tensor& target,
                                  const std::optional<Tensor>& weight, int64_t reduction,
                                  c10::SymInt ignore_index) {
    return nllLoss2dForward(self, target, weight, reduction, ignore_index.expect_int());
  });
  m.impl("nll_loss2d_backward", [](const Tensor& grad_output, const Tensor& self,
                                   const Tensor& target, const std::optional<Tensor>& weight,
                                   int64_t reduction, c10::SymInt ignore_index,
                                   const Tensor& total_weight) {
    return nllLoss2dBackward(grad_output, self, target, weight, reduction,
                             ignore_index.expect_int(), total_weight);
  });
}

}  // namespace
}  // namespace torch_maia::ops
