// The tensor creation, storage and copy functions of Factory.cpp, Copy.cpp
// and Fill.cpp: the operators Register.cpp registers, and what other files
// reuse (newEmpty, resizeStorageBytes). The other operator files register
// their own operators and declare nothing here.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Storage.h>

namespace torch_maia::ops {

// Factory.cpp: tensor creation and storage.
at::Tensor empty(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                 std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                 std::optional<bool> pin_memory, std::optional<c10::MemoryFormat> memory_format);
/// A contiguous tensor of options' dtype on options' device, made without a
/// dispatch when that is a maia device: what operators allocate their
/// results with: a dispatch is a large share of a small op's host time.
at::Tensor newEmpty(c10::IntArrayRef size, const c10::TensorOptions& options);
at::Tensor emptyStrided(c10::IntArrayRef size, c10::IntArrayRef stride,
                        std::optional<c10::ScalarType> dtype, std::optional<c10::Layout> layout,
                        std::optional<c10::Device> device, std::optional<bool> pin_memory);
/// A ZeroTensor (autograd's zero gradients, e.g. sgn's): no memory, the
/// ZeroTensor dispatch key; ATen's ZeroTensor fallback materializes zeros
/// for an operator that reads it.
at::Tensor efficientZeroTensor(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                               std::optional<c10::Layout> layout,
                               std::optional<c10::Device> device,
                               std::optional<bool> pin_memory);
const at::Tensor& resize(const at::Tensor& self, c10::IntArrayRef size,
                         std::optional<c10::MemoryFormat> memory_format);
at::Tensor& setEmpty(at::Tensor& self);
/// Grows or shrinks a maia storage to nbytes, keeping its contents.
void resizeStorageBytes(const c10::Storage& storage, size_t nbytes);

// Copy.cpp: copies between maia and the host, and across maia devices.
at::Tensor copyFrom(const at::Tensor& self, const at::Tensor& dst, bool non_blocking);
at::Tensor copyFromAndResize(const at::Tensor& self, const at::Tensor& dst);
/// An out= variant's tail: out resized to result's shape (with ATen's
/// resize_output rules and warning) and result copied into it.
at::Tensor& resultInto(at::Tensor& out, const at::Tensor& result);
at::Scalar localScalarDense(const at::Tensor& self);

// Fill.cpp
at::Tensor& fill(at::Tensor& self, const at::Scalar& value);
at::Tensor& fillTensor(at::Tensor& self, const at::Tensor& value);
at::Tensor& zero(at::Tensor& self);

}  // namespace torch_maia::ops
