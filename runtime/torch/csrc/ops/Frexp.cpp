// frexp on maia: mantissa and int32 exponent of every element, by the NN
// binary's frexp kernel (runtime/kernels/nn/frexp.h) over the elements of
// a dense input in storage order; the outputs take the input's layout,
// as the CPU's TensorIterator gives them. The CPU's dtype rules and errors.
#include <ATen/ops/empty_like.h>
#include <torch/library.h>

#include <tuple>

#include "WorkSplit.h"
#include "ops/EagerKernels.h"
#include "ops/HostRouting.h"
#include "ops/MaiaOps.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;

std::tuple<Tensor, Tensor> frexp(const Tensor& self) {
  TORCH_CHECK(at::isFloatingType(self.scalar_type()),
              "torch.frexp() only supports floating-point dtypes");
  const Tensor dense = self.is_non_overlapping_and_dense() ? self : self.contiguous();
  Tensor mantissa = at::empty_like(dense);
  Tensor exponent = at::empty_like(dense, dense.options().dtype(at::kInt));
  const int64_t numel = dense.numel();
  if (numel > 0) {
    launchNn("frexp", self.scalar_type(),
             {rowMajorMemref(mantissa, {numel}), rowMajorMemref(exponent, {numel}),
              rowMajorMemref(dense, {numel})},
             programsFor(numel, numel), self.device());
  }
  return {mantissa, exponent};
}

std::tuple<Tensor&, Tensor&> frexpOut(const Tensor& self, Tensor& mantissa, Tensor& exponent) {
  TORCH_CHECK(at::isFloatingType(self.scalar_type()),
              "torch.frexp() only supports floating-point dtypes");
  TORCH_CHECK(mantissa.dtype() == self.dtype(), "torch.frexp() expects mantissa to have dtype ",
              self.dtype(), " but got ", mantissa.dtype());
  TORCH_CHECK(exponent.dtype() == at::kInt,
              "torch.frexp() expects exponent to have int dtype but got ", exponent.dtype());
  auto [m, e] = frexp(self);
  resultInto(mantissa, m);
  resultInto(exponent, e);
  return std::forward_as_tuple(mantissa, exponent);
}

}  // namespace

MAIA_NATIVE_KERNELS(m) {
  m.impl("frexp.Tensor", TORCH_FN(frexp));
  m.impl("frexp.Tensor_out", TORCH_FN(frexpOut));
}

}  // namespace torch_maia::ops
