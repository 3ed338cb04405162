// NN and indexing operators on maia: softmax/log_softmax, layer_norm,
// nll_loss (and with them cross_entropy), index_select (and with it
// embedding), index_add, gather, scatter/scatter_add, cat (and with it stack)
// and the backwards autograd needs, launched from the NN kernel
// binary (runtime/kernels/nn, maia_nn_kernels.maiabin) on the current stream.
//
// Inputs are made contiguous on the device first (a device copy when they
// are not) and viewed as the rank-2/3 memrefs the kernels take. Indices are
// converted to int64 on the device. Out-of-range indices are not checked on
// the host (that would need a synchronization): the kernel traps, which the
// driver reports as a sticky device error naming the kernel at the next
// synchronizing call, like CUDA's device-side assert.
#include <ATen/ExpandUtils.h>
#include <ATen/OpMathType.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/native/ScatterGatherChecks.h>
#include <ATen/native/TypeProperties.h>
#include <ATen/ops/full.h>
#include <ATen/ops/embedding_dense_backward.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <string>
#include <tuple>
#include <vector>

#include "MaiaCheck.h"
#include "MaiaStream.h"
#include "WorkSplit.h"
#include "ops/EagerKernels.h"
#include "ops/MaiaOps.h"
#include "ops/Fallback.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;

void checkFloating(const char* op, const Tensor& t) {
  TORCH_CHECK(at::isFloatingType(t.scalar_type()), op, ": \"", op,
              "\" not implemented for '", t.scalar_type(), "'");
}

int64_t prod(c10::IntArrayRef sizes, int64_t begin, int64_t end) {
  int64_t n = 1;
  for (int64_t d = begin; d < end; ++d) n *= sizes[d];
  return n;
}

// ---------------------------------------------------------------------------
// softmax / log_softmax

Tensor softmaxForward(const Tensor& self, int64_t dim, bool half_to_float, bool log) {
  const char* op = log ? "log_softmax" : "softmax";
  TORCH_CHECK(!half_to_float, op, " with half to float conversion is not supported on maia");
  checkFloating(op, self);
  Tensor x = (self.dim() == 0 ? self.view({1}) : self).contiguous();
  dim = at::maybe_wrap_dim(dim, x.dim());
  Tensor out = newEmpty(x.sizes(), x.options());
  if (x.numel() > 0) {
    int64_t outer = prod(x.sizes(), 0, dim), n = x.size(dim),
            inner = prod(x.sizes(), dim + 1, x.dim());
    launchNn("softmax", x.scalar_type(),
           {memrefOf(out.view({outer, n, inner})), memrefOf(x.view({outer, n, inner})),
            intArg(log)},
           programsFor(outer * inner, x.numel()), x.device());
  }
  return self.dim() == 0 ? out.view(c10::IntArrayRef{}) : out;
}

Tensor softmaxBackward(const Tensor& grad, const Tensor& output, int64_t dim,
                       c10::ScalarType input_dtype, bool log) {
  checkFloating(log ? "log_softmax_backward" : "softmax_backward", output);
  TORCH_CHECK(grad.sizes() == output.sizes(), "softmax backward: grad_output ", grad.sizes(),
              " and output ", output.sizes(), " differ in shape");
  Tensor y = (output.dim() == 0 ? output.view({1}) : output).contiguous();
  Tensor g = grad.to(output.scalar_type()).reshape(y.sizes()).contiguous();
  dim = at::maybe_wrap_dim(dim, y.dim());
  Tensor gi = newEmpty(y.sizes(), y.options());
  if (y.numel() > 0) {
    int64_t outer = prod(y.sizes(), 0, dim), n = y.size(dim),
            inner = prod(y.sizes(), dim + 1, y.dim());
    launchNn("softmax_bwd", y.scalar_type(),
           {memrefOf(gi.view({outer, n, inner})), memrefOf(g.view({outer, n, inner})),
            memrefOf(y.view({outer, n, inner})), intArg(log)},
           programsFor(outer * inner, y.numel()), y.device());
  }
  Tensor result = output.dim() == 0 ? gi.view(c10::IntArrayRef{}) : gi;
  return result.scalar_type() == input_dtype ? result : result.to(input_dtype);
}

