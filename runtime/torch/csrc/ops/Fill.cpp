// fill_ and zero_ on maia: one pattern fill on the current stream; fill_
// with a 0-dim maia tensor is a broadcast copy on the stream (no host read).
#include <ATen/ops/empty_like.h>
#include <ATen/ops/scalar_tensor.h>
#include <c10/core/DeviceGuard.h>

#include "MaiaCheck.h"
#include "MaiaStream.h"
#include "ops/MaiaOps.h"

namespace torch_maia::ops {

at::Tensor& fill(at::Tensor& self, const at::Scalar& value) {
  if (self.numel() == 0) return self;
  if (!self.is_non_overlapping_and_dense()) {
    // Strided views: fill a dense temporary, then copy it in.
    at::Tensor dense = at::empty_like(self, at::MemoryFormat::Contiguous);
    fill(dense, value);
    self.copy_(dense);
    return self;
  }
  // The element's bytes, converted exactly as PyTorch converts the scalar.
  at::Tensor element = at::scalar_tensor(value, self.options().device(at::kCPU));
  c10::DeviceGuard guard(self.device());
  MAIA_CHECK(maiaMemsetPatternAsync(self.data_ptr(), element.const_data_ptr(),
                                    self.element_size(), static_cast<size_t>(self.numel()),
                                    currentDriverStream(self.device().index())));
  return self;
}

at::Tensor& fillTensor(at::Tensor& self, const at::Tensor& value) {
  TORCH_CHECK(value.dim() == 0, "fill_ only supports 0-dimension value tensor but got tensor "
              "with ", value.dim(), " dimensions.");
  if (self.device() != value.device()) return fill(self, value.item());
  // A view of self would be overwritten while it is read.
  self.copy_(self.is_alias_of(value) ? value.clone() : value);
  return self;
}

at::Tensor& zero(at::Tensor& self) { return fill(self, 0); }

}  // namespace torch_maia::ops
