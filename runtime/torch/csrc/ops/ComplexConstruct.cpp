// torch.complex and torch.polar on maia: the result's real and imaginary
// parts (views through view_as_real) written by device copies of the
// broadcast inputs, or of abs * cos(angle) and abs * sin(angle). float32
// and float64 (complex64/complex128, maia's complex dtypes); float16 inputs
// (complex32) take the counted host path.
#include <ATen/ExpandUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/complex.h>
#include <ATen/ops/polar.h>
#include <ATen/ops/view_as_real.h>
#include <torch/library.h>

#include "ops/Fallback.h"
#include "ops/HostRouting.h"
#include "ops/MaiaOps.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;

void checkParts(const Tensor& real, const Tensor& imag, const Tensor& out) {
  const c10::ScalarType dtype = real.scalar_type();
  TORCH_CHECK(dtype == imag.scalar_type(), "Expected object of scalar type ", dtype,
              " but got scalar type ", imag.scalar_type(), " for second argument");
  TORCH_CHECK(dtype == at::kFloat || dtype == at::kDouble || dtype == at::kHalf,
              "Expected both inputs to be Half, Float or Double tensors but got ", dtype,
              " and ", imag.scalar_type());
  TORCH_CHECK(out.scalar_type() == c10::toComplexType(dtype), "Expected object of scalar type ",
              c10::toComplexType(dtype), " but got scalar type ", out.scalar_type(),
              " for argument 'out'");
}

/// out's real and imaginary parts, resized to the broadcast shape.
std::pair<Tensor, Tensor> partsOf(Tensor& out, const Tensor& a, const Tensor& b) {
  at::native::resize_output(out, at::infer_size(a.sizes(), b.sizes()));
  Tensor parts = at::view_as_real(out);
  return {parts.select(-1, 0), parts.select(-1, 1)};
}

Tensor& complexOut(const Tensor& real, const Tensor& imag, Tensor& out) {
  checkParts(real, imag, out);
  if (real.scalar_type() == at::kHalf) {
    noteHostFallback("aten::complex.out");
    return resultInto(out, at::complex(real.cpu(), imag.cpu()).to(out.device()));
  }
  auto [re, im] = partsOf(out, real, imag);
  re.copy_(real.expand(re.sizes()));
  im.copy_(imag.expand(im.sizes()));
  return out;
}

Tensor& polarOut(const Tensor& abs, const Tensor& angle, Tensor& out) {
  checkParts(abs, angle, out);
  if (abs.scalar_type() == at::kHalf) {
    noteHostFallback("aten::polar.out");
    return resultInto(out, at::polar(abs.cpu(), angle.cpu()).to(out.device()));
  }
  auto [re, im] = partsOf(out, abs, angle);
  re.copy_(abs.mul(angle.cos()).expand(re.sizes()));
  im.copy_(abs.mul(angle.sin()).expand(im.sizes()));
  return out;
}

}  // namespace

MAIA_NATIVE_KERNELS(m) {
  m.impl("complex.out", TORCH_FN(complexOut));
  m.impl("polar.out", TORCH_FN(polarOut));
}

}  // namespace torch_maia::ops
