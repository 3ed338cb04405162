// softmax and log_softmax on maia, and their backwards: one launch of the
// NN kernel binary (runtime/kernels/nn, maia_nn_kernels.maiabin) over the
// input made contiguous (a device copy when it is not) and viewed as
// [outer, n, inner], n the softmax dimension.
#include <ATen/WrapDimUtils.h>
#include <torch/library.h>

#include "WorkSplit.h"
#include "ops/EagerKernels.h"
#include "ops/HostRouting.h"
#include "ops/MaiaOps.h"
#include "ops/OpUtils.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;

Tensor softmaxForward(const Tensor& self, int64_t dim, bool half_to_float, bool log) {
  const char* op = log ? "log_softmax" : "softmax";
  TORCH_CHECK(!half_to_float, op, " with half to float conversion is not supported on maia");
  checkFloating(op, self);
  Tensor x = (self.dim() == 0 ? self.view({1}) : self).contiguous();
  dim = at::maybe_wrap_dim(dim, x.dim());
  Tensor out = newEmpty(x.sizes(), x.options());
  if (x.numel() > 0) {
    int64_t outer = prod(x.sizes(), 0, dim), n = x.size(dim),
            inner = prod(x.sizes(), dim + 1, x.dim());
    launchNn("softmax", x.scalar_type(),
           {memrefOf(out.view({outer, n, inner})), memrefOf(x.view({outer, n, inner})),
            intArg(log)},
           programsFor(outer * inner, x.numel()), x.device());
  }
  return self.dim() == 0 ? out.view(c10::IntArrayRef{}) : out;
}

Tensor softmaxBackward(const Tensor& grad, const Tensor& output, int64_t dim,
                       c10::ScalarType input_dtype, bool log) {
  checkFloating(log ? "log_softmax_backward" : "softmax_backward", output);
  TORCH_CHECK(grad.sizes() == output.sizes(), "softmax backward: grad_output ", grad.sizes(),
              " and output ", output.sizes(), " differ in shape");
  Tensor y = (output.dim() == 0 ? output.view({1}) : output).contiguous();
  Tensor g = grad.to(output.scalar_type()).reshape(y.sizes()).contiguous();
  dim = at::maybe_wrap_dim(dim, y.dim());
  Tensor gi = newEmpty(y.sizes(), y.options());
  if (y.numel() > 0) {
    int64_t outer = prod(y.sizes(), 0, dim), n = y.size(dim),
            inner = prod(y.sizes(), dim + 1, y.dim());
    launchNn("softmax_bwd", y.scalar_type(),
           {memrefOf(gi.view({outer, n, inner})), memrefOf(g.view({outer, n, inner})),
            memrefOf(y.view({outer, n, inner})), intArg(log)},
           programsFor(outer * inner, y.numel()), y.device());
  }
  Tensor result = output.dim() == 0 ? gi.view(c10::IntArrayRef{}) : gi;
  return result.scalar_type() == input_dtype ? result : result.to(input_dtype);
}

MAIA_NATIVE_KERNELS(m) {
  m.impl("_softmax", [](const Tensor& self, int64_t dim, bool half_to_float) {
    return softmaxForward(self, dim, half_to_float, false);
  });
  m.impl("_log_softmax", [](const Tensor& self, int64_t dim, bool half_to_float) {
    return softmaxForward(self, dim, half_to_float, true);
  });
  m.impl("_softmax_backward_data", [](const Tensor& grad, const Tensor& output, int64_t dim,
                                      c10::ScalarType input_dtype) {
    return softmaxBackward(grad, output, dim, input_dtype, false);
  });
  m.impl("_log_softmax_backward_data", [](const Tensor& grad, const Tensor& output,
                                          int64_t dim, c10::ScalarType input_dtype) {
    return softmaxBackward(grad, output, dim, input_dtype, true);
  });
}

}  // namespace
}  // namespace torch_maia::ops
