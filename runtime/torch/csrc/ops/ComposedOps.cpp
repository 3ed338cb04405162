// Operators with no kernel of their own on maia, composed of maia's native
// operators (each a device kernel on the current stream) with the CPU's
// checks and results: count_nonzero, aminmax, trace, eye, index_fill,
// index_copy, take, put, masked_scatter, renorm, linalg_cross, unique and
// unique_consecutive. None synchronizes with the
// host but unique (its size) and masked_scatter with an empty source.
#include <ATen/AccumulateType.h>
#include <ATen/ExpandUtils.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/amax.h>
#include <ATen/ops/amin.h>
#include <ATen/ops/any.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/index.h>
#include <ATen/ops/index_put.h>
#include <ATen/ops/linalg_vector_norm.h>
#include <ATen/ops/ne.h>
#include <ATen/ops/nonzero.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <torch/library.h>

#include <optional>
#include <tuple>
#include <vector>

#include "ops/HostRouting.h"
#include "ops/MaiaOps.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;
using IndexList = c10::List<std::optional<Tensor>>;

Tensor countNonzero(const Tensor& self, c10::IntArrayRef dims) {
  return at::ne(self, 0).sum(dims, /*keepdim=*/false, at::kLong);
}

std::tuple<Tensor, Tensor> aminmaxOp(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  if (dim.has_value()) {
    const int64_t d = at::maybe_wrap_dim(*dim, self.dim());
    TORCH_CHECK(self.dim() == 0 || self.size(d) != 0, "aminmax(): Expected reduction dim ", d,
                " to have non-zero size.");
    return {at::amin(self, {d}, keepdim), at::amax(self, {d}, keepdim)};
  }
  TORCH_CHECK(self.numel() > 0, "aminmax(): cannot compute aminmax over an empty dimension as "
              "the operation has no identity.");
  return {at::amin(self, {}, keepdim), at::amax(self, {}, keepdim)};
}

Tensor traceOp(const Tensor& self) {
  TORCH_CHECK(self.dim() == 2, "trace: expected a matrix, but got tensor with dim ", self.dim());
  const c10::ScalarType dtype = c10::isIntegralType(self.scalar_type(), /*includeBool=*/true)
                                    ? at::kLong
                                    : self.scalar_type();
  return self.diagonal().sum(dtype);
}

/// eye.m_out as the CPU's: zeros with ones on the main diagonal.
Tensor& eyeOut(int64_t n, int64_t m, Tensor& out) {
  TORCH_CHECK(n >= 0, "n must be greater or equal to 0, got ", n);
  TORCH_CHECK(m >= 0, "m must be greater or equal to 0, got ", m);
  out.resize_({n, m});
  out.zero_();
  const int64_t diagonal = std::min(n, m);
  if (diagonal > 0) {
    Tensor ones = out.as_strided({diagonal}, {out.stride(0) + out.stride(1)});
    ones.fill_(1);
  }
  return out;
}

/// The index list selecting `index` along dim (full slices before it).
IndexList alongDim(int64_t dim, const Tensor& index) {
  IndexList indices;
  for (int64_t d = 0; d < dim; ++d) indices.push_back(std::nullopt);
  indices.push_back(index.dim() == 0 ? index.reshape({1}) : index);
  return indices;
}

void checkIndex(const char* op, const Tensor& self, int64_t dim, const Tensor& index) {
  TORCH_CHECK_INDEX(index.dim() <= 1, op, "(): Index should have dimension 1 or 0 (got ",
                    index.dim(), ")");
  TORCH_CHECK_INDEX(index.scalar_type() == at::kLong, op, "(): Expected a long tensor for "
                    "index, but got ", index.scalar_type());
  (void)at::maybe_wrap_dim(dim, self.dim());
}

/// index_fill_: self[..., index, ...] = value along dim (an out-of-range
/// index traps in the index kernel: a sticky device error).
Tensor& indexFill(Tensor& self, int64_t dim, const Tensor& index, const Tensor& value) {
  checkIndex("index_fill_", self, dim, index);
  TORCH_CHECK(value.dim() == 0, "index_fill_ only supports a 0-dimensional value tensor, but "
              "got tensor with ", value.dim(), " dimension(s).");
  if (self.dim() == 0) {
    if (index.numel() > 0) self.copy_(value);
    return self;
  }
  const int64_t d = at::maybe_wrap_dim(dim, self.dim());
  return self.index_put_(alongDim(d, index), value.to(self.options()));
}

