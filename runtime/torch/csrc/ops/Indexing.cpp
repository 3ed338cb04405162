// Advanced indexing on maia: aten::index (x[idx], x[mask], index tensors
// broadcast together, None and slices between them), index_put_ with and
// without accumulate (accumulate is index's backward), nonzero and
// nonzero_static, launched from the NN kernel binary
// (runtime/kernels/nn/indexing.h documents the shapes the kernels take);
// masked_select is indexing by a mask.
//
// Bool masks become index tensors through nonzero, whose result size depends
// on the data: nonzero is the one operation here that synchronizes (a copy
// of per-program counts to the host, ordered on the current stream after the
// kernel that counts). Out-of-range indices are not checked on the host: the
// kernel traps, reported as a sticky device error at the next synchronizing
// call, like CUDA's device-side assert.
#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/native/IndexingUtils.h>
#include <ATen/native/TensorAdvancedIndexingUtils.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <torch/library.h>

#include <numeric>
#include <sstream>
#include <vector>

#include "WorkSplit.h"
#include "ops/EagerKernels.h"
#include "ops/HostRouting.h"
#include "ops/MaiaOps.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;
using IndexList = c10::List<std::optional<Tensor>>;

constexpr int kRank = 8;  // the memref rank of self in the indexing kernels

int64_t product(c10::IntArrayRef sizes) {
  return std::accumulate(sizes.begin(), sizes.end(), int64_t{1}, std::multiplies<>());
}

/// An advanced-indexing call in the kernels' shape: self (permuted so the
/// indexed dimensions are adjacent) = [before | indexed | after], the index
/// tensors broadcast together and stacked as int64 [K, N].
struct IndexPlan {
  Tensor self;
  Tensor indices;  // [K, N] on self's device
  int64_t first = 0;  // the first indexed dimension of self
  int64_t count = 0;  // K
  std::vector<int64_t> result_shape;  // before + broadcast shape + after

  int64_t before() const { return product(self.sizes().slice(0, first)); }
  int64_t columns() const { return indices.size(1); }
  int64_t after() const { return product(self.sizes().slice(first + count)); }
};

std::string shapesOf(const std::vector<Tensor>& tensors) {
  std::ostringstream os;
  const char* sep = "";
  for (const Tensor& t : tensors) {
    if (!t.defined()) continue;
    os << sep << t.sizes();
    sep = ", ";
  }
  return os.str();
}

IndexPlan planIndex(const Tensor& self, const IndexList& indices) {
  TORCH_CHECK_INDEX(static_cast<int64_t>(indices.size()) <= self.dim(),
                    "too many indices for tensor of dimension ", self.dim(), " (got ",
                    indices.size(), ")");
  TORCH_CHECK(self.dim() <= kRank, "maia indexing supports tensors of at most ", kRank,
              " dimensions, got ", self.dim());
  at::native::checkIndexTensorTypes(indices, /*allow_int=*/true);
  for (const std::optional<Tensor>& index : indices) {
    TORCH_CHECK_INDEX(!index.has_value() || !index->defined() || index->is_cpu() ||
                          index->device() == self.device(),
                      "indices should be either on cpu or on the same device as the indexed "
                      "tensor (", self.device(), ")");
  }
  // Masks become index tensors (nonzero: maia masks on the device, CPU
  // masks on the host), CPU index tensors move to the device.
  std::vector<Tensor> list = at::native::expandTensors(self, indices, /*ensure_same_device=*/true);
  try {
    list = at::expand_outplace(list);
  } catch (std::exception&) {
    TORCH_CHECK_INDEX(false, "shape mismatch: indexing tensors could not be broadcast together "
                      "with shapes ", shapesOf(list));
  }
  list.resize(self.dim());
  IndexPlan plan;
  plan.self = self;
  if (!at::native::hasContiguousSubspace(list))
    std::tie(plan.self, list) = at::native::transposeToFront(self, list);
  std::vector<Tensor> rows;
  c10::IntArrayRef broadcast;
  for (int64_t d = 0; d < static_cast<int64_t>(list.size()); ++d) {
    if (!list[d].defined()) continue;
    if (rows.empty()) plan.first = d;
    broadcast = list[d].sizes();
    rows.push_back(list[d].to(c10::ScalarType::Long).reshape({1, -1}));
  }
  plan.count = static_cast<int64_t>(rows.size());
  c10::IntArrayRef sizes = plan.self.sizes();
  plan.result_shape.assign(sizes.begin(), sizes.begin() + plan.first);
  plan.result_shape.insert(plan.result_shape.end(), broadcast.begin(), broadcast.end());
  plan.result_shape.insert(plan.result_shape.end(), sizes.begin() + plan.first + plan.count,
                           sizes.end());
  if (rows.size() == 1) plan.indices = rows[0];
  else if (!rows.empty()) plan.indices = at::cat(rows);
  return plan;
}

