// What the 2-D pooling operators (Pooling.cpp) share with the 3-D ones
// (Pooling3d.cpp).
#pragma once

#include <ATen/core/Tensor.h>

#include <initializer_list>

namespace torch_maia::ops {

/// A pooling tensor's rows: every element but the last dimension
/// ((n, c, y) of a 2-D pool's tensor, (n, c, d, y) of a 3-D one), the unit
/// its kernels split over programs.
inline int64_t rowsOf(const at::Tensor& t) {
  return t.numel() == 0 ? 0 : t.numel() / t.size(-1);
}

/// grad_input (N, C, H, W or C, H, W) from grad_output through the flat
/// per-plane indices of max and adaptive max pooling. The kernel
/// accumulates in the compute type: float16/bfloat16 gradients go through a
/// float32 buffer cast back on the device.
void maxPoolBackwardKernel(const char* op, const at::Tensor& grad_output,
                           const at::Tensor& indices, const at::Tensor& grad_input);

/// One spatial dimension of a pooling window: input and output sizes and
/// the window's kernel, stride, padding and dilation along it.
struct PoolDim {
  int64_t input, output, kernel, stride, padding, dilation;
};

/// Raises a ValueError naming the geometry when a max pool's window lies
/// entirely in the padding along one of dims. ATen's checks allow that
/// with dilation (kernel 2, dilation 2, padding 1 over a size-1 dimension):
/// the forward gives -inf and an index of no input element, which the
/// backward would scatter through (the CPU's kernel writes out of bounds;
/// maia's would trap and leave the device in its sticky error state).
/// The gradient is undefined there, so the backward refuses it on the host.
void checkNoWindowInPadding(const char* op, std::initializer_list<PoolDim> dims);

}  // namespace torch_maia::ops
