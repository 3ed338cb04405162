// Batch normalization on maia: native_batch_norm (training with the running
// statistics update, and evaluation) and native_batch_norm_backward, each
// one launch of the NN kernel binary (runtime/kernels/nn/batch_norm.h) over
// the input as (N, C, L).
//
// Parameters and statistics have the input's dtype, except float16/bfloat16
// inputs with float32 parameters (mixed precision), which compute in float32
// as the CPU does: the statistics stay float32, the output is cast back.
#include <ATen/OpMathType.h>
#include <torch/library.h>

#include <array>
#include <optional>
#include <tuple>

#include "WorkSplit.h"
#include "ops/EagerKernels.h"
#include "ops/HostRouting.h"
#include "ops/MaiaOps.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;

// Per element: a share of two statistics passes and the normalization.
constexpr int64_t kWorkPerElement = 3;

const Tensor& orUndefined(const std::optional<Tensor>& t) {
  static const Tensor undefined;
  return t.has_value() ? *t : undefined;
}

/// The dtype batch norm computes in: the input's, or float32 for a 16-bit
/// float input with float32 parameters. Refuses other mixes.
c10::ScalarType computeType(const Tensor& input, std::initializer_list<const Tensor*> params) {
  const c10::ScalarType dtype = input.scalar_type();
  TORCH_CHECK(at::isFloatingType(dtype), "batch_norm: expected a floating point input, got ",
              dtype);
  std::optional<c10::ScalarType> param_type;
  for (const Tensor* p : params) {
    if (!p->defined()) continue;
    TORCH_CHECK(!param_type || *param_type == p->scalar_type(),
                "batch_norm: expected all parameters to have one dtype, got ", *param_type,
                " and ", p->scalar_type());
    param_type = p->scalar_type();
  }
  if (!param_type || *param_type == dtype) return dtype;
  TORCH_CHECK(at::isReducedFloatingType(dtype) && *param_type == c10::ScalarType::Float,
              "batch_norm: expected parameters of dtype ", dtype, " (or float32 for a "
              "float16/bfloat16 input), got ", *param_type);
  return c10::ScalarType::Float;
}

/// t's memref, or, for an undefined t, an empty placeholder of the kernel's
/// dtype that the kernel does not read (its flag says t is undefined).
maiaKernelArg paramArg(const Tensor& t, const Tensor& placeholder) {
  return t.defined() ? memrefOf(t) : rowMajorMemref(placeholder, {0});
}

/// t in dtype, dense: the kernels view it as (N, C, L) rows (a
/// channels-last input is copied; t itself when already so).
Tensor dense(const Tensor& t, c10::ScalarType dtype) { return t.to(dtype).contiguous(); }