Tensor& indexCopy(Tensor& self, int64_t dim, const Tensor& index, const Tensor& source) {
  checkIndex("index_copy_", self, dim, index);
  TORCH_CHECK(self.scalar_type() == source.scalar_type(), "index_copy_(): self and source "
              "expected to have the same dtype, but got (self) ", self.scalar_type(),
              " and (source) ", source.scalar_type());
  if (self.dim() == 0) {
    if (index.numel() > 0) self.copy_(source.reshape({}));
    return self;
  }
  const int64_t d = at::maybe_wrap_dim(dim, self.dim());
  TORCH_CHECK_INDEX(source.dim() == 0 || source.size(d) == index.numel(), "index_copy_(): "
                    "Number of indices (", index.numel(), ") should be equal to source.size(dim) (",
                    source.dim() == 0 ? 1 : source.size(d), ")");
  return self.index_put_(alongDim(d, index), source);
}

Tensor takeOp(const Tensor& self, const Tensor& index) {
  TORCH_CHECK_INDEX(index.scalar_type() == at::kLong, "take(): Expected a long tensor for "
                    "index, but got ", index.scalar_type());
  TORCH_CHECK_INDEX(self.numel() > 0 || index.numel() == 0, "take(): tried to take from an "
                    "empty tensor");
  IndexList indices;
  indices.push_back(index.reshape({-1}));
  return at::index(self.reshape({-1}), indices).view(index.sizes());
}

Tensor& putOp(Tensor& self, const Tensor& index, const Tensor& source, bool accumulate) {
  TORCH_CHECK_INDEX(index.scalar_type() == at::kLong, "put_(): Expected a long tensor for "
                    "index, but got ", index.scalar_type());
  TORCH_CHECK(self.scalar_type() == source.scalar_type(), "put_(): self and source expected to "
              "have the same dtype, but got self.dtype = ", self.scalar_type(),
              " and source.dtype = ", source.scalar_type());
  TORCH_CHECK_INDEX(index.numel() == source.numel(), "put_(): Expected source and index to "
                    "have the same number of elements, but got source.numel() = ",
                    source.numel(), ", index.numel() = ", index.numel());
  if (index.numel() == 0) return self;
  IndexList indices;
  indices.push_back(index.reshape({-1}));
  // A strided self is written through a contiguous copy, then copied back.
  Tensor flat = self.contiguous().view({-1});
  flat.index_put_(indices, source.reshape({-1}), accumulate);
  if (!flat.is_alias_of(self)) self.copy_(flat.view(self.sizes()));
  return self;
}

/// linalg_cross: the components' products along dim (inputs broadcast).
Tensor linalgCross(const Tensor& self, const Tensor& other, int64_t dim) {
  TORCH_CHECK(self.dim() == other.dim(), "linalg.cross: inputs must have the same number of "
              "dimensions.");
  const int64_t d = at::maybe_wrap_dim(dim, self.dim());
  TORCH_CHECK(self.size(d) == 3 && other.size(d) == 3, "linalg.cross: inputs dimension ", dim,
              " must have length 3. Got ", self.size(d), " and ", other.size(d));
  auto [a_owned, b_owned] = at::expand_outplace(self, other);
  const Tensor &a = *a_owned, &b = *b_owned;
  // a_i * b_j - a_j * b_i, component (i + 2) % 3 of the product.
  auto component = [&](int64_t i, int64_t j) {
    return a.select(d, i).mul(b.select(d, j)).sub(a.select(d, j).mul(b.select(d, i)));
  };
  return at::stack({component(1, 2), component(2, 0), component(0, 1)}, d);
}

/// Where groups of equal neighbours start in rows [n, rest] (n >= 1): the
/// first row, and every row differing anywhere from the previous one (NaN
/// differs from everything, so each NaN starts a group, as on the CPU).
Tensor groupStarts(const Tensor& rows) {
  const int64_t n = rows.size(0);
  Tensor starts = newEmpty({n}, rows.options().dtype(at::kBool));
  starts.narrow(0, 0, 1).fill_(true);
  Tensor later = starts.narrow(0, 1, n - 1);
  at::any_out(later, rows.narrow(0, 1, n - 1).ne(rows.narrow(0, 0, n - 1)), 1);
  return starts;
}