// ---------------------------------------------------------------------------
// layer_norm

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

// ---------------------------------------------------------------------------
// nll_loss (reduction: 0 none, 1 mean, 2 sum)

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

// ---------------------------------------------------------------------------
// index_select, embedding backward

Tensor indexSelect(const Tensor& self, int64_t dim, const Tensor& index) {
  TORCH_CHECK_INDEX(index.dim() <= 1, "index_select(): Index is supposed to be a vector");
  TORCH_CHECK_INDEX(index.scalar_type() == c10::ScalarType::Long ||
                        index.scalar_type() == c10::ScalarType::Int,
                    "index_select(): Expected dtype int32 or int64 for index");
  TORCH_CHECK(self.device() == index.device(),
              "Expected all tensors to be on the same device, but found at least two devices, ",
              self.device(), " and ", index.device());
  dim = at::maybe_wrap_dim(dim, self.dim());
  Tensor x = (self.dim() == 0 ? self.view({1}) : self).contiguous();
  Tensor idx = index.reshape({-1}).to(c10::ScalarType::Long).contiguous();
  std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end());
  shape[dim] = idx.numel();
  Tensor out = newEmpty(shape, x.options());
  if (out.numel() > 0) {
    TORCH_CHECK_INDEX(x.size(dim) > 0, "index_select(): self indexing axis dim should be "
                      "positive");
    int64_t outer = prod(x.sizes(), 0, dim), n = x.size(dim),
            inner = prod(x.sizes(), dim + 1, x.dim()), m = idx.numel();
    launchNn("index_select", x.scalar_type(),
           {memrefOf(out.view({outer, m, inner})), memrefOf(x.view({outer, n, inner})),
            memrefOf(idx)},
           programsFor(outer * m, out.numel()), x.device());
  }
  return self.dim() == 0 ? out.view(c10::IntArrayRef{}) : out;
}

/// out[..., index[k], ...] += alpha * source[..., k, ...] along dim, in place.
Tensor& indexAddInto(Tensor& out, int64_t dim, const Tensor& index, const Tensor& source,
                     const at::Scalar& alpha) {
  dim = at::maybe_wrap_dim(dim, out.dim());
  TORCH_CHECK_INDEX(index.dim() <= 1, "index_add_(): Index is supposed to be a vector");
  TORCH_CHECK(index.scalar_type() == c10::ScalarType::Long ||
                  index.scalar_type() == c10::ScalarType::Int,
              "index_add_(): Expected dtype int32/int64 for index");
  TORCH_CHECK(out.scalar_type() == source.scalar_type(),
              "index_add_(): self (", out.scalar_type(), ") and source (",
              source.scalar_type(), ") must have the same scalar type");
  TORCH_CHECK(out.dim() == source.dim() || (out.dim() <= 1 && source.dim() <= 1),
              "index_add_(): self and source must have the same number of dimensions");
  const int64_t count = index.numel();
  TORCH_CHECK(source.dim() == 0 ? count == 1 : source.size(dim) == count,
              "index_add_(): Number of indices (", count,
              ") should be equal to source.size(dim) (",
              source.dim() == 0 ? 1 : source.size(dim), ")");
  for (int64_t d = 0; d < out.dim(); ++d)
    if (d != dim)
      TORCH_CHECK(out.size(d) == source.size(d), "index_add_(): self and source must have "
                  "the same sizes apart from dimension ", dim, ", got ", out.sizes(), " and ",
                  source.sizes());
  if (count == 0 || out.numel() == 0) return out;
  Tensor target = (out.dim() == 0 ? out.view({1}) : out);
  Tensor dense = target.is_contiguous() ? target : target.contiguous();
  Tensor src = (source.dim() == 0 ? source.view({1}) : source).contiguous();
  Tensor idx = index.reshape({-1}).to(c10::ScalarType::Long).contiguous();
  const int64_t outer = prod(dense.sizes(), 0, dim), n = dense.size(dim),
                inner = prod(dense.sizes(), dim + 1, dense.dim());
  launchNn("index_add", dense.scalar_type(),
         {memrefOf(dense.view({outer, n, inner})), memrefOf(idx),
          memrefOf(src.view({outer, count, inner})),
          maiaKernelArgFloat(maiaDtypeF64, alpha.isIntegral(true) ? static_cast<double>(
                                                  alpha.toLong()) : alpha.toDouble()),
          intArg(alpha.isIntegral(true) ? alpha.toLong() : static_cast<int64_t>(
                                               alpha.toDouble()))},
         programsFor(outer * ((inner + 255) / 256), count * inner), dense.device());
  if (!dense.is_same(target)) target.copy_(dense);
  return out;
}

