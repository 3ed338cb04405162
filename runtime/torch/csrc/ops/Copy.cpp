// Copies between maia tensors and host tensors, and across maia devices.
//
// Same-dtype copies of dense tensors with matching layouts are one driver
// copy on the current stream. A copy from or to pinned host memory with
// non_blocking=True stays asynchronous (the pinned block is kept alive by an
// event on the stream); otherwise the copy completes before returning, as
// with CUDA. Everything else (dtype conversion, non-contiguous layouts) goes
// through the host: the storage span the tensor covers is copied, converted
// or permuted by PyTorch's CPU copy, and written back.
#include <ATen/CachedTensorUtils.h>
#include <ATen/core/CachingHostAllocator.h>
#include <ATen/TensorIterator.h>
#include <ATen/ops/empty.h>
#include <c10/core/DeviceGuard.h>

#include "MaiaCheck.h"
#include "MaiaStream.h"
#include "ops/EagerKernels.h"
#include "ops/MaiaOps.h"

namespace torch_maia::ops {
namespace {

bool isMaia(const at::Tensor& t) { return t.device().is_privateuseone(); }

/// Whether src and dst can be copied byte for byte: same dtype, both dense
/// and non-overlapping, with the same strides.
bool isBytewiseCopy(const at::Tensor& src, const at::Tensor& dst) {
  return src.dtype() == dst.dtype() && src.sizes() == dst.sizes() &&
         src.is_non_overlapping_and_dense() && dst.is_non_overlapping_and_dense() &&
         src.strides() == dst.strides();
}

/// Element range [first, last] of t's storage that t can reach.
std::pair<int64_t, int64_t> storageSpan(const at::Tensor& t) {
  int64_t first = t.storage_offset(), last = t.storage_offset();
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.size(d) == 0) return {t.storage_offset(), t.storage_offset() - 1};
    int64_t reach = (t.size(d) - 1) * t.stride(d);
    (reach < 0 ? first : last) += reach;
  }
  return {first, last};
}

/// The pinned block holding p, if p is pinned host memory, for keeping it
/// alive while an asynchronous copy uses it.
bool recordPinned(const at::Tensor& host, c10::Stream stream) {
  const c10::DataPtr& data = host.storage().data_ptr();
  return at::getHostAllocator(at::kPrivateUse1)
      ->record_event(data.get(), data.get_context(), stream);
}

void copyBytes(void* dst, const void* src, size_t bytes, maiaMemcpyKind kind,
               c10::DeviceIndex device) {
  MAIA_CHECK(maiaMemcpyAsync(dst, src, bytes, kind, currentDriverStream(device)));
}

/// A host copy of the part of maia tensor t's storage that t covers, viewed
/// with t's sizes and strides. Synchronous.
at::Tensor hostViewOf(const at::Tensor& t) {
  auto [first, last] = storageSpan(t);
  int64_t span = last - first + 1;
  at::Tensor host = at::empty({std::max<int64_t>(span, 0)}, t.options().device(at::kCPU));
  if (span > 0) {
    const char* base = static_cast<const char*>(t.storage().data()) + first * t.element_size();
    copyBytes(host.data_ptr(), base, span * t.element_size(), maiaMemcpyDeviceToHost,
              t.device().index());
  }
  return host.as_strided(t.sizes(), t.strides(), t.storage_offset() - first);
}

/// Writes host (same shape as dst) into maia tensor dst, whatever their
/// dtypes and layouts: read-modify-write of dst's storage span.
void writeThroughHost(const at::Tensor& host, const at::Tensor& dst) {
  auto [first, last] = storageSpan(dst);
  if (last < first) return;
  at::Tensor view = hostViewOf(dst);
  view.copy_(host);
  const at::Tensor& span = view.as_strided({last - first + 1}, {1}, 0);
  char* base = static_cast<char*>(dst.storage().mutable_data()) + first * dst.element_size();
  copyBytes(base, span.const_data_ptr(), span.numel() * dst.element_size(),
            maiaMemcpyHostToDevice, dst.device().index());
}

