// Tensor creation and storage resizing on maia.
#include <ATen/EmptyTensor.h>
#include <ATen/native/Resize.h>
#include <ATen/native/TensorFactories.h>
#include <ATen/ops/empty.h>
#include <c10/core/DeviceGuard.h>

#include "MaiaCachingAllocator.h"
#include "MaiaCheck.h"
#include "MaiaDtypes.h"
#include "MaiaFunctions.h"
#include "MaiaStream.h"
#include "ops/MaiaOps.h"

namespace torch_maia::ops {
namespace {

constexpr c10::DispatchKeySet kMaiaKeys(c10::DispatchKey::PrivateUse1);

/// Checks the options every maia factory must satisfy; returns the device
/// to allocate on (the current device if the index is unspecified).
c10::Device checkFactoryOptions(std::optional<c10::Device> device,
                                std::optional<c10::Layout> layout,
                                std::optional<bool> pin_memory, c10::ScalarType dtype) {
  c10::Device target = c10::device_or_default(device);
  TORCH_CHECK(target.is_privateuseone(), "expected a maia device, got ", target);
  TORCH_CHECK(c10::layout_or_default(layout) == c10::Layout::Strided,
              "maia tensors are strided; layout ", c10::layout_or_default(layout),
              " is not supported");
  TORCH_CHECK(!c10::pinned_memory_or_default(pin_memory),
              "only CPU tensors can be pinned, not maia tensors");
  checkSupportedDtype(dtype);
  if (!target.has_index()) target = c10::Device(target.type(), currentDevice());
  checkDeviceIndex(target.index());
  return target;
}

}  // namespace

at::Tensor empty(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype_opt,
                 std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                 std::optional<bool> pin_memory, std::optional<c10::MemoryFormat> memory_format) {
  c10::ScalarType dtype = c10::dtype_or_default(dtype_opt);
  c10::Device target = checkFactoryOptions(device, layout, pin_memory, dtype);
  c10::DeviceGuard guard(target);
  return at::detail::empty_generic(size, getMaiaCachingAllocator(), kMaiaKeys, dtype,
                                   memory_format);
}

at::Tensor newEmpty(c10::IntArrayRef size, const c10::TensorOptions& options) {
  // Options of another device (an operand on the host, which the operator
  // then refuses naming both devices) allocate as at::empty does.
  if (!options.device().is_privateuseone() || !options.device().has_index())
    return at::empty(size, options);
  const c10::DeviceIndex device = options.device().index();
  std::optional<c10::DeviceGuard> guard;
  if (device != currentDevice()) guard.emplace(options.device());
  return at::detail::empty_generic(size, getMaiaCachingAllocator(), kMaiaKeys,
                                   c10::typeMetaToScalarType(options.dtype()), std::nullopt);
}

at::Tensor emptyStrided(c10::IntArrayRef size, c10::IntArrayRef stride,
                        std::optional<c10::ScalarType> dtype_opt,
                        std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                        std::optional<bool> pin_memory) {
  c10::ScalarType dtype = c10::dtype_or_default(dtype_opt);
  c10::Device target = checkFactoryOptions(device, layout, pin_memory, dtype);
  c10::DeviceGuard guard(target);
  return at::detail::empty_strided_generic(size, stride, getMaiaCachingAllocator(), kMaiaKeys,
                                           dtype);
}

at::Tensor efficientZeroTensor(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype_opt,
                               std::optional<c10::Layout> layout,
                               std::optional<c10::Device> device,
                               std::optional<bool> pin_memory) {
  c10::ScalarType dtype = c10::dtype_or_default(dtype_opt);
  c10::Device target = checkFactoryOptions(device, layout, pin_memory, dtype);
  // As the CPU's and CUDA's: the allocator only hands out null pointers for
  // target, and the tensor never resizes (ZeroTensors are immutable).
  at::native::ZeroTensorAllocator allocator(target);
  return at::detail::empty_generic(size, &allocator,
                                   kMaiaKeys | c10::DispatchKeySet(c10::DispatchKey::ZeroTensor),
                                   dtype, std::nullopt);
}

void resizeStorageBytes(const c10::Storage& storage, size_t nbytes) {
  TORCH_CHECK(storage.resizable(), "trying to resize a maia storage that is not resizable");
  c10::DeviceGuard guard(storage.device());
  c10::DataPtr fresh = getMaiaCachingAllocator()->allocate(nbytes);
  size_t keep = std::min(nbytes, storage.nbytes());
  if (keep > 0) {
    // Stream-ordered like every other access: no synchronization needed.
    MAIA_CHECK(maiaMemcpyAsync(fresh.get(), storage.data(), keep, maiaMemcpyDeviceToDevice,
                               currentDriverStream(storage.device().index())));
  }
  storage.unsafeGetStorageImpl()->set_data_ptr_noswap(std::move(fresh));
  storage.unsafeGetStorageImpl()->set_nbytes(nbytes);
}

const at::Tensor& resize(const at::Tensor& self, c10::IntArrayRef size,
                         std::optional<c10::MemoryFormat> memory_format) {
  c10::TensorImpl* impl = self.unsafeGetTensorImpl();
  impl->set_sizes_contiguous(size);
  if (memory_format.has_value()) {
    TORCH_CHECK(*memory_format != c10::MemoryFormat::Preserve,
                "unsupported memory format ", *memory_format);
    impl->empty_tensor_restride(*memory_format);
  }
  if (impl->numel() == 0) return self;
  size_t needed = at::detail::computeStorageNbytes(impl->sizes(), impl->strides(),
                                                   self.dtype().itemsize(),
                                                   impl->storage_offset());
  const c10::Storage& storage = impl->unsafe_storage();
  if (needed > storage.nbytes()) resizeStorageBytes(storage, needed);
  return self;
}

at::Tensor& setEmpty(at::Tensor& self) {
  c10::Storage storage(c10::Storage::use_byte_size_t(), 0, getMaiaCachingAllocator(),
                       /*resizable=*/true);
  return self.set_(storage, 0, {0}, {});
}

}  // namespace torch_maia::ops