Tensor embeddingDenseBackward(const Tensor& grad_output, const Tensor& indices,
                              int64_t num_weights, int64_t padding_idx,
                              bool scale_grad_by_freq) {
  checkFloating("embedding_dense_backward", grad_output);
  if (scale_grad_by_freq) {
    // Counting index frequencies has no device kernel yet: computed on the host.
    noteHostFallback("aten::embedding_dense_backward");
    return at::embedding_dense_backward(grad_output.cpu(), indices.cpu(), num_weights,
                                        padding_idx, true)
        .to(grad_output.device());
  }
  const int64_t width = grad_output.size(-1);
  Tensor idx = indices.reshape({-1}).to(c10::ScalarType::Long).contiguous();
  Tensor grad = grad_output.contiguous().view({idx.numel(), width});
  Tensor gw = at::empty({num_weights, width}, grad.options());
  if (gw.numel() == 0) return gw;
  launchNn("embedding_bwd", grad.scalar_type(),
         {memrefOf(gw), memrefOf(grad), memrefOf(idx), intArg(padding_idx)},
         programsFor(width, idx.numel() * width + gw.numel()), grad.device());
  return gw;
}

// ---------------------------------------------------------------------------
// gather / scatter over rank-4 views (leading extent-1 dimensions pad lower
// ranks; more than 4 dimensions are computed on the host, counted as a
// fallback).

Tensor rank4(const Tensor& t) {
  Tensor v = t;
  while (v.dim() < 4) v = v.unsqueeze(0);
  return v;
}

Tensor gatherOp(const Tensor& self, int64_t dim, const Tensor& index, bool sparse_grad) {
  dim = at::maybe_wrap_dim(dim, self.dim());
  at::native::scatter_gather_dtype_check("gather", self, index, std::nullopt);
  Tensor out = at::empty(index.sizes(), self.options());
  if (index.numel() == 0) return out;
  at::native::gather_shape_check(self, dim, index);
  TORCH_CHECK_INDEX(self.numel() > 0, "gather(): self is empty but index is not");
  if (self.dim() > 4) {
    noteHostFallback("aten::gather");
    return at::gather(self.cpu(), dim, index.cpu(), sparse_grad).to(self.device());
  }
  Tensor idx = index.to(c10::ScalarType::Long);
  const int64_t pad = 4 - std::max<int64_t>(self.dim(), 1);
  launchNn("gather", self.scalar_type(),
         {memrefOf(rank4(out)), memrefOf(rank4(self)), memrefOf(rank4(idx)),
          intArg(dim + pad)},
         programsFor(index.numel() / std::max<int64_t>(index.dim() ? index.size(dim) : 1, 1),
                     index.numel()),
         self.device());
  return out;
}

/// Scatters src (index's shape or larger) into out in place; mode 0 assign,
/// 1 add, 2 multiply.
Tensor& scatterInto(Tensor& out, int64_t dim, const Tensor& index, const Tensor& src,
                    int64_t mode, const char* name) {
  dim = at::maybe_wrap_dim(dim, out.dim());
  at::native::scatter_gather_dtype_check(name, out, index, src);
  at::native::scatter_shape_check(out, dim, index, src);
  if (index.numel() == 0) return out;
  TORCH_CHECK_INDEX(out.numel() > 0, name, "(): self is empty but index is not");
  if (out.dim() > 4) {
    noteHostFallback(std::string("aten::") + name);
    Tensor host = out.cpu();
    if (mode == 0) host.scatter_(dim, index.cpu(), src.cpu());
    else host.scatter_(dim, index.cpu(), src.cpu(), mode == 1 ? "add" : "multiply");
    out.copy_(host);
    return out;
  }
  Tensor idx = index.to(c10::ScalarType::Long);
  const int64_t pad = 4 - std::max<int64_t>(out.dim(), 1);
  launchNn("scatter", out.scalar_type(),
         {memrefOf(rank4(out)), memrefOf(rank4(idx)), memrefOf(rank4(src)), intArg(dim + pad),
          intArg(mode)},
         programsFor(index.numel() / std::max<int64_t>(index.dim() ? index.size(dim) : 1, 1),
                     index.numel()),
         out.device());
  return out;
}

