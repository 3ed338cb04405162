// tril and triu on maia (functional, in-place and out=): one kernel of the
// NN binary (runtime/kernels/nn/triangular.h) over the matrices of the last
// two dimensions, any dtype, any batch. Causal attention masks (GPT-2,
// Llama) are built with them.
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include "WorkSplit.h"
#include "ops/EagerKernels.h"
#include "ops/HostRouting.h"
#include "ops/MaiaOps.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;

Tensor& triangularOut(const char* name, bool upper, const Tensor& self, int64_t diagonal,
                      Tensor& out) {
  TORCH_CHECK(self.dim() >= 2, name, ": input tensor must have at least 2 dimensions");
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), name, ": expected out to have dtype ",
              self.scalar_type(), ", but got ", out.scalar_type());
  TORCH_CHECK(out.device() == self.device(), name, ": expected out on ", self.device(),
              ", but got ", out.device());
  if (!out.is_same(self)) at::native::resize_output(out, self.sizes());
  if (self.numel() == 0) return out;
  const int64_t rows = self.size(-2), cols = self.size(-1);
  const int64_t batch = self.numel() / (rows * cols);
  // A view when the batch dimensions can be flattened, else a device copy.
  Tensor in = self.reshape({batch, rows, cols});
  // A strided out (e.g. tril_ of a transposed tensor) gets a dense result
  // copied in: the kernel writes rows of a (batch, rows, cols) memref.
  const bool dense = out.is_contiguous();
  Tensor target = dense ? out : newEmpty(self.sizes(), self.options());
  launchNn("triangular", self.scalar_type(),
           {rowMajorMemref(target, {batch, rows, cols}), memrefOf(in), intArg(diagonal),
            intArg(upper ? 1 : 0)},
           programsFor(batch * rows, self.numel()), self.device());
  if (!dense) out.copy_(target);
  return out;
}

template <bool Upper>
Tensor triangular(const Tensor& self, int64_t diagonal) {
  Tensor out = newEmpty(self.sizes(), self.options());
  return triangularOut(Upper ? "triu" : "tril", Upper, self, diagonal, out);
}

template <bool Upper>
Tensor& triangularInPlace(Tensor& self, int64_t diagonal) {
  return triangularOut(Upper ? "triu_" : "tril_", Upper, self, diagonal, self);
}

template <bool Upper>
Tensor& triangularOutVariant(const Tensor& self, int64_t diagonal, Tensor& out) {
  return triangularOut(Upper ? "triu" : "tril", Upper, self, diagonal, out);
}

MAIA_NATIVE_KERNELS(m) {
  m.impl("tril", TORCH_FN(triangular<false>));
  m.impl("tril_", TORCH_FN(triangularInPlace<false>));
  m.impl("tril.out", TORCH_FN(triangularOutVariant<false>));
  m.impl("triu", TORCH_FN(triangular<true>));
  m.impl("triu_", TORCH_FN(triangularInPlace<true>));
  m.impl("triu.out", TORCH_FN(triangularOutVariant<true>));
}

}  // namespace
}  // namespace torch_maia::ops
