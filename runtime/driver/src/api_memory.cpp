// C API: device and pinned memory, copies, memsets, pointer attributes.
#include "copy.h"
#include "device.h"
#include "graph_capture.h"
#include "host_memory.h"
#include "ipc_memory.h"
#include "stream.h"

using namespace maia::driver;

namespace {

/// Waits for all work on every device, without reporting sticky errors:
/// freeing memory must work on a faulted device too.
Status quiesceAllDevices() {
  for (int i = 0; i < deviceCount(); ++i) {
    Device* device = nullptr;
    MAIA_RETURN_IF_ERROR(deviceAt(i, &device));
    MAIA_RETURN_IF_ERROR(synchronizeDevice(device, /*report_sticky=*/false));
  }
  return {};
}

/// maiaIpcOpenMemHandle (whole) and maiaIpcOpenMemHandleRange.
maiaError_t openIpcMemory(const char* what, void** out_device_ptr,
                          const maiaIpcMemHandle_t& handle, size_t offset, size_t bytes,
                          bool whole, unsigned flags) {
  MAIA_CHECK_OUT(out_device_ptr);
  MAIA_API_ENTER();
  if ((flags & ~static_cast<unsigned>(maiaIpcMemLazyEnablePeerAccess)) != 0)
    return report(makeError(maiaErrorInvalidValue, what, ": unknown flags 0x", std::hex, flags));
  Device* device = nullptr;
  MAIA_RETURN_REPORT(currentDevice(&device));
  return report(ipc::openMemoryRange(handle, device, offset, bytes, whole, out_device_ptr));
}

}  // namespace