int64_t reduceMode(c10::string_view reduce) {
  if (reduce == "add") return 1;
  if (reduce == "multiply") return 2;
  TORCH_CHECK(false, "reduce argument must be either add or multiply.");
}

Tensor scalarSource(const Tensor& self, const Tensor& index, const at::Scalar& value) {
  return at::full(index.sizes(), value, self.options());
}

// ---------------------------------------------------------------------------
// cat (and stack through it): one device copy per input into its slice.

Tensor& catOut(const at::ITensorListRef& list, int64_t dim, Tensor& out) {
  std::vector<Tensor> tensors(list.begin(), list.end());
  TORCH_CHECK(!tensors.empty(), "torch.cat(): expected a non-empty list of Tensors");
  // Legacy behaviour: 1-D empty tensors are skipped.
  auto skipped = [](const Tensor& t) { return t.dim() == 1 && t.size(0) == 0; };
  const Tensor* ref = nullptr;
  for (const Tensor& t : tensors)
    if (!skipped(t)) {
      ref = &t;
      break;
    }
  c10::ScalarType dtype = at::native::result_type(list);
  if (ref == nullptr) {
    at::native::resize_output(out, {0});
    return out;
  }
  TORCH_CHECK(ref->dim() > 0, "zero-dimensional tensor (at position 0) cannot be concatenated");
  dim = at::maybe_wrap_dim(dim, ref->dim());
  std::vector<int64_t> shape(ref->sizes().begin(), ref->sizes().end());
  int64_t total = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    TORCH_CHECK(t.device() == ref->device(), "Expected all tensors to be on the same device, but "
                "found at least two devices, ", ref->device(), " and ", t.device(), "!");
    if (skipped(t)) continue;
    TORCH_CHECK(t.dim() == ref->dim(), "Tensors must have same number of dimensions: got ",
                ref->dim(), " and ", t.dim());
    for (int64_t d = 0; d < t.dim(); ++d)
      TORCH_CHECK(d == dim || t.size(d) == ref->size(d), "Sizes of tensors must match except "
                  "in dimension ", dim, ". Expected size ", ref->size(d), " but got size ",
                  t.size(d), " for tensor number ", i, " in the list.");
    total += t.size(dim);
  }
  shape[dim] = total;
  TORCH_CHECK(c10::canCast(dtype, out.scalar_type()), "torch.cat(): input types can't be cast "
              "to the desired output type ", out.scalar_type());
  at::native::resize_output(out, shape);
  int64_t offset = 0;
  for (const Tensor& t : tensors) {
    if (skipped(t)) continue;
    if (t.size(dim) > 0) out.narrow(dim, offset, t.size(dim)).copy_(t);
    offset += t.size(dim);
  }
  return out;
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("gather", &gatherOp);
  m.impl("scatter.src", [](const Tensor& self, int64_t dim, const Tensor& index,
                           const Tensor& src) {
    Tensor out = self.clone(at::MemoryFormat::Contiguous);
    return scatterInto(out, dim, index, src, 0, "scatter");
  });
  m.impl("scatter_.src", [](Tensor& self, int64_t dim, const Tensor& index,
                            const Tensor& src) -> Tensor& {
    return scatterInto(self, dim, index, src, 0, "scatter_");
  });
  m.impl("scatter.value", [](const Tensor& self, int64_t dim, const Tensor& index,
                             const at::Scalar& value) {
    Tensor out = self.clone(at::MemoryFormat::Contiguous);
    return scatterInto(out, dim, index, scalarSource(self, index, value), 0, "scatter");
  });
  m.impl("scatter_.value", [](Tensor& self, int64_t dim, const Tensor& index,
                              const at::Scalar& value) -> Tensor& {
    return scatterInto(self, dim, index, scalarSource(self, index, value), 0, "scatter_");
  });
  m.impl("scatter.reduce", [](const Tensor& self, int64_t dim, const Tensor& index,
                              const Tensor& src, c10::string_view reduce) {
    Tensor out = self.clone(at::MemoryFormat::Contiguous);
    return scatterInto(out, dim, index, src, reduceMode(reduce), "scatter");
  });
  m.impl("scatter.value_reduce", [](const Tensor& self, int64_t dim, const Tensor& index,
                                    const at::Scalar& value, c10::string_view reduce) {
    Tensor out = self.clone(at::MemoryFormat::Contiguous);
    return scatterInto(out, dim, index, scalarSource(self, index, value), reduceMode(reduce),
                       "scatter");
  });
  m.impl("scatter_add", [](const Tensor& self, int64_t dim, const Tensor& index,
                           const Tensor& src) {
    Tensor out = self.clone(at::MemoryFormat::Contiguous);
    return scatterInto(out, dim, index, src, 1, "scatter_add");
  });
  m.impl("scatter_add_", [](Tensor& self, int64_t dim, const Tensor& index,
                            const Tensor& src) -> Tensor& {
    return scatterInto(self, dim, index, src, 1, "scatter_add_");
  });
  m.impl("cat", [](const at::ITensorListRef& tensors, int64_t dim) {
    std::vector<Tensor> list(tensors.begin(), tensors.end());
    TORCH_CHECK(!list.empty(), "torch.cat(): expected a non-empty list of Tensors");
    Tensor out = at::empty({0}, list[0].options().dtype(at::native::result_type(tensors)));
    return catOut(tensors, dim, out);
  });
  m.impl("cat.out", [](const at::ITensorListRef& tensors, int64_t dim,
                       Tensor& out) -> Tensor& { return catOut(tensors, dim, out); });

  m.impl("_softmax", [](const Tensor& self, int64_t dim, bool half_to_float) {
    return softmaxForward(self, dim, half_to_float, false);
  });
  m.impl("_log_softmax", [](const Tensor& self, int64_t dim, bool half_to_float) {
    return softmaxForward(self, dim, half_to_float, true);
  });
  m.impl("_softmax_backward_data", [](const Tensor& grad, const Tensor& output, int64_t dim,
                                      c10::ScalarType input_dtype) {
    return softmaxBackward(grad, output, dim, input_dtype, false);
  });
  m.impl("_log_softmax_backward_data", [](const Tensor& grad, const Tensor& output,
                                          int64_t dim, c10::ScalarType input_dtype) {
    return softmaxBackward(grad, output, dim, input_dtype, true);
  });
  m.impl("native_layer_norm", &layerNorm);
  m.impl("native_layer_norm_backward", &layerNormBackward);
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
  m.impl("index_select", &indexSelect);
  m.impl("index_add", [](const Tensor& self, int64_t dim, const Tensor& index,
                         const Tensor& source, const at::Scalar& alpha) {
    Tensor out = self.clone(at::MemoryFormat::Contiguous);
    return indexAddInto(out, dim, index, source, alpha);
  });
  m.impl("index_add_", [](Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                          const at::Scalar& alpha) -> Tensor& {
    return indexAddInto(self, dim, index, source, alpha);
  });
  m.impl("index_add.out", [](const Tensor& self, int64_t dim, const Tensor& index,
                             const Tensor& source, const at::Scalar& alpha,
                             Tensor& out) -> Tensor& {
    at::native::resize_output(out, self.sizes());
    if (!out.is_same(self)) out.copy_(self);
    return indexAddInto(out, dim, index, source, alpha);
  });
  m.impl("embedding_dense_backward", [](const Tensor& grad_output, const Tensor& indices,
                                        c10::SymInt num_weights, c10::SymInt padding_idx,
                                        bool scale_grad_by_freq) {
    return embeddingDenseBackward(grad_output, indices, num_weights.expect_int(),
                                  padding_idx.expect_int(), scale_grad_by_freq);
  });
}

}  // namespace
}  // namespace torch_maia::ops
