// Backend metadata of maia tensors: named boolean flags a framework or a
// user attaches to a tensor (c10::BackendMeta), which travel with it the
// way PyTorch moves backend metadata for PrivateUse1 tensors:
// torch._utils.set_tensor_metadata / get_tensor_metadata read and write
// them, torch.save / torch.load round-trip them (TensorBackendMetaRegistry),
// and shallow copies (detach(), .data) carry their own copy of them.
#pragma once

#include <c10/core/TensorImpl.h>

#include <map>
#include <string>

namespace torch_maia {

struct MaiaBackendMeta final : c10::BackendMeta {
  std::map<std::string, bool> flags;

  /// Each shallow copy owns its flags: setting one on a detached tensor
  /// leaves the original's alone.
  c10::intrusive_ptr<c10::BackendMeta> clone(
      const c10::intrusive_ptr<c10::BackendMeta>& self) const override;
};

/// The tensor's flags, or nullptr if it has none.
const MaiaBackendMeta* backendMeta(const c10::TensorImpl& tensor);

}  // namespace torch_maia
