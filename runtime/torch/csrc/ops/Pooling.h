// What the 2-D pooling operators (Pooling.cpp) share with the 3-D ones
// (Pooling3d.cpp).
#pragma once

#include <ATen/core/Tensor.h>

namespace torch_maia::ops {

/// grad_input (N, C, H, W or C, H, W) from grad_output through the flat
/// per-plane indices of max and adaptive max pooling. The kernel
/// accumulates in the compute type: float16/bfloat16 gradients go through a
/// float32 buffer cast back on the device.
void maxPoolBackwardKernel(const char* op, const at::Tensor& grad_output,
                           const at::Tensor& indices, const at::Tensor& grad_input);

}  // namespace torch_maia::ops
