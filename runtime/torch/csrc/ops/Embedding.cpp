// embedding_dense_backward and embedding_renorm_ (max_norm) on maia
// (embedding's forward is index_select, IndexSelect.cpp): one launch each
// of the NN kernel binary (runtime/kernels/nn, maia_nn_kernels.maiabin).
// The backward adds each gradient row to the weight row its index names;
// scale_grad_by_freq computes on the host, counted as a fallback. The renorm
// scales each distinct named row whose norm exceeds max_norm (indices
// sorted on the device first).
//
// Indices are converted to int64 on the device; out-of-range ones trap in
// the kernel, not checked on the host (docs/torch.md, "Native kernels").
#include <ATen/TensorUtils.h>
#include <ATen/ops/embedding_dense_backward.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include "WorkSplit.h"
#include "ops/EagerKernels.h"
#include "ops/Fallback.h"
#include "ops/HostRouting.h"
#include "ops/OpUtils.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;

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

Tensor& embeddingRenorm(Tensor& self, const Tensor& indices, double max_norm,
                        double norm_type) {
  at::TensorArg self_arg(self, "self", 1), indices_arg(indices, "indices", 2);
  at::checkDim("embedding_renorm_", self_arg, 2);
  at::checkScalarTypes("embedding_renorm_", indices_arg, {at::kLong, at::kInt});
  checkFloating("embedding_renorm_", self);
  TORCH_CHECK(self.is_contiguous() || self.stride(1) == 1,
              "embedding_renorm_: expected weight rows of unit stride, got strides ",
              self.strides());
  const Tensor sorted = std::get<0>(indices.reshape({-1}).to(at::kLong).sort());
  if (sorted.numel() == 0 || self.numel() == 0) return self;
  launchNn("embedding_renorm", self.scalar_type(),
           {memrefOf(self), memrefOf(sorted), maiaKernelArgFloat(maiaDtypeF64, max_norm),
            maiaKernelArgFloat(maiaDtypeF64, norm_type)},
           programsFor(sorted.numel(), sorted.numel() * self.size(1)), self.device());
  return self;
}

MAIA_NATIVE_KERNELS(m) {
  m.impl("embedding_renorm_", TORCH_FN(embeddingRenorm));
  m.impl("embedding_dense_backward", [](const Tensor& grad_output, const Tensor& indices,
                                        c10::SymInt num_weights, c10::SymInt padding_idx,
                                        bool scale_grad_by_freq) {
    return embeddingDenseBackward(grad_output, indices, num_weights.expect_int(),
                                  padding_idx.expect_int(), scale_grad_by_freq);
  });
}

}  // namespace
}  // namespace torch_maia::ops
