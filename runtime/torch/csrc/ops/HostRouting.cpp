#include "ops/HostRouting.h"

#include <cstring>
#include <string_view>

namespace torch_maia::ops::routing {

c10::OperatorHandle findOperator(const char* name) {
  const char* dot = std::strchr(name, '.');
  const std::string base = "aten::" + (dot ? std::string(name, dot) : std::string(name));
  return c10::Dispatcher::singleton().findSchemaOrThrow(base.c_str(), dot ? dot + 1 : "");
}

bool computesComplex(const char* name) {
  // The eager kernels with c64/c128 instances (gen_eager_kernels.py COMPLEX):
  // unary operators with their in-place and out= variants (name, name_,
  // name.out; abs_ raises for complex tensors, as on the CPU), then the others.
  static constexpr std::string_view kUnary[] = {
      "neg", "reciprocal", "abs", "angle", "sgn", "exp", "log", "sqrt", "sigmoid",
  };
  static constexpr std::string_view kOps[] = {
      "add.Tensor", "add_.Tensor", "add.out", "sub.Tensor", "sub_.Tensor", "sub.out",
      "mul.Tensor", "mul_.Tensor", "mul.out", "div.Tensor", "div_.Tensor", "div.out",
      "div.Tensor_mode", "div_.Tensor_mode", "div.out_mode",  // modes raise, as on the CPU
      "eq.Tensor", "eq.Scalar", "eq.Tensor_out", "eq.Scalar_out", "eq_.Tensor", "eq_.Scalar",
      "ne.Tensor", "ne.Scalar", "ne.Tensor_out", "ne.Scalar_out", "ne_.Tensor", "ne_.Scalar",
      "conj_physical.out", "conj_physical_", "where.self", "where.self_out",
      "masked_fill_.Scalar", "masked_fill_.Tensor",
      "complex.out", "polar.out",  // complex results of real inputs (ComplexConstruct.cpp)
      "flip", "roll",  // pure copies (Roll.cpp)
      "_fft_c2c", "_fft_c2c.out", "_fft_r2c", "_fft_r2c.out", "_fft_c2r", "_fft_c2r.out",
  };
  const std::string_view op(name);
  for (std::string_view unary : kUnary) {
    if (op.substr(0, unary.size()) != unary) continue;
    const std::string_view variant = op.substr(unary.size());
    if (variant.empty() || variant == "_" || variant == ".out") return true;
  }
  for (std::string_view other : kOps)
    if (other == op) return true;
  return false;
}

}  // namespace torch_maia::ops::routing
