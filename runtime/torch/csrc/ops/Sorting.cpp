// sort (stable or not, ascending or descending; functional and out=),
// topk, and kthvalue / median and nanmedian along a dim / mode (one value
// and its index per slice, the CPU's selection) on maia, each one launch of
// the NN kernel binary (runtime/kernels/nn/sorting.h). argsort, msort,
// sort without `stable`, quantile/median's sorts and the autograd of both
// go through these.
//
// Checks and output shapes/strides come from ATen's own meta functions
// (Structured.h), so maia raises the CPU's errors and returns the CPU's
// layouts. The kernels read and write any strides; the host allocates the
// kernels' scratch (one region of (value, index) keys per program), copies
// the input first only when an out= tensor overlaps it, and never waits.
#include <ATen/MemoryOverlap.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/ReduceOpsUtils.h>
#include <ATen/native/SortingUtils.h>
#include <ATen/ops/sort_meta.h>
#include <ATen/ops/topk_meta.h>
#include <torch/library.h>

#include <string>
#include <tuple>

#include "WorkSplit.h"
#include "ops/EagerKernels.h"
#include "ops/HostRouting.h"
#include "ops/MaiaOps.h"
#include "ops/OpUtils.h"
#include "ops/Structured.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;
using c10::ScalarType;

constexpr int kRank = 8;               // the kernels' memref rank (sorting.h)
constexpr int64_t kSortKeyBytes = 16;  // one (value, index) key (sorting.h)

/// in, or a device copy of it when an output overlaps it: the kernels read
/// a slice's input after writing part of its outputs.
c10::MaybeOwned<Tensor> unaliased(const Tensor& in, const Tensor& values,
                                  const Tensor& indices) {
  if (at::get_overlap_status(in, values) == at::MemOverlapStatus::No &&
      at::get_overlap_status(in, indices) == at::MemOverlapStatus::No)
    return c10::MaybeOwned<Tensor>::borrowed(in);
  return c10::MaybeOwned<Tensor>::owned(in.clone());
}

/// Programs for `slices` slices of n elements each, weighted by the
/// comparisons an n-element sort makes.
int64_t sortPrograms(int64_t slices, int64_t n) {
  int64_t log2n = 1;
  while ((int64_t{1} << log2n) < n) ++log2n;
  return programsFor(slices, slices * n * log2n);
}

/// Launches kernel `name` (sort or topk) over self's slices along dim, with
/// the trailing scalars; values/indices are the outputs (size `k` along dim
/// for topk). Tensors of more than kRank dimensions go one index of a
/// leading dimension at a time.
void launchSorting(const char* name, const Tensor& self, int64_t dim, const Tensor& values,
                   const Tensor& indices, std::initializer_list<int64_t> scalars) {
  if (self.dim() > kRank) {
    const int64_t outer = dim == 0 ? 1 : 0;
    for (int64_t i = 0; i < self.size(outer); ++i)
      launchSorting(name, self.select(outer, i), dim - (outer < dim ? 1 : 0),
                    values.select(outer, i), indices.select(outer, i), scalars);
    return;
  }
  c10::MaybeOwned<Tensor> in = unaliased(self, values, indices);
  const int64_t n = self.size(dim), slices = self.numel() / n;
  const int64_t programs = sortPrograms(slices, n);
  Tensor scratch =
      newEmpty({programs * n * kSortKeyBytes}, self.options().dtype(ScalarType::Byte));
  std::vector<maiaKernelArg> args{memrefOf(values, kRank), memrefOf(indices, kRank),
                                  memrefOf(*in, kRank),
                                  rowMajorMemref(scratch, {scratch.numel()}),
                                  intArg(kRank - self.dim() + dim)};
  for (int64_t s : scalars) args.push_back(intArg(s));
  launchNn(name, self.scalar_type(), args, programs, self.device());
}

void sortKernel(const Tensor& self, std::optional<bool> stable, int64_t dim, bool descending,
                const Tensor& values, const Tensor& indices) {
  if (self.dim() == 0 && self.numel() == 1) {  // the CPU's scalar case
    values.copy_(self);
    indices.zero_();
    return;
  }
  if (self.numel() == 0) return;
  dim = c10::maybe_wrap_dim(dim, self.dim());
  launchSorting("sort", self, dim, values, indices,
                {descending ? 1 : 0, stable.value_or(false) ? 1 : 0});
}

std::tuple<Tensor, Tensor> sortStable(const Tensor& self, std::optional<bool> stable,
                                      int64_t dim, bool descending) {
  Structured<at::meta::structured_sort_stable, 2> op;
  op.meta(self, stable, dim, descending);
  sortKernel(self, stable, dim, descending, op.outputs[0], op.outputs[1]);
  return {op.outputs[0], op.outputs[1]};
}

std::tuple<Tensor&, Tensor&> sortStableOut(const Tensor& self, std::optional<bool> stable,
                                           int64_t dim, bool descending, Tensor& values,
                                           Tensor& indices) {
  Structured<at::meta::structured_sort_stable, 2> op({&values, &indices});
  op.meta(self, stable, dim, descending);
  sortKernel(self, stable, dim, descending, values, indices);
  return {values, indices};
}

