// embedding_bag on maia: _embedding_bag (and its forward-only twin), the
// dense backward and the per-sample-weights backward, one launch each of
// the NN kernel binary (runtime/kernels/nn/embedding.h).
//
// The auxiliary outputs (offset2bag, bag_size, max_indices) are the CPU's,
// dtype and shape included: offset2bag is empty where the CPU takes its
// fast sum path (sum without padding_idx, weights other than float64);
// bag_size is 0 for sum; max_indices is 0s for sum, bag_size for mean and
// the argmax rows for max. Indices and offsets out of range, offsets that
// do not start at 0 or decrease, trap in the kernel (docs/torch.md,
// "Native kernels") instead of a host round trip per call.
#include <ATen/TensorUtils.h>
#include <ATen/ops/_embedding_bag_dense_backward.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <ATen/ops/searchsorted.h>
#include <ATen/ops/zeros.h>
#include <torch/library.h>

#include <tuple>

#include "WorkSplit.h"
#include "ops/EagerKernels.h"
#include "ops/Fallback.h"
#include "ops/HostRouting.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;
using OptionalTensor = const std::optional<Tensor>&;

constexpr int64_t kSum = 0, kMean = 1, kMax = 2;

/// Whether an optional tensor argument was passed (and is defined).
bool given(OptionalTensor t) { return t.has_value() && t->defined(); }

Tensor asLongVector(const Tensor& t) { return t.reshape({-1}).to(at::kLong).contiguous(); }

/// The sample weights as a kernel argument: the tensor, or a one-element
/// dummy the kernel does not read.
Tensor weightsOrDummy(OptionalTensor per_sample_weights, const Tensor& like) {
  if (given(per_sample_weights))
    return per_sample_weights->contiguous();
  return at::empty({1}, like.options());
}

void checkArguments(const Tensor& weight, const Tensor& indices, const Tensor& offsets,
                    int64_t mode, OptionalTensor per_sample_weights) {
  at::TensorArg weight_arg(weight, "weight", 1), indices_arg(indices, "indices", 1),
      offsets_arg(offsets, "offsets", 1);
  at::checkScalarTypes("embedding_bag", weight_arg,
                       {at::kHalf, at::kBFloat16, at::kFloat, at::kDouble});
  at::checkScalarTypes("embedding_bag", indices_arg, {at::kLong, at::kInt});
  at::checkScalarTypes("embedding_bag", offsets_arg, {at::kLong, at::kInt});
  at::checkDim("embedding_bag", indices_arg, 1);
  at::checkDim("embedding_bag", offsets_arg, 1);
  TORCH_CHECK(weight.dim() == 2, "embedding_bag: weight has to be a 2D Tensor, but got ",
              weight.dim(), "D");
  TORCH_CHECK(mode >= kSum && mode <= kMax, "embedding_bag: unknown mode ", mode);
  if (given(per_sample_weights)) {
    TORCH_CHECK(mode == kSum, "embedding_bag: per_sample_weights only supported with mode='sum'");
    TORCH_CHECK(per_sample_weights->scalar_type() == weight.scalar_type(),
                "embedding_bag: expected per_sample_weights to have the dtype of weight (",
                weight.scalar_type(), "), got ", per_sample_weights->scalar_type());
    TORCH_CHECK(per_sample_weights->dim() == 1 &&
                    per_sample_weights->numel() == indices.numel(),
                "embedding_bag: expected per_sample_weights to be 1D with the size of "
                "indices (", indices.numel(), "), got ", per_sample_weights->sizes());
  }
}

