// The torch.special functions the CPU computes for float32 and float64 only
// (integer inputs promoted to the default float dtype, float16/bfloat16
// refused with the CPU kernel's error): the Bessel functions J, Y, K (and
// scaled K), the modified I0/I1 again, the spherical j0, Airy Ai, erfcx,
// log_ndtr, ndtri and the Hurwitz zeta function; and polygamma of every
// order. The eager kernel binary computes them (functors in
// runtime/kernels/eager/bessel_ops.h, normal_ops.h, gamma_ops.h).
#include <ATen/ops/result_type.h>
#include <torch/library.h>

#include "ops/ElementwiseLaunch.h"
#include "ops/HostRouting.h"
#include "ops/OpUtils.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;

void checkNotReducedFloat(const char* cpu_name, c10::ScalarType dtype) {
  checkDtype(cpu_name, dtype, !at::isReducedFloatingType(dtype));
}

Tensor& singleOrDoubleUnaryOut(const char* kernel, const char* cpu_name, const Tensor& self,
                               Tensor& out) {
  checkNotReducedFloat(cpu_name, self.scalar_type());
  return unaryOut(kernel, Result::FloatOnly, self, out);
}

Tensor& zetaOut(const Tensor& self, const Tensor& other, Tensor& out) {
  checkNotReducedFloat("zeta_cpu", at::result_type(self, other));
  return binaryOut("special_zeta", Result::FloatOnly, self, other, out);
}

/// polygamma(0, x) is digamma; higher orders take n as the kernel's scalar.
Tensor& polygammaOut(int64_t n, const Tensor& self, Tensor& out) {
  TORCH_CHECK(n >= 0, "polygamma(n, x) does not support negative n.");
  if (n == 0) return unaryOut("digamma", Result::FloatOnly, self, out);
  return unaryOut("polygamma", Result::FloatOnly, self, out,
                  FloatArgs{static_cast<double>(n)});
}

}  // namespace

/// NAME and NAME.out of a float32/float64 special function computed by the
/// unary KERNEL, refusing reduced floats as the CPU's CPU_NAME.
#define MAIA_SINGLE_DOUBLE_SPECIAL(NAME, KERNEL, CPU_NAME)                                 \
  m.impl(NAME, [](const Tensor& a) {                                                       \
    Tensor out;                                                                            \
    return singleOrDoubleUnaryOut(KERNEL, CPU_NAME, a, out);                               \
  });                                                                                      \
  m.impl(NAME ".out", [](const Tensor& a, Tensor& out) -> Tensor& {                         \
    return singleOrDoubleUnaryOut(KERNEL, CPU_NAME, a, out);                               \
  })

/// A special function whose kernel has the operator's name.
#define MAIA_SPECIAL_FUNCTION(NAME, CPU_NAME) MAIA_SINGLE_DOUBLE_SPECIAL(NAME, NAME, CPU_NAME)

MAIA_NATIVE_KERNELS(m) {
  MAIA_SINGLE_DOUBLE_SPECIAL("special_modified_bessel_i0", "i0", "modified_bessel_i0_cpu");
  MAIA_SINGLE_DOUBLE_SPECIAL("special_modified_bessel_i1", "special_i1",
                             "modified_bessel_i1_cpu");
  MAIA_SPECIAL_FUNCTION("special_bessel_j0", "bessel_j0_cpu");
  MAIA_SPECIAL_FUNCTION("special_bessel_j1", "bessel_j1_cpu");
  MAIA_SPECIAL_FUNCTION("special_bessel_y0", "bessel_y0_cpu");
  MAIA_SPECIAL_FUNCTION("special_bessel_y1", "bessel_y1_cpu");
  MAIA_SPECIAL_FUNCTION("special_modified_bessel_k0", "modified_bessel_k0_cpu");
  MAIA_SPECIAL_FUNCTION("special_modified_bessel_k1", "modified_bessel_k1_cpu");
  MAIA_SPECIAL_FUNCTION("special_scaled_modified_bessel_k0", "scaled_modified_bessel_k0_cpu");
  MAIA_SPECIAL_FUNCTION("special_scaled_modified_bessel_k1", "scaled_modified_bessel_k1_cpu");
  MAIA_SPECIAL_FUNCTION("special_spherical_bessel_j0", "spherical_bessel_j0_cpu");
  MAIA_SPECIAL_FUNCTION("special_airy_ai", "airy_ai_cpu");
  MAIA_SPECIAL_FUNCTION("special_erfcx", "erfcx_cpu");
  MAIA_SPECIAL_FUNCTION("special_log_ndtr", "log_ndtr_cpu");
  MAIA_SPECIAL_FUNCTION("special_ndtri", "ndtri_cpu");
  m.impl("special_zeta", [](const Tensor& a, const Tensor& b) {
    Tensor out;
    return zetaOut(a, b, out);
  });
  m.impl("special_zeta.out", TORCH_FN(zetaOut));
  m.impl("polygamma", [](int64_t n, const Tensor& a) {
    Tensor out;
    return polygammaOut(n, a, out);
  });
  m.impl("polygamma.out", TORCH_FN(polygammaOut));
  m.impl("polygamma_", [](Tensor& a, int64_t n) -> Tensor& { return polygammaOut(n, a, a); });
}

}  // namespace torch_maia::ops
