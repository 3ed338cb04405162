// gather and scatter on maia: gather, scatter (a tensor or a value as the
// source, with or without reduce, functional and in-place), scatter_add,
// scatter_reduce and index_reduce (a scatter_reduce over an expanded index),
// launched from the NN kernel binary (runtime/kernels/nn,
// maia_nn_kernels.maiabin) over rank-8 views: leading extent-1 dimensions pad
// lower ranks; more than 8 dimensions are computed on the host, counted as a
// fallback.
//
// Indices are converted to int64 on the device; out-of-range ones trap in
// the kernel, not checked on the host (docs/torch.md, "Native kernels").
#include <ATen/Dispatch.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/ScatterGatherChecks.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <ATen/ops/gather.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/zeros_like.h>
#include <torch/library.h>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "WorkSplit.h"
#include "ops/EagerKernels.h"
#include "ops/Fallback.h"
#include "ops/HostRouting.h"
#include "ops/MaiaOps.h"
#include "ops/OpUtils.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;

constexpr int64_t kRank = 8;  // the kernels' memref rank (nn.h's kScatterRank)

/// t as a rank-kRank memref: leading dimensions of extent 1.
maiaKernelArg paddedMemref(const Tensor& t) { return memrefOf(t, kRank); }

Tensor gatherOp(const Tensor& self, int64_t dim, const Tensor& index, bool sparse_grad) {
  dim = at::maybe_wrap_dim(dim, self.dim());
  at::native::scatter_gather_dtype_check("gather", self, index, std::nullopt);
  Tensor out = at::empty(index.sizes(), self.options());
  if (index.numel() == 0) return out;
  at::native::gather_shape_check(self, dim, index);
  TORCH_CHECK_INDEX(self.numel() > 0, "gather(): self is empty but index is not");
  if (self.dim() > kRank) {
    noteHostFallback("aten::gather");
    return at::gather(self.cpu(), dim, index.cpu(), sparse_grad).to(self.device());
  }
  Tensor idx = index.to(c10::ScalarType::Long);
  const int64_t pad = kRank - std::max<int64_t>(self.dim(), 1);
  launchNn("gather", self.scalar_type(),
         {paddedMemref(out), paddedMemref(self), paddedMemref(idx),
          intArg(dim + pad)},
         programsFor(index.numel() / std::max<int64_t>(index.dim() ? index.size(dim) : 1, 1),
                     index.numel()),
         self.device());
  return out;
}

/// The scatter kernel's modes.
enum ScatterMode : int64_t { kAssign = 0, kAdd = 1, kMultiply = 2, kAmax = 3, kAmin = 4 };

/// Scatters src (index's shape or larger) into out in place; float16/
/// bfloat16 sums accumulate in float32, rounded once (sum_in_op_math), as
/// the CPU's scatter_add does.
Tensor& scatterInto(Tensor& out, int64_t dim, const Tensor& index, const Tensor& src,
                    int64_t mode, const char* name, bool sum_in_op_math = true) {
  dim = at::maybe_wrap_dim(dim, out.dim());
  at::native::scatter_gather_dtype_check(name, out, index, src);
  at::native::scatter_shape_check(out, dim, index, src);
  if (index.numel() == 0) return out;
  TORCH_CHECK_INDEX(out.numel() > 0, name, "(): self is empty but index is not");
  if (out.dim() > kRank) {
    noteHostFallback(std::string("aten::") + name);
    Tensor host = out.cpu();
    if (mode == kAssign) host.scatter_(dim, index.cpu(), src.cpu());
    else if (mode == kAdd || mode == kMultiply)
      host.scatter_(dim, index.cpu(), src.cpu(), mode == kAdd ? "add" : "multiply");
    else host.scatter_reduce_(dim, index.cpu(), src.cpu(), mode == kAmax ? "amax" : "amin");
    out.copy_(host);
    return out;
  }
  if (sum_in_op_math && mode == kAdd && at::isReducedFloatingType(out.scalar_type()))
    return accumulateInOpMath(out, [&](Tensor& wide) -> Tensor& {
      return scatterInto(wide, dim, index, src.to(wide.scalar_type()), mode, name);
    });
  Tensor idx = index.to(c10::ScalarType::Long);
  const int64_t pad = kRank - std::max<int64_t>(out.dim(), 1);
  launchNn("scatter", out.scalar_type(),
         {paddedMemref(out), paddedMemref(idx), paddedMemref(src), intArg(dim + pad),
          intArg(mode)},
         programsFor(index.numel() / std::max<int64_t>(index.dim() ? index.size(dim) : 1, 1),
                     index.numel()),
         out.device());
  return out;
}

