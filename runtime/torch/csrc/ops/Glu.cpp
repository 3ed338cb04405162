// glu (functional and out=) and glu_backward on maia: elementwise kernels
// of the eager binary over the input's two halves, launched over
// TensorIterators built as the CPU's glu builds them, so shapes, checks,
// dtype rules and output strides are the CPU's.
//
// The backward is the CPU's two steps: the first half's gradient
// sigmoid(b) * grad, the second's (1 - s) * s * a * grad, s being sigmoid(b)
// rounded to the dtype as the CPU stores it before reading it back.
#include <ATen/TensorIterator.h>
#include <ATen/WrapDimUtils.h>
#include <torch/library.h>

#include "ops/EagerKernels.h"
#include "ops/HostRouting.h"
#include "ops/MaiaOps.h"
#include "ops/OpUtils.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;

/// glu of self along dim into out (undefined: allocated). ATen's structured
/// meta for glu builds its iterator over halves it does not keep alive, so
/// the iterator is built here, as the meta builds it, over halves that live
/// until the launch.
Tensor gluInto(const Tensor& self, int64_t dim, const Tensor& out) {
  TORCH_CHECK(self.dim() > 0, "glu does not support scalars because halving size must be even");
  const int64_t wrap_dim = c10::maybe_wrap_dim(dim, self.dim());
  const int64_t n = self.size(wrap_dim);
  TORCH_CHECK(n % 2 == 0, "Halving dimension must be even, but dimension ", wrap_dim,
              " is size ", n);
  const Tensor a = self.narrow(wrap_dim, 0, n / 2), b = self.narrow(wrap_dim, n / 2, n / 2);
  at::TensorIterator iter = at::TensorIterator::borrowing_binary_op(out, a, b);
  checkFloatDtype("glu_cpu", iter.common_dtype());
  launchElementwise(eagerKernel("glu", iter.common_dtype()), iter);
  iter.cast_outputs();  // an out= tensor of another dtype, as the CPU's loops do
  return iter.output();
}

Tensor glu(const Tensor& self, int64_t dim) { return gluInto(self, dim, Tensor()); }

Tensor& gluOut(const Tensor& self, int64_t dim, Tensor& out) {
  gluInto(self, dim, out);
  return out;
}

Tensor& gluBackwardOut(const Tensor& grad_output, const Tensor& input, int64_t dim,
                       Tensor& grad_input) {
  TORCH_CHECK(input.dim() > 0, "glu does not support 0-dimensional tensors");
  const int64_t wrap_dim = c10::maybe_wrap_dim(dim, input.dim());
  const int64_t n = input.size(wrap_dim);
  TORCH_CHECK(n % 2 == 0, "Halving dimension must be even, but dimension ", wrap_dim,
              " is size ", n);
  checkFloatDtype("glu_backward_cpu", input.scalar_type());
  grad_input.resize_as_(input);
  const int64_t half = n / 2;
  const Tensor a = input.narrow(wrap_dim, 0, half), b = input.narrow(wrap_dim, half, half);
  const Tensor grad_a = grad_input.narrow(wrap_dim, 0, half);
  const Tensor grad_b = grad_input.narrow(wrap_dim, half, half);
  at::TensorIterator second = at::TensorIteratorConfig()
                                  .add_output(grad_b)
                                  .add_const_input(a)
                                  .add_const_input(b)
                                  .add_const_input(grad_output)
                                  .build();
  launchElementwise(eagerKernel("glu_backward_second", input.scalar_type()), second);
  at::TensorIterator first = at::TensorIteratorConfig()
                                 .add_output(grad_a)
                                 .add_const_input(b)
                                 .add_const_input(grad_output)
                                 .build();
  launchElementwise(eagerKernel("glu_backward_first", input.scalar_type()), first);
  return grad_input;
}

Tensor gluBackward(const Tensor& grad_output, const Tensor& input, int64_t dim) {
  Tensor grad_input = newEmpty({0}, input.options());
  return gluBackwardOut(grad_output, input, dim, grad_input);
}

MAIA_NATIVE_KERNELS(m) {
  m.impl("glu", TORCH_FN(glu));
  m.impl("glu.out", TORCH_FN(gluOut));
  m.impl("glu_backward", TORCH_FN(gluBackward));
  m.impl("glu_backward.grad_input", TORCH_FN(gluBackwardOut));
}

}  // namespace
}  // namespace torch_maia::ops