Tensor indexOp(const Tensor& self, const IndexList& indices) {
  IndexPlan plan = planIndex(self, indices);
  if (plan.count == 0) return self.clone();  // only None/slices: a copy
  Tensor out = at::empty(plan.result_shape, self.options());
  if (out.numel() == 0) return out;
  const int64_t rows = plan.before(), n = plan.columns();
  launchNn("index", self.scalar_type(),
           {memrefOf(out.view({rows, n, plan.after()})), memrefOf(plan.self, kRank),
            memrefOf(plan.indices), intArg(kRank - plan.self.dim() + plan.first)},
           programsFor(rows * n, out.numel()), self.device());
  return out;
}

/// index_put_ and _index_put_impl_: self[indices] = values (or += values).
Tensor& indexPut(Tensor& self, const IndexList& indices, const Tensor& values,
                 bool accumulate) {
  TORCH_CHECK_INDEX(static_cast<int64_t>(indices.size()) <= self.dim(),
                    "too many indices for tensor of dimension ", self.dim(), " (got ",
                    indices.size(), ")");
  if (at::has_internal_overlap(self) == at::MemOverlap::Yes) {
    TORCH_WARN("Use of index_put_ on expanded tensors is deprecated. Please clone() the tensor "
               "before performing this operation. This also applies to advanced indexing "
               "e.g. tensor[indices] = tensor");
  }
  if (!accumulate) {  // one mask and a scalar value: a masked_fill, no nonzero
    auto [fill, mask] = at::native::canDispatchToMaskedFill(self, indices, values);
    if (fill) return self.masked_fill_(mask, values.item());
  }
  Tensor value = values;
  if (value.device() != self.device() && value.dim() == 0) value = value.to(self.device());
  TORCH_CHECK(value.device() == self.device(), "index_put_: values are on ", value.device(),
              " but the tensor is on ", self.device());
  TORCH_CHECK(value.scalar_type() == self.scalar_type(), "Index put requires the source and "
              "destination dtypes match, got ", self.scalar_type(), " for the destination and ",
              value.scalar_type(), " for the source.");
  at::assert_no_overlap(self, value);
  for (const std::optional<Tensor>& index : indices)
    if (index.has_value() && index->defined()) at::assert_no_overlap(self, *index);
  IndexPlan plan = planIndex(self, indices);
  TORCH_CHECK(at::is_expandable_to(value.sizes(), plan.result_shape), "shape mismatch: value "
              "tensor of shape ", value.sizes(), " cannot be broadcast to indexing result of "
              "shape ", c10::IntArrayRef(plan.result_shape));
  if (product(plan.result_shape) == 0) return self;
  if (plan.count == 0) {  // only None/slices: assign (or add) the whole tensor
    return accumulate ? self.add_(value) : self.copy_(value);
  }
  const int64_t rows = plan.before(), n = plan.columns(), q = plan.after();
  Tensor dense = value.expand(plan.result_shape).contiguous().view({rows, n, q});
  constexpr int64_t kBlock = 256;  // after-dimension positions per unit (indexing.h)
  const int64_t blocks = (q + kBlock - 1) / kBlock;
  launchNn("index_put", self.scalar_type(),
           {memrefOf(plan.self, kRank), memrefOf(plan.indices), memrefOf(dense),
            intArg(kRank - plan.self.dim() + plan.first), intArg(accumulate)},
           programsFor(rows * blocks, dense.numel()), self.device());
  return self;
}

