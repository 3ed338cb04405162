// Layer normalization on maia: native_layer_norm and its backward, launched
// from the NN kernel binary (runtime/kernels/nn, maia_nn_kernels.maiabin)
// over the input made contiguous (a device copy when it is not) and viewed
// as [rows, normalized elements]. Batch normalization is in BatchNorm.cpp.
#include <ATen/OpMathType.h>
#include <torch/library.h>

#include <array>
#include <optional>
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

std::tuple<Tensor, Tensor, Tensor> layerNorm(const Tensor& input,
                                             c10::SymIntArrayRef normalized_sym,
                                             const std::optional<Tensor>& weight_opt,
                                             const std::optional<Tensor>& bias_opt, double eps) {
  checkFloating("layer_norm", input);
  c10::IntArrayRef normalized = C10_AS_INTARRAYREF_SLOW(normalized_sym);
  const int64_t axis = input.dim() - static_cast<int64_t>(normalized.size());
  TORCH_CHECK(!normalized.empty(), "Expected normalized_shape to be at least 1-dimensional");
  TORCH_CHECK(axis >= 0 && input.sizes().slice(axis).equals(normalized),
              "Given normalized_shape=", normalized, ", expected input with shape [*, ",
              normalized, "], but got input of size", input.sizes());
  const int64_t m = prod(input.sizes(), 0, axis), n = prod(input.sizes(), axis, input.dim());
  Tensor x = input.contiguous().view({m, n});
  Tensor out = newEmpty({m, n}, x.options());
  // The statistics in the compute type (float32 for half types), as the
  // fake kernel PyTorch's compiler uses for non-CPU devices says (CUDA's).
  const auto stat_options = x.options().dtype(at::toOpMathType(x.scalar_type()));
  Tensor mean = newEmpty({m}, stat_options), rstd = newEmpty({m}, stat_options);
  auto param = [&](const std::optional<Tensor>& p, const char* what) -> Tensor {
    if (!p.has_value() || !p->defined()) return Tensor();
    TORCH_CHECK(p->numel() == n, "layer_norm: expected ", what, " of ", n,
                " elements, got ", p->sizes());
    return p->to(x.scalar_type()).contiguous().view({n});
  };
  Tensor w = param(weight_opt, "weight"), b = param(bias_opt, "bias");
  if (m > 0) {
    launchNn("layer_norm", x.scalar_type(),
           {memrefOf(out), memrefOf(x), memrefOf(w.defined() ? w : out.view({-1})),
            memrefOf(b.defined() ? b : out.view({-1})), memrefOf(mean), memrefOf(rstd),
            maiaKernelArgFloat(maiaDtypeF64, eps), intArg(w.defined()), intArg(b.defined())},
           programsFor(m, m * n), x.device());
  }
  std::vector<int64_t> stat_shape(input.sizes().begin(), input.sizes().begin() + axis);
  stat_shape.resize(input.dim(), 1);
  return {out.view(input.sizes()), mean.view(stat_shape), rstd.view(stat_shape)};
}

std::tuple<Tensor, Tensor, Tensor> layerNormBackward(
    const Tensor& grad_out, const Tensor& input, c10::SymIntArrayRef normalized_sym,
    const Tensor& mean_in, const Tensor& rstd_in, const std::optional<Tensor>& weight_opt,
    const std::optional<Tensor>& bias_opt, std::array<bool, 3> mask) {
  checkFloating("layer_norm_backward", input);
  c10::IntArrayRef normalized = C10_AS_INTARRAYREF_SLOW(normalized_sym);
  const int64_t axis = input.dim() - static_cast<int64_t>(normalized.size());
  const int64_t m = prod(input.sizes(), 0, axis), n = prod(input.sizes(), axis, input.dim());
  const auto dtype = input.scalar_type();
  Tensor x = input.contiguous().view({m, n});
  Tensor dy = grad_out.to(dtype).contiguous().view({m, n});
  const auto stat_dtype = at::toOpMathType(dtype);
  Tensor mean = mean_in.to(stat_dtype).contiguous().view({m});
  Tensor rstd = rstd_in.to(stat_dtype).contiguous().view({m});
  const bool has_w = weight_opt.has_value() && weight_opt->defined();
  const bool has_b = bias_opt.has_value() && bias_opt->defined();
  Tensor w = has_w ? weight_opt->to(dtype).contiguous().view({n}) : Tensor();
  Tensor dx, dw, db;
  if (mask[0]) {
    dx = newEmpty({m, n}, x.options());
    if (m > 0)
      launchNn("layer_norm_bwd", dtype,
             {memrefOf(dx), memrefOf(dy), memrefOf(x), memrefOf(mean), memrefOf(rstd),
              memrefOf(has_w ? w : x.view({-1})), intArg(has_w)},
             programsFor(m, m * n), x.device());
    dx = dx.view(input.sizes());
  }
  const bool want_w = mask[1], want_b = mask[2];
  if (want_w || want_b) {
    Tensor dw_flat = newEmpty({n}, x.options()), db_flat = newEmpty({n}, x.options());
    if (m == 0) {
      dw_flat.zero_();
      db_flat.zero_();
    } else if (n > 0) {
      launchNn("layer_norm_bwd_wb", dtype,
             {memrefOf(dw_flat), memrefOf(db_flat), memrefOf(dy), memrefOf(x), memrefOf(mean),
              memrefOf(rstd), intArg(want_w), intArg(want_b)},
             programsFor(n, m * n), x.device());
    }
    if (want_w) {
      dw = dw_flat.view(has_w ? weight_opt->sizes() : normalized);
      if (has_w && weight_opt->scalar_type() != dtype) dw = dw.to(weight_opt->scalar_type());
    }
    if (want_b) {
      db = db_flat.view(has_b ? bias_opt->sizes() : normalized);
      if (has_b && bias_opt->scalar_type() != dtype) db = db.to(bias_opt->scalar_type());
    }
  }
  return {dx, dw, db};
}

MAIA_NATIVE_KERNELS(m) {
  m.impl("native_layer_norm", TORCH_FN(layerNorm));
  m.impl("native_layer_norm_backward", TORCH_FN(layerNormBackward));
}

}  // namespace
}  // namespace torch_maia::ops
