// maia_bench::noop: one trivial operator registered for CPU, for
// PrivateUse1 (out-of-tree maia) and for the in-tree MAIA dispatch key with
// identical kernels, so that timing it on tensors of each key isolates what
// each dispatch key costs. maia_bench::in_tree_maia_tensor makes a
// storage-less tensor whose keys are the in-tree MAIA ones (DispatchKey::MAIA
// and, through it, AutogradMAIA): what an in-tree integration's tensors
// dispatch on. Nothing reads its data; it exists only to be dispatched on.
#include <c10/core/TensorImpl.h>
#include <torch/library.h>

namespace {

at::Tensor noop(const at::Tensor& self) { return self; }

at::Tensor inTreeMaiaTensor(const at::Tensor& like) {
  auto impl = c10::make_intrusive<c10::TensorImpl>(
      c10::DispatchKeySet(c10::DispatchKey::MAIA), like.dtype(),
      c10::Device(c10::DeviceType::MAIA, 0));
  impl->set_sizes_contiguous(like.sizes());
  return at::Tensor(std::move(impl));
}

TORCH_LIBRARY(maia_bench, m) {
  m.def("noop(Tensor self) -> Tensor");
  m.def("in_tree_maia_tensor(Tensor like) -> Tensor");
}

TORCH_LIBRARY_IMPL(maia_bench, CPU, m) {
  m.impl("noop", TORCH_FN(noop));
  m.impl("in_tree_maia_tensor", TORCH_FN(inTreeMaiaTensor));
}

TORCH_LIBRARY_IMPL(maia_bench, PrivateUse1, m) { m.impl("noop", TORCH_FN(noop)); }

TORCH_LIBRARY_IMPL(maia_bench, MAIA, m) { m.impl("noop", TORCH_FN(noop)); }

}  // namespace
