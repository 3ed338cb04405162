// The operators that make maia a PrivateUse1 device: tensor creation,
// views, storage (resize_, set_), copies and _local_scalar_dense (the
// minimal set PyTorch documents for a new backend), plus fill_, zero_ and
// record_stream, in one table. Views and metadata-only operators reuse
// ATen's device-generic implementations; the others are in Factory.cpp,
// Copy.cpp and Fill.cpp (declared in MaiaOps.h).
//
// Every other native operator is registered by the file that implements it,
// in its own TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) block (Elementwise.cpp,
// Reduction.cpp, MatMul.cpp, Softmax.cpp, ...); an operator with neither a
// maia kernel nor a decomposition runs on the host through the boxed
// fallback (Fallback.cpp).
#include <ATen/native/Resize.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/set_native.h>
#include <ATen/ops/unfold_native.h>
#include <ATen/ops/view_as_complex_native.h>
#include <ATen/ops/view_as_real_native.h>
#include <ATen/ops/view_native.h>
#include <torch/library.h>

#include <typeinfo>

#include "MaiaCachingAllocator.h"
#include "ops/MaiaOps.h"

namespace torch_maia::ops {
namespace {

at::Tensor& setStorageOffset(at::Tensor& self, c10::Storage source, int64_t offset,
                             c10::IntArrayRef size, c10::IntArrayRef stride) {
  return at::native::set_storage_cpu_(self, std::move(source), offset, size, stride);
}

void recordStream(at::Tensor& self, c10::Stream stream) {
  getMaiaCachingAllocator()->recordStream(self.storage().data_ptr(), stream);
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", TORCH_FN(empty));
  m.impl("empty_strided", TORCH_FN(emptyStrided));
  m.impl("_efficientzerotensor", TORCH_FN(efficientZeroTensor));
  m.impl("as_strided", TORCH_FN(at::native::as_strided_tensorimpl));
  m.impl("view", TORCH_FN(at::native::view));
  m.impl("_reshape_alias", TORCH_FN(at::native::_reshape_alias));
  m.impl("unfold", TORCH_FN(at::native::unfold));
  m.impl("view_as_real", TORCH_FN(at::native::view_as_real));
  m.impl("view_as_complex", TORCH_FN(at::native::view_as_complex));
  m.impl("resize_", TORCH_FN(resize));
  m.impl("set_.source_Storage", TORCH_FN(at::native::set_));
  m.impl("set_.source_Storage_storage_offset", TORCH_FN(setStorageOffset));
  m.impl("set_.source_Tensor", TORCH_FN(at::native::set_tensor_));
  m.impl("set_", TORCH_FN(setEmpty));
  m.impl("_copy_from", TORCH_FN(copyFrom));
  m.impl("_copy_from_and_resize", TORCH_FN(copyFromAndResize));
  m.impl("_local_scalar_dense", TORCH_FN(localScalarDense));
  m.impl("fill_.Scalar", TORCH_FN(fill));
  m.impl("fill_.Tensor", TORCH_FN(fillTensor));
  m.impl("zero_", TORCH_FN(zero));
  m.impl("record_stream", TORCH_FN(recordStream));
}

/// A plain dense tensor of the CPU or of maia (no subclass of TensorImpl:
/// not quantized, sparse, nested, mkldnn, wrapped).
bool isPlainDense(const at::Tensor& t) {
  const c10::TensorImpl* impl = t.unsafeGetTensorImpl();
  const c10::DispatchKeySet keys = t.key_set();
  return typeid(*impl) == typeid(c10::TensorImpl) && keys.has(c10::DispatchKey::Dense) &&
         (keys.has_backend(c10::BackendComponent::CPUBit) ||
          keys.has_backend(c10::BackendComponent::PrivateUse1Bit));
}

/// Whether `variable.set_data(from)` may shallow-copy from into self. Module
/// conversions move parameters in place with set_data (torch::nn::Module::to
/// in C++ always, Python's Module._apply when this says yes), as between the
/// CPU and CUDA; upstream's TensorImpl::has_compatible_shallow_copy_type
/// counts only in-tree backends as dense, so a C++ module could not be moved
/// to maia. Dispatch takes the keys of both tensors: this runs whenever
/// either is a maia tensor.
bool hasCompatibleShallowCopyType(const at::Tensor& self, const at::Tensor& from) {
  return self.unsafeGetTensorImpl()->has_compatible_shallow_copy_type(from.key_set()) ||
         (isPlainDense(self) && isPlainDense(from));
}

// A conjugate or negative view reaches maia's _copy_from with its bit set
// (ATen's copy_ hands copies involving out-of-tree devices straight to
// _copy_from), and copyFrom resolves it. Without these fallthroughs the
// math-bit fallbacks would resolve the bit first with resolve_conj, whose
// copy_ calls _copy_from again: unbounded recursion.
TORCH_LIBRARY_IMPL(aten, Conjugate, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(aten, Negative, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m) {
  m.impl("_has_compatible_shallow_copy_type", TORCH_FN(hasCompatibleShallowCopyType));
}

}  // namespace
}  // namespace torch_maia::ops
