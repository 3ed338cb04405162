// gather and scatter on maia: gather, scatter (a tensor or a value as the
// source, with or without reduce, functional and in-place) and scatter_add,
// launched from the NN kernel binary (runtime/kernels/nn,
// maia_nn_kernels.maiabin) over rank-4 views: leading extent-1 dimensions pad
// lower ranks; more than 4 dimensions are computed on the host, counted as a
// fallback.
//
// Indices are converted to int64 on the device; out-of-range ones trap in
// the kernel, not checked on the host (docs/torch.md, "Native kernels").
#include <ATen/WrapDimUtils.h>
#include <ATen/native/ScatterGatherChecks.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <ATen/ops/gather.h>
#include <torch/library.h>

#include <algorithm>
#include <string>

#include "WorkSplit.h"
#include "ops/EagerKernels.h"
#include "ops/Fallback.h"
#include "ops/HostRouting.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;

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

MAIA_NATIVE_KERNELS(m) {
  m.impl("gather", TORCH_FN(gatherOp));
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
}

}  // namespace
}  // namespace torch_maia::ops