std::tuple<Tensor, Tensor, Tensor> batchNorm(const Tensor& input,
                                             const std::optional<Tensor>& weight_opt,
                                             const std::optional<Tensor>& bias_opt,
                                             const std::optional<Tensor>& running_mean_opt,
                                             const std::optional<Tensor>& running_var_opt,
                                             bool training, double momentum, double eps) {
  const Tensor &weight = orUndefined(weight_opt), &bias = orUndefined(bias_opt);
  const Tensor &running_mean = orUndefined(running_mean_opt),
               &running_var = orUndefined(running_var_opt);
  TORCH_CHECK(input.dim() >= 2, "batch_norm: expected an input with at least 2 dimensions, got ",
              input.dim());
  TORCH_CHECK(training || (running_mean.defined() && running_var.defined()),
              "running_mean and running_var must be defined in evaluation mode");
  const c10::ScalarType dtype =
      computeType(input, {&weight, &bias, &running_mean, &running_var});
  const int64_t channels = input.size(1);
  for (const Tensor* p : {&weight, &bias, &running_mean, &running_var})
    TORCH_CHECK(!p->defined() || p->numel() == channels, "batch_norm: expected a parameter of ",
                channels, " elements, got ", p->sizes());
  const int64_t batch = input.size(0);
  const int64_t length = batch * channels == 0 ? 0 : input.numel() / (batch * channels);
  Tensor x = dense(input, dtype);
  Tensor out = newEmpty(input.sizes(), x.options());
  // The saved statistics, of the compute type and also in evaluation (the
  // running mean and its invstd): what PyTorch's fake kernel for non-CPU
  // devices promises (CUDA's convention; the CPU returns empty ones in
  // evaluation), so eager and compiled maia agree.
  const auto stat_options = x.options().dtype(at::toOpMathType(dtype));
  Tensor save_mean = newEmpty({channels}, stat_options);
  Tensor save_invstd = newEmpty({channels}, stat_options);
  if (input.numel() > 0) {
    const int64_t flags = (weight.defined() ? 1 : 0) | (bias.defined() ? 2 : 0) |
                          (running_mean.defined() ? 4 : 0) | (running_var.defined() ? 8 : 0);
    launchNn("batch_norm", dtype,
             {rowMajorMemref(out, {batch, channels, length}),
              rowMajorMemref(x, {batch, channels, length}),
              memrefOf(save_mean), memrefOf(save_invstd), paramArg(weight, x), paramArg(bias, x),
              paramArg(running_mean, x), paramArg(running_var, x),
              maiaKernelArgFloat(maiaDtypeF64, eps), maiaKernelArgFloat(maiaDtypeF64, momentum),
              intArg(training ? 1 : 0), intArg(flags)},
             programsFor(channels, input.numel() * kWorkPerElement), input.device());
  }
  if (input.numel() == 0 && channels > 0) {  // no kernel ran: no batch statistics
    if (training) {
      save_mean.zero_();
      save_invstd.zero_();
    } else {
      save_mean.copy_(running_mean);
      save_invstd.copy_(running_var.to(save_invstd.scalar_type()).add(eps).rsqrt());
    }
  }
  if (dtype != input.scalar_type()) out = out.to(input.scalar_type());
  return {out, save_mean, save_invstd};
}

std::tuple<Tensor, Tensor, Tensor> batchNormBackward(
    const Tensor& grad_out, const Tensor& input, const std::optional<Tensor>& weight_opt,
    const std::optional<Tensor>& running_mean_opt, const std::optional<Tensor>& running_var_opt,
    const std::optional<Tensor>& save_mean_opt, const std::optional<Tensor>& save_invstd_opt,
    bool training, double eps, std::array<bool, 3> output_mask) {
  const Tensor& weight = orUndefined(weight_opt);
  const Tensor& mean = orUndefined(training ? save_mean_opt : running_mean_opt);
  const Tensor& stat = orUndefined(training ? save_invstd_opt : running_var_opt);
  TORCH_CHECK(mean.defined() && stat.defined(), "batch_norm backward: expected the ",
              training ? "saved statistics" : "running statistics");
  // The saved statistics are of the compute type whatever the parameters'
  // dtype; the running statistics in evaluation are parameters.
  const c10::ScalarType dtype = training ? computeType(input, {&weight})
                                         : computeType(input, {&weight, &mean, &stat});
  const auto stat_dtype = at::toOpMathType(dtype);
  const Tensor mean_c = mean.to(stat_dtype).contiguous(), stat_c = stat.to(stat_dtype).contiguous();
  const int64_t batch = input.size(0), channels = input.size(1);
  const int64_t length = batch * channels == 0 ? 0 : input.numel() / (batch * channels);
  Tensor x = dense(input, dtype), dy = dense(grad_out, dtype);
  Tensor grad_input, grad_weight, grad_bias;
  if (output_mask[0]) grad_input = newEmpty(input.sizes(), x.options());
  // Parameter gradients have the parameters' dtype (float32 when mixed).
  if (output_mask[1]) grad_weight = newEmpty({channels}, x.options());
  if (output_mask[2]) grad_bias = newEmpty({channels}, x.options());
  if (channels > 0 && (output_mask[0] || output_mask[1] || output_mask[2])) {
    if (input.numel() == 0) {
      if (grad_weight.defined()) grad_weight.zero_();
      if (grad_bias.defined()) grad_bias.zero_();
    } else {
      const int64_t flags = (weight.defined() ? 1 : 0) | (output_mask[0] ? 2 : 0) |
                            (output_mask[1] ? 4 : 0) | (output_mask[2] ? 8 : 0);
      const Tensor& gi = output_mask[0] ? grad_input : x;  // placeholder: not written
      launchNn("batch_norm_bwd", dtype,
               {rowMajorMemref(gi, {batch, channels, length}),
                rowMajorMemref(dy, {batch, channels, length}),
                rowMajorMemref(x, {batch, channels, length}), paramArg(grad_weight, x),
                paramArg(grad_bias, x), paramArg(weight, x), memrefOf(mean_c), memrefOf(stat_c),
                maiaKernelArgFloat(maiaDtypeF64, eps), intArg(training ? 1 : 0), intArg(flags)},
               programsFor(channels, input.numel() * kWorkPerElement), input.device());
    }
  }
  if (grad_input.defined() && dtype != input.scalar_type())
    grad_input = grad_input.to(input.scalar_type());
  return {grad_input, grad_weight, grad_bias};
}