/// The first row of each group (starts from groupStarts) shaped as `shape`
/// with its first size replaced by the number of groups.
Tensor firstOfGroups(const Tensor& rows, const Tensor& starts, c10::IntArrayRef shape) {
  Tensor firsts = at::nonzero(starts).view({-1});
  std::vector<int64_t> sizes = shape.vec();
  sizes[0] = firsts.numel();
  return rows.index_select(0, firsts).view(sizes);
}

/// How many members each of `groups` groups has, from each member's group.
Tensor groupSizes(const Tensor& group, int64_t groups) {
  return at::zeros({groups}, group.options()).scatter_add_(0, group, at::ones_like(group));
}

/// torch.unique by a stable sort: a value starts a group where it differs
/// from its predecessor (each NaN its own group, as the CPU's); the group
/// numbers scattered back through the sort's permutation are the inverse
/// indices. The number of unique values needs one synchronization, as on
/// every device. Results not asked for are empty, as the CPU's.
std::tuple<Tensor, Tensor, Tensor> unique2(const Tensor& self, bool sorted, bool return_inverse,
                                           bool return_counts) {
  const c10::TensorOptions longs = self.options().dtype(at::kLong);
  Tensor flat = self.reshape({-1});
  const int64_t n = flat.numel();
  Tensor inverse = newEmpty(return_inverse ? self.sizes() : c10::IntArrayRef{0}, longs);
  if (n == 0) return {newEmpty({0}, self.options()), inverse, newEmpty({0}, longs)};
  auto [values, order] = flat.sort(/*stable=*/true, 0, /*descending=*/false);
  Tensor starts = groupStarts(values.view({n, 1}));
  Tensor unique = firstOfGroups(values, starts, {n});
  Tensor counts = newEmpty({0}, longs);
  if (return_inverse || return_counts) {
    Tensor group = starts.cumsum(0, at::kLong).sub_(1);
    if (return_inverse) inverse.view({-1}).scatter_(0, order, group);
    if (return_counts) counts = groupSizes(group, unique.numel());
  }
  return {unique, inverse, counts};
}

/// torch.unique along dim: the slices along dim as rows [n, rest], sorted
/// lexicographically by stable sorts of one column at a time from the last
/// (least significant) to the first; a row starts a group where any element
/// differs from the previous row. With no elements: the CPU's empty results
/// when dim is the empty one, its error otherwise.
std::tuple<Tensor, Tensor, Tensor> uniqueDim(const Tensor& self, int64_t dim, bool sorted,
                                             bool return_inverse, bool return_counts) {
  const int64_t d = at::maybe_wrap_dim(dim, self.dim());
  const c10::TensorOptions longs = self.options().dtype(at::kLong);
  if (self.numel() == 0) {
    TORCH_CHECK(self.size(d) == 0, "There are 0 sized dimensions, and they aren't selected, so "
                "unique cannot be applied");
    return {newEmpty(self.sizes(), self.options()), newEmpty({0}, longs), newEmpty({0}, longs)};
  }
  Tensor moved = self.movedim(d, 0);
  const int64_t n = moved.size(0);
  Tensor rows = moved.reshape({n, -1});
  Tensor order = at::arange(n, longs);
  for (int64_t column = rows.size(1) - 1; column >= 0; --column) {
    Tensor keys = rows.select(1, column).index_select(0, order);
    order = order.index_select(0, std::get<1>(keys.sort(/*stable=*/true, 0, false)));
  }
  Tensor sorted_rows = rows.index_select(0, order);
  Tensor starts = groupStarts(sorted_rows);
  Tensor unique = firstOfGroups(sorted_rows, starts, moved.sizes()).movedim(0, d);
  Tensor inverse = newEmpty({return_inverse ? n : 0}, longs);
  Tensor counts = newEmpty({0}, longs);
  if (return_inverse || return_counts) {
    Tensor group = starts.cumsum(0, at::kLong).sub_(1);
    if (return_inverse) inverse.scatter_(0, order, group);
    if (return_counts) counts = groupSizes(group, unique.size(d));
  }
  return {unique.contiguous(), inverse, counts};
}

