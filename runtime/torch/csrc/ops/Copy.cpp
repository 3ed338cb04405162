// Copies between maia tensors and host tensors, and across maia devices.
//
// Same-dtype copies of dense tensors with matching layouts are one driver
// copy on the current stream. A copy from or to pinned host memory with
// non_blocking=True stays asynchronous (the pinned block is kept alive by an
// event on the stream); otherwise the copy completes before returning, as
// with CUDA. Other layouts and dtype conversions never read-modify-write
// device memory through the host: uploads are staged densely on the device
// and scattered into the target by a kernel on the stream; downloads gather
// densely on the device first. Copies across devices run on the source's
// stream, ordered after the destination stream's earlier work and before
// its later work (what CUDA does), so the source's stream and its caching
// allocator see the copy as their own work.
#include <ATen/CachedTensorUtils.h>
#include <ATen/ExpandUtils.h>
#include <ATen/core/CachingHostAllocator.h>
#include <ATen/TensorIterator.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/_neg_view.h>
#include <ATen/ops/conj_physical.h>
#include <ATen/ops/neg.h>
#include <ATen/ops/view_as_real.h>
#include <c10/core/DeviceGuard.h>

#include "MaiaCheck.h"
#include "MaiaDtypes.h"
#include "MaiaStream.h"
#include "ops/EagerKernels.h"
#include "ops/Fallback.h"
#include "ops/MaiaOps.h"