std::tuple<Tensor, Tensor, Tensor, Tensor> embeddingBag(
    const Tensor& weight, const Tensor& indices_in, const Tensor& offsets_in,
    bool /*scale_grad_by_freq: backward only*/, int64_t mode, bool /*sparse*/,
    OptionalTensor per_sample_weights, bool include_last_offset, int64_t padding_idx) {
  checkArguments(weight, indices_in, offsets_in, mode, per_sample_weights);
  // Indices and offsets of different integer types: both the wider, as the CPU.
  const c10::ScalarType index_type =
      indices_in.scalar_type() == at::kLong || offsets_in.scalar_type() == at::kLong
          ? at::kLong
          : at::kInt;
  const Tensor indices = asLongVector(indices_in);
  Tensor offsets = asLongVector(offsets_in);
  const int64_t count = indices.numel();
  if (include_last_offset) {
    TORCH_CHECK(offsets.numel() >= 1, "include_last_offset: numBags should be at least 1");
  } else {
    offsets = at::cat({offsets, at::full({1}, count, offsets.options())});
  }
  const int64_t bags = offsets.numel() - 1, width = weight.size(1);
  const auto long_options = indices.options();
  Tensor out = at::empty({bags, width}, weight.options());
  Tensor max_indices = at::empty({mode == kMax ? bags : 1, mode == kMax ? width : 1},
                                 long_options);
  Tensor bag_size = at::empty({bags}, long_options);
  Tensor offset2bag = at::empty({count}, long_options);
  if (bags > 0) {
    const Tensor contiguous_weight = weight.contiguous();
    launchNn("embedding_bag", weight.scalar_type(),
             {memrefOf(out), memrefOf(max_indices), memrefOf(bag_size), memrefOf(offset2bag),
              memrefOf(contiguous_weight), memrefOf(indices), memrefOf(offsets),
              memrefOf(weightsOrDummy(per_sample_weights, weight)), intArg(mode),
              intArg(padding_idx),
              intArg(given(per_sample_weights))},
             programsFor(bags, (count + bags) * width), weight.device());
  }
  const bool fast_sum = mode == kSum && padding_idx < 0 && weight.scalar_type() != at::kDouble;
  if (fast_sum) offset2bag = at::empty({0}, long_options);
  if (mode == kSum) bag_size = at::zeros({bags}, long_options);
  if (mode == kSum) max_indices = at::zeros({bags}, long_options);
  if (mode == kMean) max_indices = bag_size;
  return {out, offset2bag.to(index_type), bag_size.to(index_type), max_indices.to(index_type)};
}

/// offset2bag as the forward returned it, or where the CPU's fast sum path
/// left it empty, computed: the bag of index i is the last offset at or
/// before i.
Tensor offset2bagOf(const Tensor& offset2bag, const Tensor& offsets, int64_t count) {
  if (offset2bag.numel() == count) return asLongVector(offset2bag);
  const Tensor positions = at::arange(count, offsets.options().dtype(at::kLong));
  return at::searchsorted(asLongVector(offsets), positions, /*out_int32=*/false,
                          /*right=*/true)
      .sub(1);
}

Tensor embeddingBagDenseBackward(const Tensor& grad, const Tensor& indices_in,
                                 const Tensor& offset2bag_in, const Tensor& bag_size_in,
                                 const Tensor& max_indices_in, int64_t num_weights,
                                 bool scale_grad_by_freq, int64_t mode,
                                 OptionalTensor per_sample_weights, int64_t padding_idx) {
  if (scale_grad_by_freq) {
    // Counting index frequencies has no device kernel yet (as embedding's).
    noteHostFallback("aten::_embedding_bag_dense_backward");
    std::optional<Tensor> weights_cpu;
    if (given(per_sample_weights))
      weights_cpu = per_sample_weights->cpu();
    return at::_embedding_bag_dense_backward(grad.cpu(), indices_in.cpu(), offset2bag_in.cpu(),
                                             bag_size_in.cpu(), max_indices_in.cpu(),
                                             num_weights, true, mode, weights_cpu, padding_idx)
        .to(grad.device());
  }
  const Tensor indices = asLongVector(indices_in);
  TORCH_CHECK(mode == kMax || offset2bag_in.numel() == indices.numel(),
              "_embedding_bag_dense_backward: offset2bag has ", offset2bag_in.numel(),
              " elements for ", indices.numel(), " indices (an empty offset2bag is filled in "
              "by _embedding_bag_backward)");
  const Tensor contiguous_grad = grad.contiguous();
  const int64_t width = grad.size(-1);
  Tensor grad_weight = at::empty({num_weights, width}, grad.options());
  if (grad_weight.numel() == 0) return grad_weight;
  const Tensor offset2bag = asLongVector(offset2bag_in);
  const Tensor bag_size = asLongVector(bag_size_in);
  const Tensor max_indices = mode == kMax ? max_indices_in.to(at::kLong).contiguous()
                                           : at::empty({1, 1}, indices.options());
  launchNn("embedding_bag_bwd", grad.scalar_type(),
           {memrefOf(grad_weight), memrefOf(contiguous_grad), memrefOf(indices),
            memrefOf(offset2bag), memrefOf(bag_size), memrefOf(max_indices),
            memrefOf(weightsOrDummy(per_sample_weights, grad)), intArg(mode),
            intArg(padding_idx),
            intArg(given(per_sample_weights))},
           programsFor(width, indices.numel() * width + grad_weight.numel()), grad.device());
  return grad_weight;
}