/// torch.unique_consecutive: groups of equal neighbours (rows along dim),
/// the same group starts as unique's without the sort.
std::tuple<Tensor, Tensor, Tensor> uniqueConsecutive(const Tensor& self, bool return_inverse,
                                                     bool return_counts,
                                                     std::optional<int64_t> dim) {
  const c10::TensorOptions longs = self.options().dtype(at::kLong);
  const int64_t d = dim.has_value() ? at::maybe_wrap_dim(*dim, self.dim()) : 0;
  Tensor moved = dim.has_value() ? self.movedim(d, 0) : self.reshape({-1});
  const int64_t n = moved.dim() == 0 ? 1 : moved.size(0);
  const c10::IntArrayRef inverse_shape = dim.has_value() ? c10::IntArrayRef(n) : self.sizes();
  if (self.numel() == 0) {
    TORCH_CHECK(!dim.has_value() || self.size(d) == 0, "There are 0 sized dimensions, and "
                "they aren't selected, so unique cannot be applied");
    return {newEmpty(dim.has_value() ? self.sizes() : c10::IntArrayRef{0}, self.options()),
            newEmpty(return_inverse ? inverse_shape : c10::IntArrayRef{0}, longs),
            newEmpty({0}, longs)};
  }
  Tensor rows = moved.reshape({n, -1});
  Tensor starts = groupStarts(rows);
  Tensor unique = firstOfGroups(rows, starts, moved.sizes());
  if (dim.has_value()) unique = unique.movedim(0, d).contiguous();
  Tensor group = starts.cumsum(0, at::kLong).sub_(1);
  Tensor inverse = return_inverse ? group.view(inverse_shape) : newEmpty({0}, longs);
  Tensor counts = newEmpty({0}, longs);
  if (return_counts) counts = groupSizes(group, unique.size(dim.has_value() ? d : 0));
  return {unique, inverse, counts};
}

/// masked_scatter_: the true positions of mask (broadcast to self, row-major)
/// take source's elements in order: each position's rank among the true
/// ones, by a prefix sum, gathers from source. A source too short for the
/// mask traps in the gather (a sticky device error) instead of the CPU's
/// host check.
Tensor& maskedScatter(Tensor& self, const Tensor& mask, const Tensor& source) {
  TORCH_CHECK(mask.scalar_type() == at::kBool, "masked_scatter_ only supports boolean masks, "
              "but got mask with dtype ", mask.scalar_type());
  TORCH_CHECK(self.scalar_type() == source.scalar_type(), "masked_scatter_: expected self and "
              "source to have same dtypes but got", self.scalar_type(), " and ",
              source.scalar_type());
  if (self.numel() == 0) return self;
  Tensor flat_mask = mask.expand(self.sizes()).reshape({-1});
  if (source.numel() == 0) {  // nothing to take: valid only for an all-false mask
    TORCH_CHECK(!flat_mask.any().item<bool>(), "masked_scatter: expected source to have at "
                "least as many elements as the ones in mask");
    return self;
  }
  Tensor rank = flat_mask.cumsum(0, at::kLong).sub_(1).clamp_min_(0);
  Tensor taken = source.reshape({-1}).index_select(0, rank);
  return self.copy_(at::where(flat_mask, taken, self.reshape({-1})).view(self.sizes()));
}

/// renorm: each slice along dim scaled to a p-norm of at most maxnorm, the
/// norm in float for float16/bfloat16 (the CPU's accumulate type).
Tensor renormOp(const Tensor& self, const at::Scalar& p, int64_t dim, const at::Scalar& maxnorm) {
  TORCH_CHECK(!p.isComplex() && p.toDouble() > 0, "renorm: non-positive-norm not supported");
  TORCH_CHECK(!maxnorm.isComplex() && maxnorm.toDouble() >= 0,
              "renorm: expected maxnorm to be >= 0 but got ", maxnorm.toDouble());
  TORCH_CHECK(self.dim() > 1, "renorm: input needs at least 2 dimensions, got ", self.dim(),
              " dimensions");
  const int64_t d = at::maybe_wrap_dim(dim, self.dim());
  std::vector<int64_t> others;
  for (int64_t i = 0; i < self.dim(); ++i)
    if (i != d) others.push_back(i);
  const c10::ScalarType acc = at::toAccumulateType(self.scalar_type(), /*is_cuda=*/true);
  Tensor norm = at::linalg_vector_norm(self, p, others, /*keepdim=*/true, acc);
  const double limit = maxnorm.toDouble();
  Tensor factor = at::where(norm.gt(limit), norm.add(1e-7).reciprocal().mul(limit),
                            at::ones_like(norm));
  return self.mul(factor).to(self.scalar_type());
}

}  // namespace

