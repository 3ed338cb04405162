// cat on maia (and stack through it): one device copy per input into its
// slice of the result, no kernel of its own.
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/native/TypeProperties.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include <vector>

#include "ops/HostRouting.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;

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

MAIA_NATIVE_KERNELS(m) {
  m.impl("cat", [](const at::ITensorListRef& tensors, int64_t dim) {
    std::vector<Tensor> list(tensors.begin(), tensors.end());
    TORCH_CHECK(!list.empty(), "torch.cat(): expected a non-empty list of Tensors");
    Tensor out = at::empty({0}, list[0].options().dtype(at::native::result_type(tensors)));
    return catOut(tensors, dim, out);
  });
  m.impl("cat.out", [](const at::ITensorListRef& tensors, int64_t dim,
                       Tensor& out) -> Tensor& { return catOut(tensors, dim, out); });
}

}  // namespace
}  // namespace torch_maia::ops