/// Launches nonzero's two kernels: the coordinates of the first out.size(0)
/// nonzero elements, in row-major order, into out.
void writeNonzero(const Tensor& self, const Tensor& counts, const Tensor& out) {
  launchNn("nonzero", self.scalar_type(),
           {memrefOf(out), memrefOf(counts), memrefOf(self, kRank), intArg(kRank - self.dim())},
           counts.numel(), self.device());
}

Tensor countNonzero(const Tensor& self) {
  TORCH_CHECK(self.dim() <= kRank, "maia nonzero supports tensors of at most ", kRank,
              " dimensions, got ", self.dim());
  const int64_t programs = programsFor(self.numel(), self.numel());
  Tensor counts = at::empty({programs}, self.options().dtype(c10::ScalarType::Long));
  launchNn("nonzero_count", self.scalar_type(), {memrefOf(counts), memrefOf(self, kRank)},
           programs, self.device());
  return counts;
}

/// Column-major [rows, dim] like CUDA's result and the fake/meta kernels of
/// every device but the CPU, so compiled graphs see the strides they expect.
Tensor emptyCoordinates(int64_t rows, const Tensor& self) {
  return at::empty_strided({rows, self.dim()}, {1, std::max<int64_t>(rows, 1)},
                           self.options().dtype(c10::ScalarType::Long));
}

Tensor nonzeroOp(const Tensor& self) {
  if (self.numel() == 0) return emptyCoordinates(0, self);
  Tensor counts = countNonzero(self);
  // The result's size depends on the data: wait for the counts.
  Tensor host = counts.cpu();
  const int64_t* per_program = host.const_data_ptr<int64_t>();
  const int64_t total = std::accumulate(per_program, per_program + counts.numel(), int64_t{0});
  Tensor out = emptyCoordinates(total, self);
  if (out.numel() > 0) writeNonzero(self, counts, out);
  return out;
}

/// nonzero_static: the first `size` coordinates, the rest fill_value; no
/// host synchronization (the size is known).
Tensor nonzeroStatic(const Tensor& self, c10::SymInt size_sym, int64_t fill_value) {
  const int64_t size = size_sym.guard_int(__FILE__, __LINE__);
  TORCH_CHECK(size >= 0, "nonzero_static: 'size' must be a non-negative integer, got ", size);
  Tensor out = emptyCoordinates(size, self);
  if (out.numel() == 0) return out;
  out.fill_(fill_value);
  if (self.numel() > 0) writeNonzero(self, countNonzero(self), out);
  return out;
}

/// masked_select: self and mask broadcast together, indexed by the mask
/// (through nonzero), always 1-D.
Tensor maskedSelect(const Tensor& self, const Tensor& mask) {
  TORCH_CHECK(mask.scalar_type() == c10::ScalarType::Bool,
              "masked_select: expected BoolTensor for mask");
  auto [values, where] = at::expand_outplace(self, mask);
  IndexList indices;
  indices.push_back(where->reshape({-1}));
  return indexOp(values->reshape({-1}), indices);
}

MAIA_NATIVE_KERNELS(m) {
  m.impl("index.Tensor", TORCH_FN(indexOp));
  m.impl("index.Tensor_out", [](const Tensor& self, const IndexList& indices,
                                Tensor& out) -> Tensor& {
    return resultInto(out, indexOp(self, indices));
  });
  m.impl("_index_put_impl_", [](Tensor& self, const IndexList& indices, const Tensor& values,
                                bool accumulate, bool /*unsafe*/) -> Tensor& {
    return indexPut(self, indices, values, accumulate);
  });
  m.impl("masked_select", TORCH_FN(maskedSelect));
  m.impl("masked_select.out", [](const Tensor& self, const Tensor& mask,
                                 Tensor& out) -> Tensor& {
    return resultInto(out, maskedSelect(self, mask));
  });
  m.impl("nonzero", TORCH_FN(nonzeroOp));
  m.impl("nonzero_static", TORCH_FN(nonzeroStatic));
  m.impl("nonzero.out", [](const Tensor& self, Tensor& out) -> Tensor& {
    return resultInto(out, nonzeroOp(self));
  });
}

}  // namespace
}  // namespace torch_maia::ops