Tensor embeddingBagWeightsBackward(const Tensor& grad, const Tensor& weight,
                                   const Tensor& indices_in, const Tensor& offsets,
                                   const Tensor& offset2bag_in, int64_t mode,
                                   int64_t padding_idx) {
  TORCH_CHECK(mode == kSum,
              "embedding_bag_backward: per_sample_weights only supported for mode='sum'");
  const Tensor indices = asLongVector(indices_in);
  const int64_t count = indices.numel();
  const Tensor offset2bag = offset2bagOf(offset2bag_in, offsets, count);
  Tensor out = at::empty({count}, grad.options());
  if (count == 0) return out;
  const Tensor contiguous_grad = grad.contiguous(), contiguous_weight = weight.contiguous();
  launchNn("embedding_bag_psw_bwd", grad.scalar_type(),
           {memrefOf(out), memrefOf(contiguous_grad), memrefOf(contiguous_weight),
            memrefOf(indices), memrefOf(offset2bag.contiguous()), intArg(padding_idx)},
           programsFor(count, count * grad.size(-1)), grad.device());
  return out;
}

/// The autograd entry: sparse gradients are refused (maia has no sparse
/// tensors), an empty offset2bag filled in, then the dense backward.
Tensor embeddingBagBackward(const Tensor& grad, const Tensor& indices, const Tensor& offsets,
                            const Tensor& offset2bag, const Tensor& bag_size,
                            const Tensor& max_indices, int64_t num_weights,
                            bool scale_grad_by_freq, int64_t mode, bool sparse,
                            OptionalTensor per_sample_weights, int64_t padding_idx) {
  TORCH_CHECK(!sparse, "embedding_bag on maia: sparse gradients (sparse=True) are not "
              "supported, maia has no sparse tensors; use sparse=False");
  return embeddingBagDenseBackward(grad, indices,
                                   offset2bagOf(offset2bag, offsets, indices.numel()), bag_size,
                                   max_indices, num_weights, scale_grad_by_freq, mode,
                                   per_sample_weights, padding_idx);
}

MAIA_NATIVE_KERNELS(m) {
  m.impl("_embedding_bag_backward",
         [](const Tensor& grad, const Tensor& indices, const Tensor& offsets,
            const Tensor& offset2bag, const Tensor& bag_size, const Tensor& max_indices,
            c10::SymInt num_weights, bool scale_grad_by_freq, int64_t mode, bool sparse,
            OptionalTensor per_sample_weights, int64_t padding_idx) {
           return embeddingBagBackward(grad, indices, offsets, offset2bag, bag_size,
                                       max_indices, num_weights.expect_int(),
                                       scale_grad_by_freq, mode, sparse, per_sample_weights,
                                       padding_idx);
         });
  // Two lambdas: host routing keys its entries by the callable's type.
  m.impl("_embedding_bag", [](const Tensor& weight, const Tensor& indices,
                              const Tensor& offsets, bool scale_grad_by_freq, int64_t mode,
                              bool sparse, OptionalTensor per_sample_weights,
                              bool include_last_offset, int64_t padding_idx) {
    return embeddingBag(weight, indices, offsets, scale_grad_by_freq, mode, sparse,
                        per_sample_weights, include_last_offset, padding_idx);
  });
  m.impl("_embedding_bag_forward_only",
         [](const Tensor& weight, const Tensor& indices, const Tensor& offsets,
            bool scale_grad_by_freq, int64_t mode, bool sparse,
            OptionalTensor per_sample_weights, bool include_last_offset, int64_t padding_idx) {
           return embeddingBag(weight, indices, offsets, scale_grad_by_freq, mode, sparse,
                               per_sample_weights, include_last_offset, padding_idx);
         });
  m.impl("_embedding_bag_dense_backward",
         [](const Tensor& grad, const Tensor& indices, const Tensor& offset2bag,
            const Tensor& bag_size, const Tensor& max_indices, c10::SymInt num_weights,
            bool scale_grad_by_freq, int64_t mode, OptionalTensor per_sample_weights,
            int64_t padding_idx) {
           return embeddingBagDenseBackward(grad, indices, offset2bag, bag_size, max_indices,
                                            num_weights.expect_int(), scale_grad_by_freq, mode,
                                            per_sample_weights, padding_idx);
         });
  m.impl("_embedding_bag_per_sample_weights_backward", TORCH_FN(embeddingBagWeightsBackward));
}

}  // namespace
}  // namespace torch_maia::ops
