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
  // The eager kernels with c64/c128 instances (gen_eager_kernels.py COMPLEX).
  static constexpr std::string_view kOps[] = {
      "add.Tensor", "add_.Tensor", "add.out", "sub.Tensor", "sub_.Tensor", "sub.out",
      "mul.Tensor", "mul_.Tensor", "mul.out", "neg", "neg_", "neg.out",
      "eq.Tensor", "eq.Scalar", "eq.Tensor_out", "eq.Scalar_out", "eq_.Tensor", "eq_.Scalar",
      "ne.Tensor", "ne.Scalar", "ne.Tensor_out", "ne.Scalar_out", "ne_.Tensor", "ne_.Scalar",
  };
  for (std::string_view op : kOps)
    if (op == name) return true;
  return false;
}

}  // namespace torch_maia::ops::routing