void topkKernel(const Tensor& self, int64_t k, int64_t dim, bool largest, bool sorted,
                const Tensor& values, const Tensor& indices) {
  dim = c10::maybe_wrap_dim(dim, self.dim(), /*wrap_scalar=*/true);
  TORCH_CHECK(k >= 0 && k <= (self.dim() > 0 ? self.size(dim) : 1),
              "selected index k out of range");
  TORCH_CHECK(self.scalar_type() != ScalarType::Bool, "topk does not support bool dtypes on CPU");
  if (self.dim() == 0 && self.numel() == 1) {  // the CPU's scalar case
    values.copy_(self);
    indices.zero_();
    return;
  }
  if (k == 0 || values.numel() == 0) return;
  launchSorting("topk", self, dim, values, indices, {k, largest ? 1 : 0, sorted ? 1 : 0});
}

std::tuple<Tensor, Tensor> topk(const Tensor& self, c10::SymInt k, int64_t dim, bool largest,
                                bool sorted) {
  const int64_t kk = k.guard_int(__FILE__, __LINE__);
  Structured<at::meta::structured_topk, 2> op;
  op.meta(self, kk, dim, largest, sorted);
  topkKernel(self, kk, dim, largest, sorted, op.outputs[0], op.outputs[1]);
  return {op.outputs[0], op.outputs[1]};
}

std::tuple<Tensor&, Tensor&> topkOut(const Tensor& self, c10::SymInt k, int64_t dim,
                                     bool largest, bool sorted, Tensor& values,
                                     Tensor& indices) {
  const int64_t kk = k.guard_int(__FILE__, __LINE__);
  Structured<at::meta::structured_topk, 2> op({&values, &indices});
  op.meta(self, kk, dim, largest, sorted);
  topkKernel(self, kk, dim, largest, sorted, values, indices);
  return {values, indices};
}

// Which one value per slice select_one picks (sorting.h's Selection).
enum class Selection : int64_t { kKthValue = 0, kMedian = 1, kNanMedian = 2, kMode = 3 };

/// kthvalue, median/nanmedian along dim and mode into values/indices, with
/// the CPU's checks (the dtypes its kernels have: every one but bool, mode
/// also bool) and output shapes: size 1 along dim, squeezed unless keepdim.
std::tuple<Tensor&, Tensor&> selectAlongDim(const char* name, Selection selection,
                                            const Tensor& self, int64_t k, int64_t dim,
                                            bool keepdim, Tensor& values, Tensor& indices) {
  const std::string fn = std::string(name) + "()";
  dim = c10::maybe_wrap_dim(dim, self.dim(), /*wrap_scalar=*/true);
  at::native::zero_numel_check_dims(self, dim, fn.c_str());
  if (selection == Selection::kKthValue) {
    const int64_t slice_size = self.dim() == 0 ? 1 : self.size(dim);
    TORCH_CHECK(k >= 1 && k <= slice_size, fn, ": selected number k out of range for dimension ",
                dim);
  }
  checkDtype(selection == Selection::kKthValue ? "kthvalue_cpu" : "median_out",
             self.scalar_type(),
             selection == Selection::kMode || self.scalar_type() != ScalarType::Bool);
  at::native::_reduction_with_indices_allocate_or_resize_output(values, indices, self, dim,
                                                                keepdim);
  if (self.dim() == 0) {  // the CPU's scalar case
    values.copy_(self);
    indices.zero_();
    return {values, indices};
  }
  if (values.numel() > 0)
    launchSorting("select_one", self, dim, values, indices,
                  {static_cast<int64_t>(selection), k});
  if (!keepdim) {
    values.squeeze_(dim);
    indices.squeeze_(dim);
  }
  return {values, indices};
}

template <Selection Which>
std::tuple<Tensor&, Tensor&> selectOut(const Tensor& self, int64_t dim, bool keepdim,
                                       Tensor& values, Tensor& indices) {
  const char* name = Which == Selection::kMode        ? "mode"
                     : Which == Selection::kNanMedian ? "nanmedian"
                                                      : "median";
  return selectAlongDim(name, Which, self, 0, dim, keepdim, values, indices);
}

MAIA_NATIVE_KERNELS(m) {
  m.impl("kthvalue.values", [](const Tensor& self, int64_t k, int64_t dim, bool keepdim,
                               Tensor& values, Tensor& indices) {
    return selectAlongDim("kthvalue", Selection::kKthValue, self, k, dim, keepdim, values,
                          indices);
  });
  m.impl("median.dim_values", TORCH_FN(selectOut<Selection::kMedian>));
  m.impl("nanmedian.dim_values", TORCH_FN(selectOut<Selection::kNanMedian>));
  m.impl("mode.values", TORCH_FN(selectOut<Selection::kMode>));
  m.impl("mode", [](const Tensor& self, int64_t dim, bool keepdim) {
    Tensor values = newEmpty({0}, self.options());
    Tensor indices = newEmpty({0}, self.options().dtype(ScalarType::Long));
    selectOut<Selection::kMode>(self, dim, keepdim, values, indices);
    return std::make_tuple(values, indices);
  });
  m.impl("sort.stable", TORCH_FN(sortStable));
  m.impl("sort.values_stable", TORCH_FN(sortStableOut));
  m.impl("topk", TORCH_FN(topk));
  m.impl("topk.values", TORCH_FN(topkOut));
}

}  // namespace
}  // namespace torch_maia::ops