/// _native_batch_norm_legit (what decompositions and export emit): the same
/// kernel; running statistics are updated in place when training.
std::tuple<Tensor, Tensor, Tensor> batchNormLegit(const Tensor& input,
                                                  const std::optional<Tensor>& weight,
                                                  const std::optional<Tensor>& bias,
                                                  Tensor& running_mean, Tensor& running_var,
                                                  bool training, double momentum, double eps) {
  return batchNorm(input, weight, bias, running_mean, running_var, training, momentum, eps);
}

std::tuple<Tensor, Tensor, Tensor> batchNormLegitNoStats(const Tensor& input,
                                                         const std::optional<Tensor>& weight,
                                                         const std::optional<Tensor>& bias,
                                                         bool training, double momentum,
                                                         double eps) {
  return batchNorm(input, weight, bias, std::nullopt, std::nullopt, training, momentum, eps);
}

/// _batch_norm_with_update (what torch.export and compiled training graphs
/// emit for a BatchNorm in training): the same kernel, plus the empty
/// reserve buffer the CPU and CUDA native paths return.
std::tuple<Tensor, Tensor, Tensor, Tensor> batchNormWithUpdate(
    const Tensor& input, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
    Tensor& running_mean, Tensor& running_var, double momentum, double eps) {
  auto [output, save_mean, save_invstd] =
      batchNorm(input, weight, bias, running_mean, running_var, /*training=*/true, momentum, eps);
  return {output, save_mean, save_invstd, newEmpty({0}, input.options().dtype(at::kByte))};
}

/// batch_norm_backward (the derivative of _batch_norm_with_update): `update`
/// is training; the reserve buffer is unused by the native kernel.
std::tuple<Tensor, Tensor, Tensor> batchNormBackwardWithReserve(
    const Tensor& grad_out, const Tensor& input, const Tensor& weight,
    const std::optional<Tensor>& running_mean, const std::optional<Tensor>& running_var,
    const std::optional<Tensor>& save_mean, const std::optional<Tensor>& save_invstd, bool update,
    double eps, std::array<bool, 3> output_mask, const Tensor& /*reserve*/) {
  return batchNormBackward(grad_out, input, weight, running_mean, running_var, save_mean,
                           save_invstd, update, eps, output_mask);
}

MAIA_NATIVE_KERNELS(m) {
  m.impl("native_batch_norm", TORCH_FN(batchNorm));
  m.impl("_native_batch_norm_legit", TORCH_FN(batchNormLegit));
  m.impl("_native_batch_norm_legit.no_stats", TORCH_FN(batchNormLegitNoStats));
  m.impl("native_batch_norm_backward", TORCH_FN(batchNormBackward));
  m.impl("_batch_norm_with_update", TORCH_FN(batchNormWithUpdate));
  m.impl("batch_norm_backward", TORCH_FN(batchNormBackwardWithReserve));
}

}  // namespace
}  // namespace torch_maia::ops
