#include "MaiaBackendMeta.h"

#include <torch/csrc/jit/serialization/pickler_helper.h>

namespace torch_maia {

c10::intrusive_ptr<c10::BackendMeta> MaiaBackendMeta::clone(
    const c10::intrusive_ptr<c10::BackendMeta>&) const {
  auto copy = c10::make_intrusive<MaiaBackendMeta>();
  copy->flags = flags;
  return copy;
}

const MaiaBackendMeta* backendMeta(const c10::TensorImpl& tensor) {
  c10::intrusive_ptr<c10::BackendMeta> meta = tensor.get_backend_meta_intrusive_ptr();
  return dynamic_cast<const MaiaBackendMeta*>(meta.get());
}

namespace {

/// torch.save and get_tensor_metadata: the flags join the tensor's metadata
/// map (beside ATen's own "conj" and "neg").
void writeFlags(const at::Tensor& tensor, std::unordered_map<std::string, bool>& metadata) {
  if (const MaiaBackendMeta* meta = backendMeta(*tensor.unsafeGetTensorImpl()))
    for (const auto& [name, value] : meta->flags) metadata[name] = value;
}

/// torch.load and set_tensor_metadata: every entry ATen left in the map is a
/// flag of this tensor (ATen has taken "conj" and "neg" out).
void readFlags(const at::Tensor& tensor, std::unordered_map<std::string, bool>& metadata) {
  if (metadata.empty()) return;
  c10::TensorImpl* impl = tensor.unsafeGetTensorImpl();
  auto meta = c10::make_intrusive<MaiaBackendMeta>();
  if (const MaiaBackendMeta* old = backendMeta(*impl)) meta->flags = old->flags;
  for (const auto& [name, value] : metadata) meta->flags[name] = value;
  impl->set_backend_meta(meta);
}

const bool registered = [] {
  torch::jit::TensorBackendMetaRegistry(c10::DeviceType::PrivateUse1, &writeFlags, &readFlags);
  return true;
}();

}  // namespace

}  // namespace torch_maia
