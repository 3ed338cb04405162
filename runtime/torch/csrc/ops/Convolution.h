// The device convolutions behind convolution_overrideable (Convolution.cpp:
// 1-D and 2-D; Convolution3d.cpp: 3-D as sums of 2-D ones over depth taps).
// Arguments as at::convolution's; the backwards compute the gradients
// output_mask asks for, undefined tensors for the others.
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <tuple>

namespace torch_maia::ops {

at::Tensor deviceConvolution(const at::Tensor& input, const at::Tensor& weight,
                             const at::Tensor& bias, c10::IntArrayRef stride,
                             c10::IntArrayRef padding, c10::IntArrayRef dilation, int64_t groups);
std::tuple<at::Tensor, at::Tensor, at::Tensor> deviceConvolutionBackward(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight,
    c10::IntArrayRef stride, c10::IntArrayRef padding, c10::IntArrayRef dilation,
    int64_t groups, std::array<bool, 3> output_mask);
at::Tensor deviceTransposedConvolution(const at::Tensor& input, const at::Tensor& weight,
                                       const at::Tensor& bias, c10::IntArrayRef stride,
                                       c10::IntArrayRef padding,
                                       c10::IntArrayRef output_padding,
                                       c10::IntArrayRef dilation, int64_t groups);
std::tuple<at::Tensor, at::Tensor, at::Tensor> deviceTransposedConvolutionBackward(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight,
    c10::IntArrayRef stride, c10::IntArrayRef padding, c10::IntArrayRef dilation,
    int64_t groups, std::array<bool, 3> output_mask);

at::Tensor deviceConvolution3d(const at::Tensor& input, const at::Tensor& weight,
                               const at::Tensor& bias, c10::IntArrayRef stride,
                               c10::IntArrayRef padding, c10::IntArrayRef dilation,
                               int64_t groups);
std::tuple<at::Tensor, at::Tensor, at::Tensor> deviceConvolution3dBackward(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight,
    c10::IntArrayRef stride, c10::IntArrayRef padding, c10::IntArrayRef dilation,
    int64_t groups, std::array<bool, 3> output_mask);
at::Tensor deviceTransposedConvolution3d(const at::Tensor& input, const at::Tensor& weight,
                                         const at::Tensor& bias, c10::IntArrayRef stride,
                                         c10::IntArrayRef padding,
                                         c10::IntArrayRef output_padding,
                                         c10::IntArrayRef dilation, int64_t groups);
std::tuple<at::Tensor, at::Tensor, at::Tensor> deviceTransposedConvolution3dBackward(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight,
    c10::IntArrayRef stride, c10::IntArrayRef padding, c10::IntArrayRef dilation,
    int64_t groups, std::array<bool, 3> output_mask);

}  // namespace torch_maia::ops