extern "C" {

maiaError_t maiaMalloc(void** out_ptr, size_t size) {
  MAIA_CHECK_OUT(out_ptr);
  MAIA_API_ENTER();
  if (size == 0) {
    *out_ptr = nullptr;
    return maiaSuccess;
  }
  Device* device = nullptr;
  MAIA_RETURN_REPORT(currentDevice(&device));
  return report(ipc::allocate(device, size, out_ptr));
}

maiaError_t maiaFree(void* ptr) {
  MAIA_API_ENTER();
  if (ptr == nullptr) return maiaSuccess;
  Device* device = deviceOwning(ptr);
  if (device == nullptr)
    return report(makeError(maiaErrorInvalidDevicePointer, "maiaFree(", ptr,
                            "): not device memory (host memory, or a foreign pointer)"));
  // Queued work may still read or write the allocation.
  MAIA_RETURN_REPORT(synchronizeDevice(device, /*report_sticky=*/false));
  return report(ipc::freeMemory(device, ptr));
}

maiaError_t maiaMemGetInfo(size_t* out_free, size_t* out_total) {
  MAIA_CHECK_OUT(out_free);
  MAIA_CHECK_OUT(out_total);
  MAIA_API_ENTER();
  Device* device = nullptr;
  MAIA_RETURN_REPORT(currentDevice(&device));
  ipc::reclaimRetired(device);
  *out_total = device->arena().capacity();
  *out_free = *out_total - device->arena().used();
  return maiaSuccess;
}

maiaError_t maiaHostAlloc(void** out_ptr, size_t size) {
  MAIA_CHECK_OUT(out_ptr);
  MAIA_API_ENTER();
  return report(pinnedAlloc(size, out_ptr));
}

maiaError_t maiaFreeHost(void* ptr) {
  MAIA_API_ENTER();
  if (ptr == nullptr) return maiaSuccess;
  uintptr_t base = 0;
  size_t size = 0;
  if (!findPinned(ptr, &base, &size) || base != reinterpret_cast<uintptr_t>(ptr))
    return report(pinnedFree(ptr));  // reports the misuse
  MAIA_RETURN_REPORT(quiesceAllDevices());
  return report(pinnedFree(ptr));
}

maiaError_t maiaPointerGetAttributes(maiaPointerAttributes* out_attr, const void* ptr) {
  MAIA_CHECK_OUT(out_attr);
  MAIA_API_ENTER();
  maiaPointerAttributes attr = {maiaMemoryTypeUnregistered, -1, nullptr, 0};
  uintptr_t base = 0;
  size_t size = 0;
  if (Device* device = deviceOwning(ptr)) {
    MAIA_RETURN_REPORT(device->arena().findAllocation(ptr, 1, "pointer", &base, &size));
    attr = {maiaMemoryTypeDevice, device->index(), reinterpret_cast<void*>(base), size};
  } else if (findPinned(ptr, &base, &size)) {
    attr = {maiaMemoryTypeHost, -1, reinterpret_cast<void*>(base), size};
  }
  *out_attr = attr;
  return maiaSuccess;
}

maiaError_t maiaMemcpy(void* dst, const void* src, size_t bytes, maiaMemcpyKind kind) {
  MAIA_API_ENTER();
  return report(copyMemory(dst, src, bytes, kind, nullptr, /*synchronous=*/true));
}

maiaError_t maiaMemcpyAsync(void* dst, const void* src, size_t bytes, maiaMemcpyKind kind,
                            maiaStream_t stream) {
  MAIA_API_ENTER();
  std::shared_ptr<Stream> target;
  MAIA_RETURN_REPORT(resolveStream(stream, &target));
  return report(copyMemory(dst, src, bytes, kind, target.get(), /*synchronous=*/false));
}

maiaError_t maiaMemset(void* device_ptr, int value, size_t bytes) {
  MAIA_API_ENTER();
  return report(setMemory(device_ptr, value, bytes, nullptr, /*synchronous=*/true));
}

maiaError_t maiaMemsetAsync(void* device_ptr, int value, size_t bytes, maiaStream_t stream) {
  MAIA_API_ENTER();
  std::shared_ptr<Stream> target;
  MAIA_RETURN_REPORT(resolveStream(stream, &target));
  return report(setMemory(device_ptr, value, bytes, target.get(), /*synchronous=*/false));
}

maiaError_t maiaMemsetPatternAsync(void* device_ptr, const void* pattern, size_t pattern_bytes,
                                   size_t count, maiaStream_t stream) {
  MAIA_API_ENTER();
  std::shared_ptr<Stream> target;
  MAIA_RETURN_REPORT(resolveStream(stream, &target));
  return report(setMemoryPattern(device_ptr, pattern, pattern_bytes, count, target.get()));
}

maiaError_t maiaIpcGetMemHandle(maiaIpcMemHandle_t* out_handle, void* device_ptr) {
  MAIA_CHECK_OUT(out_handle);
  MAIA_API_ENTER();
  return report(ipc::exportMemory(device_ptr, out_handle));
}

maiaError_t maiaIpcOpenMemHandle(void** out_device_ptr, maiaIpcMemHandle_t handle,
                                 unsigned flags) {
  return openIpcMemory("maiaIpcOpenMemHandle", out_device_ptr, handle, 0, 0, /*whole=*/true,
                       flags);
}

maiaError_t maiaIpcOpenMemHandleRange(void** out_device_ptr, maiaIpcMemHandle_t handle,
                                      size_t offset, size_t bytes, unsigned flags) {
  return openIpcMemory("maiaIpcOpenMemHandleRange", out_device_ptr, handle, offset, bytes,
                       /*whole=*/false, flags);
}

maiaError_t maiaIpcCloseMemHandle(void* device_ptr) {
  MAIA_API_ENTER();
  return report(ipc::closeMemory(device_ptr));
}

maiaError_t maiaIpcCloseMemHandleAsync(void* device_ptr, maiaStream_t stream) {
  MAIA_API_ENTER();
  std::shared_ptr<Stream> target;
  MAIA_RETURN_REPORT(resolveStream(stream, &target));
  if (target->capturing.load(std::memory_order_acquire)) [[unlikely]]
    return report(captureViolation(target.get(), "maiaIpcCloseMemHandleAsync"));
  return report(ipc::closeMemoryOnStream(device_ptr, target.get()));
}

maiaError_t maiaIpcMemHandleFreedByOwner(const void* device_ptr, int* freed) {
  MAIA_CHECK_OUT(freed);
  MAIA_API_ENTER();
  bool result = false;
  MAIA_RETURN_REPORT(ipc::isFreedByOwner(device_ptr, &result));
  *freed = result ? 1 : 0;
  return maiaSuccess;
}

}  // extern "C"