void copyHostToMaia(const at::Tensor& src, const at::Tensor& dst, bool non_blocking) {
  c10::DeviceGuard guard(dst.device());
  if (!isBytewiseCopy(src, dst)) {
    writeThroughHost(src, dst);
    return;
  }
  c10::Stream stream = currentStream(dst.device().index());
  copyBytes(dst.data_ptr(), src.const_data_ptr(), dst.nbytes(), maiaMemcpyHostToDevice,
            dst.device().index());
  if (non_blocking && recordPinned(src, stream)) return;
  MAIA_CHECK(maiaStreamSynchronize(driverStream(stream)));
}

void copyMaiaToHost(const at::Tensor& src, const at::Tensor& dst, bool non_blocking) {
  c10::DeviceGuard guard(src.device());
  if (!isBytewiseCopy(src, dst)) {
    dst.copy_(hostViewOf(src));
    return;
  }
  c10::Stream stream = currentStream(src.device().index());
  copyBytes(dst.data_ptr(), src.const_data_ptr(), src.nbytes(), maiaMemcpyDeviceToHost,
            src.device().index());
  if (non_blocking && recordPinned(dst, stream)) return;
  MAIA_CHECK(maiaStreamSynchronize(driverStream(stream)));
}

/// Converts and/or re-strides src into dst on dst's device with a cast
/// kernel (src already on that device).
void castOnDevice(const at::Tensor& src, const at::Tensor& dst) {
  at::TensorIterator iter = at::TensorIteratorConfig()
                                .add_output(dst)
                                .add_const_input(src)
                                .check_all_same_dtype(false)
                                .resize_outputs(false)
                                .build();
  std::string kernel = std::string("cast_") + dtypeSuffix(src.scalar_type()) + "_" +
                       dtypeSuffix(dst.scalar_type());
  launchElementwise(eagerKernel(kernel), iter);
}

void copyMaiaToMaia(const at::Tensor& src, const at::Tensor& dst) {
  if (!isBytewiseCopy(src, dst)) {
    if (src.device() == dst.device()) {
      castOnDevice(src, dst);
    } else {
      // Across devices: make src dense on its device, move the bytes, then
      // convert on the destination device.
      at::Tensor dense = src.contiguous();
      at::Tensor moved = at::empty(src.sizes(), dense.options().device(dst.device()));
      copyMaiaToMaia(dense, moved);
      castOnDevice(moved.expand(dst.sizes()), dst);
    }
    return;
  }
  c10::DeviceIndex from = src.device().index(), to = dst.device().index();
  if (from != to) {
    // The copy runs on dst's stream; it must wait for src's producers.
    maiaEvent_t ready = nullptr;
    MAIA_CHECK(maiaEventCreate(&ready, maiaEventDisableTiming));
    MAIA_CHECK(maiaEventRecord(ready, currentDriverStream(from)));
    MAIA_CHECK(maiaStreamWaitEvent(currentDriverStream(to), ready));
    MAIA_CHECK(maiaEventDestroy(ready));
  }
  copyBytes(dst.data_ptr(), src.const_data_ptr(), src.nbytes(), maiaMemcpyDeviceToDevice, to);
}

}  // namespace

at::Tensor copyFrom(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  TORCH_CHECK(self.sizes() == dst.sizes(), "copy between maia and another device needs equal "
              "shapes, got ", self.sizes(), " and ", dst.sizes());
  if (dst.numel() == 0) return dst;
  if (isMaia(self) && isMaia(dst)) {
    copyMaiaToMaia(self, dst);
  } else if (isMaia(dst)) {
    TORCH_CHECK(self.device().is_cpu(), "cannot copy from ", self.device(), " to maia");
    copyHostToMaia(self, dst, non_blocking);
  } else {
    TORCH_CHECK(dst.device().is_cpu(), "cannot copy from maia to ", dst.device());
    copyMaiaToHost(self, dst, non_blocking);
  }
  return dst;
}

at::Tensor copyFromAndResize(const at::Tensor& self, const at::Tensor& dst) {
  if (dst.sizes() != self.sizes()) dst.resize_(self.sizes());
  return copyFrom(self, dst, /*non_blocking=*/false);
}

at::Scalar localScalarDense(const at::Tensor& self) {
  at::Tensor host = at::empty(self.sizes(), self.options().device(at::kCPU));
  copyMaiaToHost(self, host, /*non_blocking=*/false);
  return host.item();
}

}  // namespace torch_maia::ops