int64_t reduceMode(c10::string_view reduce) {
  if (reduce == "add") return kAdd;
  if (reduce == "multiply") return kMultiply;
  TORCH_CHECK(false, "reduce argument must be either add or multiply.");
}

Tensor scalarSource(const Tensor& self, const Tensor& index, const at::Scalar& value) {
  return at::full(index.sizes(), value, self.options());
}

/// What a reduced position starts from when include_self is false.
at::Scalar reductionIdentity(c10::string_view reduce, c10::ScalarType dtype) {
  if (reduce == "sum" || reduce == "mean") return 0;
  if (reduce == "prod") return 1;
  const bool is_max = reduce == "amax";
  if (at::isFloatingType(dtype))
    return is_max ? -std::numeric_limits<double>::infinity()
                  : std::numeric_limits<double>::infinity();
  if (dtype == c10::ScalarType::Bool) return !is_max;
  at::Scalar bound;
  AT_DISPATCH_INTEGRAL_TYPES(dtype, "scatter_reduce", [&] {
    bound = is_max ? std::numeric_limits<scalar_t>::lowest() : std::numeric_limits<scalar_t>::max();
  });
  return bound;
}

/// scatter_reduce (and index_reduce through an expanded index) into out, a
/// copy of self: positions start from self (include_self) or the
/// reduction's identity; mean divides by the count, flooring integers.
/// float16/bfloat16 sums and means are accumulated in float32 and rounded
/// once (sum_in_op_math), as the CPU's scatter_reduce does.
Tensor& scatterReduceInto(Tensor& out, int64_t dim, const Tensor& index, const Tensor& src,
                          c10::string_view reduce, bool include_self, const char* name,
                          bool sum_in_op_math = true) {
  if (sum_in_op_math && (reduce == "sum" || reduce == "mean") &&
      at::isReducedFloatingType(out.scalar_type()))
    return accumulateInOpMath(out, [&](Tensor& wide) -> Tensor& {
      return scatterReduceInto(wide, dim, index, src.to(wide.scalar_type()), reduce,
                               include_self, name);
    });
  int64_t mode = kAdd;
  if (reduce == "prod") mode = kMultiply;
  else if (reduce == "amax") mode = kAmax;
  else if (reduce == "amin") mode = kAmin;
  else TORCH_CHECK(reduce == "sum" || reduce == "mean", name, ": reduce argument must be either "
                   "sum, prod, mean, amax or amin, got ", reduce);
  if (!include_self)
    scatterInto(out, dim, index,
                scalarSource(out, index, reductionIdentity(reduce, out.scalar_type())), kAssign,
                name);
  scatterInto(out, dim, index, src, mode, name, sum_in_op_math);
  if (reduce == "mean" && index.numel() > 0) {
    Tensor count = include_self ? at::ones_like(out) : at::zeros_like(out);
    scatterInto(count, dim, index, at::ones_like(src), kAdd, name);
    count.masked_fill_(count.eq(0), 1);
    if (out.is_floating_point()) out.div_(count);
    else out.div_(count, "floor");
  }
  return out;
}

