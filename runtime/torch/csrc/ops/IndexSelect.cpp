// Indexing along one dimension on maia: index_select (and with it
// embedding's forward) and index_add (functional, in-place, out=), launched
// from the NN kernel binary (runtime/kernels/nn, maia_nn_kernels.maiabin)
// over [outer, n, inner] views of contiguous operands (a device copy when
// they are not), n the indexed dimension. Advanced indexing (x[idx],
// index_put_) is in Indexing.cpp.
//
// Indices are converted to int64 on the device; out-of-range ones trap in
// the kernel, not checked on the host (docs/torch.md, "Native kernels").
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include <vector>

#include "WorkSplit.h"
#include "ops/EagerKernels.h"
#include "ops/HostRouting.h"
#include "ops/MaiaOps.h"
#include "ops/OpUtils.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;

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
  if (at::isReducedFloatingType(out.scalar_type()))
    return accumulateInOpMath(out, [&](Tensor& wide) -> Tensor& {
      return indexAddInto(wide, dim, index, source.to(wide.scalar_type()), alpha);
    });
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

MAIA_NATIVE_KERNELS(m) {
  m.impl("index_select", TORCH_FN(indexSelect));
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
}

}  // namespace
}  // namespace torch_maia::ops