MAIA_NATIVE_KERNELS(m) {
  m.impl("masked_scatter_", TORCH_FN(maskedScatter));
  m.impl("renorm", TORCH_FN(renormOp));
  m.impl("renorm_", [](Tensor& self, const at::Scalar& p, int64_t dim,
                       const at::Scalar& maxnorm) -> Tensor& {
    return self.copy_(renormOp(self, p, dim, maxnorm));
  });
  m.impl("renorm.out", [](const Tensor& self, const at::Scalar& p, int64_t dim,
                          const at::Scalar& maxnorm, Tensor& out) -> Tensor& {
    return resultInto(out, renormOp(self, p, dim, maxnorm));
  });
  m.impl("unique_consecutive", TORCH_FN(uniqueConsecutive));
  m.impl("unique_dim", TORCH_FN(uniqueDim));
  m.impl("_unique2", TORCH_FN(unique2));
  m.impl("_unique", [](const Tensor& self, bool sorted, bool return_inverse) {
    auto [unique, inverse, counts] = unique2(self, sorted, return_inverse, false);
    return std::make_tuple(unique, inverse);
  });
  m.impl("count_nonzero.dim_IntList", TORCH_FN(countNonzero));
  m.impl("aminmax", TORCH_FN(aminmaxOp));
  m.impl("aminmax.out", [](const Tensor& self, std::optional<int64_t> dim, bool keepdim,
                           Tensor& min, Tensor& max) -> std::tuple<Tensor&, Tensor&> {
    auto [lo, hi] = aminmaxOp(self, dim, keepdim);
    resultInto(min, lo);
    resultInto(max, hi);
    return {min, max};
  });
  m.impl("trace", TORCH_FN(traceOp));
  m.impl("eye.m_out", TORCH_FN(eyeOut));
  m.impl("eye.out", [](int64_t n, Tensor& out) -> Tensor& { return eyeOut(n, n, out); });
  m.impl("index_fill_.int_Scalar", [](Tensor& self, int64_t dim, const Tensor& index,
                                      const at::Scalar& value) -> Tensor& {
    Tensor filler = newEmpty({}, self.options());  // filled on the stream, no host copy
    filler.fill_(value);
    return indexFill(self, dim, index, filler);
  });
  m.impl("index_fill_.int_Tensor", TORCH_FN(indexFill));
  m.impl("index_copy_", TORCH_FN(indexCopy));
  m.impl("index_copy", [](const Tensor& self, int64_t dim, const Tensor& index,
                          const Tensor& source) {
    Tensor out = self.clone();
    return indexCopy(out, dim, index, source);
  });
  m.impl("index_copy.out", [](const Tensor& self, int64_t dim, const Tensor& index,
                              const Tensor& source, Tensor& out) -> Tensor& {
    if (!out.is_same(self)) {
      at::native::resize_output(out, self.sizes());
      out.copy_(self);
    }
    return indexCopy(out, dim, index, source);
  });
  m.impl("take", TORCH_FN(takeOp));
  m.impl("take.out", [](const Tensor& self, const Tensor& index, Tensor& out) -> Tensor& {
    return resultInto(out, takeOp(self, index));
  });
  m.impl("put_", TORCH_FN(putOp));
  m.impl("linalg_cross", TORCH_FN(linalgCross));
  m.impl("linalg_cross.out", [](const Tensor& self, const Tensor& other, int64_t dim,
                                Tensor& out) -> Tensor& {
    return resultInto(out, linalgCross(self, other, dim));
  });
}

}  // namespace torch_maia::ops