/// index_reduce's 1-D index as scatter's: index along dim, broadcast over
/// source's other dimensions.
Tensor scatterIndexOf(const Tensor& index, const Tensor& source, int64_t dim) {
  TORCH_CHECK_INDEX(index.dim() <= 1, "index_reduce_(): Index is supposed to be a vector");
  TORCH_CHECK(index.scalar_type() == c10::ScalarType::Long ||
                  index.scalar_type() == c10::ScalarType::Int,
              "index_reduce_(): Expected dtype int32/int64 for index");
  if (source.dim() == 0) return index.reshape({});
  TORCH_CHECK_INDEX(source.size(dim) == index.numel(), "index_reduce_(): Number of indices (",
                    index.numel(), ") should be equal to source.size(dim) (", source.size(dim),
                    ")");
  std::vector<int64_t> shape(source.dim(), 1);
  shape[dim] = index.numel();
  return index.reshape(shape).expand(source.sizes());
}

Tensor& indexReduceInto(Tensor& out, int64_t dim, const Tensor& index, const Tensor& source,
                        c10::string_view reduce, bool include_self) {
  TORCH_CHECK(reduce == "prod" || reduce == "mean" || reduce == "amax" || reduce == "amin",
              "index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got ",
              reduce, ".");
  dim = at::maybe_wrap_dim(dim, source.dim());
  // The CPU's index_reduce sums in the 16-bit type itself (its kernel
  // accumulates in scalar_t, unlike scatter_reduce's): matched.
  return scatterReduceInto(out, dim, scatterIndexOf(index, source, dim), source, reduce,
                           include_self, "index_reduce", /*sum_in_op_math=*/false);
}

/// out (resized) holding a copy of self, for the out= variants.
Tensor& copyOfSelf(const Tensor& self, Tensor& out) {
  return out.is_same(self) ? out : resultInto(out, self);
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
  m.impl("scatter_.reduce", [](Tensor& self, int64_t dim, const Tensor& index,
                               const Tensor& src, c10::string_view reduce) -> Tensor& {
    return scatterInto(self, dim, index, src, reduceMode(reduce), "scatter_");
  });
  m.impl("scatter_.value_reduce", [](Tensor& self, int64_t dim, const Tensor& index,
                                     const at::Scalar& value,
                                     c10::string_view reduce) -> Tensor& {
    return scatterInto(self, dim, index, scalarSource(self, index, value), reduceMode(reduce),
                       "scatter_");
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
  m.impl("scatter_reduce.two", [](const Tensor& self, int64_t dim, const Tensor& index,
                                  const Tensor& src, c10::string_view reduce, bool include_self) {
    Tensor out = self.clone(at::MemoryFormat::Contiguous);
    return scatterReduceInto(out, dim, index, src, reduce, include_self, "scatter_reduce");
  });
  m.impl("scatter_reduce_.two", [](Tensor& self, int64_t dim, const Tensor& index,
                                   const Tensor& src, c10::string_view reduce,
                                   bool include_self) -> Tensor& {
    return scatterReduceInto(self, dim, index, src, reduce, include_self, "scatter_reduce_");
  });
  m.impl("scatter_reduce.two_out",
         [](const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
            c10::string_view reduce, bool include_self, Tensor& out) -> Tensor& {
           return scatterReduceInto(copyOfSelf(self, out), dim, index, src, reduce,
                                    include_self, "scatter_reduce");
         });
  m.impl("index_reduce", [](const Tensor& self, int64_t dim, const Tensor& index,
                            const Tensor& source, c10::string_view reduce, bool include_self) {
    Tensor out = self.clone(at::MemoryFormat::Contiguous);
    return indexReduceInto(out, dim, index, source, reduce, include_self);
  });
  m.impl("index_reduce_", [](Tensor& self, int64_t dim, const Tensor& index,
                             const Tensor& source, c10::string_view reduce,
                             bool include_self) -> Tensor& {
    return indexReduceInto(self, dim, index, source, reduce, include_self);
  });
  m.impl("index_reduce.out",
         [](const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
            c10::string_view reduce, bool include_self, Tensor& out) -> Tensor& {
           return indexReduceInto(copyOfSelf(self, out), dim, index, source, reduce,
                                  include_self);
         });
}

}  // namespace
}  // namespace torch_maia::ops
