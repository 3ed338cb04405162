// prelu on maia: _prelu_kernel and _prelu_kernel_backward, the two
// operators F.prelu and nn.PReLU reach (ATen's composite prelu reshapes the
// weight to broadcast over the channels first; autograd sums the weight's
// per-element gradient back to its shape). Elementwise kernels of the eager
// binary over TensorIterators built as the CPU builds them; the backward is
// one launch writing both gradients.
#include <ATen/TensorIterator.h>
#include <ATen/ops/empty_like.h>
#include <torch/library.h>

#include <tuple>

#include "ops/EagerKernels.h"
#include "ops/HostRouting.h"
#include "ops/MaiaOps.h"
#include "ops/OpUtils.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;

Tensor preluKernel(const Tensor& self, const Tensor& weight) {
  Tensor result = at::empty_like(self);
  at::TensorIterator iter = at::TensorIteratorConfig()
                                .add_output(result)
                                .add_const_input(self)
                                .add_const_input(weight)
                                .build();
  checkFloatDtype("prelu_cpu", iter.dtype());
  launchElementwise(eagerKernel("prelu", iter.dtype()), iter);
  return result;
}

std::tuple<Tensor, Tensor> preluKernelBackward(const Tensor& grad_output, const Tensor& self,
                                               const Tensor& weight) {
  Tensor grad_self = newEmpty({0}, self.options());
  Tensor grad_weight = newEmpty({0}, weight.options());
  at::TensorIterator iter = at::TensorIteratorConfig()
                                .add_output(grad_self)
                                .add_output(grad_weight)
                                .add_const_input(self)
                                .add_const_input(weight)
                                .add_const_input(grad_output)
                                .build();
  checkFloatDtype("prelu_backward_cpu", iter.dtype());
  launchElementwise(eagerKernel("prelu_backward", iter.dtype()), iter);
  return {grad_self, grad_weight};
}

MAIA_NATIVE_KERNELS(m) {
  m.impl("_prelu_kernel", TORCH_FN(preluKernel));
  m.impl("_prelu_kernel_backward", TORCH_FN(preluKernelBackward));
}

}  // namespace
}  // namespace torch_maia::ops