namespace torch_maia::ops {
namespace {

bool isMaia(const at::Tensor& t) { return t.device().is_privateuseone(); }

/// Whether src and dst can be copied byte for byte: same dtype, both dense
/// and non-overlapping, with the same strides, and neither a conjugate or
/// negative view (whose values are not its bytes).
bool isBytewiseCopy(const at::Tensor& src, const at::Tensor& dst) {
  return src.dtype() == dst.dtype() && src.sizes() == dst.sizes() &&
         src.is_conj() == dst.is_conj() && !src.is_neg() && !dst.is_neg() &&
         src.is_non_overlapping_and_dense() && dst.is_non_overlapping_and_dense() &&
         src.strides() == dst.strides();
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

/// Orders the work queued on waiter from now on after what is queued on
/// producer so far, without blocking the host.
void streamWaitStream(maiaStream_t waiter, maiaStream_t producer) {
  maiaEvent_t ready = nullptr;
  MAIA_CHECK(maiaEventCreate(&ready, maiaEventDisableTiming));
  MAIA_CHECK(maiaEventRecord(ready, producer));
  MAIA_CHECK(maiaStreamWaitEvent(waiter, ready));
  MAIA_CHECK(maiaEventDestroy(ready));
}

void castOnDevice(const at::Tensor& src, const at::Tensor& dst);

/// castOnDevice between dtypes when one has no cast kernels (MaiaDtypes.h).
/// Complex values move as (real, imaginary) pairs of their real dtype; the
/// wider unsigned types convert on the host, as their other operators do.
void castWithoutKernels(const at::Tensor& src, const at::Tensor& dst) {
  if (src.is_complex() && dst.is_complex()) {
    castOnDevice(at::view_as_real(src), at::view_as_real(dst));
  } else if (dst.is_complex() && hasNativeKernels(src.scalar_type())) {
    at::Tensor pairs = at::view_as_real(dst);
    castOnDevice(src, pairs.select(-1, 0));
    at::Tensor imaginary = pairs.select(-1, 1);
    fill(imaginary, 0);
  } else if (src.is_complex() && hasNativeKernels(dst.scalar_type())) {
    castOnDevice(at::view_as_real(src).select(-1, 0), dst);  // CPU drops the imaginary part
  } else {
    noteHostFallback("maia copy from " + std::string(c10::toString(src.scalar_type())) +
                     " to " + c10::toString(dst.scalar_type()));
    at::Tensor host = at::empty(src.sizes(), src.options().device(at::kCPU));
    host.copy_(src);
    dst.copy_(host.to(dst.scalar_type()));
  }
}

/// Converts and/or re-strides src into dst on dst's device with a cast
/// kernel (src already on that device).
void castOnDevice(const at::Tensor& src, const at::Tensor& dst) {
  if (!hasNativeKernels(src.scalar_type()) || !hasNativeKernels(dst.scalar_type())) {
    castWithoutKernels(src, dst);
    return;
  }
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

/// The integer type of an element's width, to move elements of any dtype
/// (complex, unsigned, ...) with the integer cast kernels.
at::ScalarType bitsOfWidth(int64_t width) {
  switch (width) {
    case 1: return at::kChar;
    case 2: return at::kShort;
    case 4: return at::kInt;
    case 8: return at::kLong;
    default: TORCH_CHECK(false, "maia cannot move elements of ", width, " bytes");
  }
}

/// Copies src into dst on their device, any layouts; dtype conversions go
/// through the cast kernels, same-dtype copies move the elements' bits.
void copyOnDevice(const at::Tensor& src, const at::Tensor& dst) {
  if (src.scalar_type() != dst.scalar_type()) {
    castOnDevice(src, dst);
    return;
  }
  at::Tensor from = src, to = dst;
  if (from.element_size() == 16) {  // complex128: two 8-byte words
    from = at::view_as_real(from);
    to = at::view_as_real(to);
  }
  at::ScalarType bits = bitsOfWidth(from.element_size());
  castOnDevice(from.view(bits), to.view(bits));
}

void copyHostToMaia(const at::Tensor& src, const at::Tensor& dst, bool non_blocking) {
  c10::DeviceGuard guard(dst.device());
  if (!isBytewiseCopy(src, dst)) {
    // The host converts into a dense buffer laid out like dst when dst is
    // dense (one copy, no kernel), else into a contiguous staging buffer
    // that a kernel scatters into dst on the stream: device memory between
    // dst's elements is never written.
    bool dense = dst.is_non_overlapping_and_dense();
    at::Tensor host = dense ? at::empty_strided(dst.sizes(), dst.strides(),
                                                dst.options().device(at::kCPU))
                            : at::empty(dst.sizes(), dst.options().device(at::kCPU));
    host.copy_(src);
    if (dense) {
      copyHostToMaia(host, dst, /*non_blocking=*/false);
      return;
    }
    at::Tensor staged = at::empty(dst.sizes(), dst.options());
    copyHostToMaia(host, staged, /*non_blocking=*/false);
    copyOnDevice(staged, dst);
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
    // Gather src densely on the device, download only its elements, then
    // let the host convert and re-stride.
    at::Tensor dense = src;
    if (!src.is_non_overlapping_and_dense()) {
      dense = at::empty(src.sizes(), src.options());
      copyOnDevice(src, dense);
    }
    at::Tensor host = at::empty_strided(dense.sizes(), dense.strides(),
                                        dense.options().device(at::kCPU));
    copyMaiaToHost(dense, host, /*non_blocking=*/false);
    dst.copy_(host);
    return;
  }
  c10::Stream stream = currentStream(src.device().index());
  copyBytes(dst.data_ptr(), src.const_data_ptr(), src.nbytes(), maiaMemcpyDeviceToHost,
            src.device().index());
  if (non_blocking && recordPinned(dst, stream)) return;
  MAIA_CHECK(maiaStreamSynchronize(driverStream(stream)));
}

void copyMaiaToMaia(const at::Tensor& src, const at::Tensor& dst) {
  c10::DeviceIndex from = src.device().index(), to = dst.device().index();
  if (!isBytewiseCopy(src, dst)) {
    if (from == to) {
      c10::DeviceGuard guard(dst.device());
      copyOnDevice(src, dst);
      return;
    }
    // Across devices: make src dense on its device, move the bytes, then
    // convert and re-stride on the destination device.
    at::Tensor dense = src.contiguous();
    at::Tensor moved = at::empty(src.sizes(), dense.options().device(dst.device()));
    copyMaiaToMaia(dense, moved);
    c10::DeviceGuard guard(dst.device());
    copyOnDevice(moved, dst);
    return;
  }
  if (from == to) {
    copyBytes(dst.data_ptr(), src.const_data_ptr(), src.nbytes(), maiaMemcpyDeviceToDevice,
              to);
    return;
  }
  // As CUDA does: the copy runs on the source's current stream once the
  // destination's current stream has done its earlier work (which may still
  // use dst's block), and the destination's stream waits for the copy. An
  // in-place update of src, or a reuse of src's block by its stream's
  // allocator, is then ordered after the copy.
  maiaStream_t src_stream = currentDriverStream(from);
  maiaStream_t dst_stream = currentDriverStream(to);
  streamWaitStream(src_stream, dst_stream);
  copyBytes(dst.data_ptr(), src.const_data_ptr(), src.nbytes(), maiaMemcpyDeviceToDevice,
            from);
  streamWaitStream(dst_stream, src_stream);
}

/// A conjugate or negative view of maia memory as a tensor with its values:
/// resolved on the device by the conj and neg kernels, or, for dtypes without
/// them (complex32, uint16/32/64; see MaiaDtypes.h), downloaded as they are
/// and resolved by the CPU.
at::Tensor resolveBits(const at::Tensor& view) {
  at::Tensor bytes = view.is_conj() ? view.conj() : view;  // the same memory, bits cleared
  if (bytes.is_neg()) bytes = bytes._neg_view();
  const c10::ScalarType dtype = view.scalar_type();
  if (hasNativeKernels(dtype) || hasComplexKernels(dtype)) {
    at::Tensor values = view.is_conj() ? at::conj_physical(bytes) : bytes;
    return view.is_neg() ? at::neg(values) : values;
  }
  at::Tensor host = at::empty(bytes.sizes(), bytes.options().device(at::kCPU));
  host.copy_(bytes);
  if (view.is_conj()) host = host.conj();
  if (view.is_neg()) host = host._neg_view();
  return host.resolve_conj().resolve_neg();
}

}  // namespace

at::Tensor copyFrom(const at::Tensor& src, const at::Tensor& dst, bool non_blocking) {
  // ATen hands copies that involve maia to _copy_from before it broadcasts:
  // src is broadcast to dst's shape here, with CPU's error when it cannot be.
  const std::vector<int64_t> broadcast = at::infer_size(src.sizes(), dst.sizes());
  TORCH_CHECK(c10::IntArrayRef(broadcast) == dst.sizes(), "output with shape ", dst.sizes(),
              " doesn't match the broadcast shape ", c10::IntArrayRef(broadcast));
  const at::Tensor self = src.sizes() == dst.sizes() ? src : src.expand(dst.sizes());
  if (dst.numel() == 0) return dst;
  if (isMaia(self) && (self.is_conj() || self.is_neg()) &&
      (self.is_conj() != dst.is_conj() || self.is_neg())) {
    dst.copy_(resolveBits(self));  // to dst, wherever dst is
    return dst;
  }
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

at::Tensor& resultInto(at::Tensor& out, const at::Tensor& result) {
  at::native::resize_output(out, result.sizes());
  return out.copy_(result);
}

at::Scalar localScalarDense(const at::Tensor& self) {
  at::Tensor host = at::empty(self.sizes(), self.options().device(at::kCPU));
  copyMaiaToHost(self, host, /*non_blocking=*/false);
  return host.item();
}

}  // namespace torch_maia::ops
