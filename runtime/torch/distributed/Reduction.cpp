#include "Reduction.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include "ops/EagerKernels.h"

namespace torch_maia::distributed {
namespace {

using c10d::ReduceOp;

/// out = a op b, elementwise; out may be a.
void combineOut(at::Tensor& out, const at::Tensor& a, const at::Tensor& b,
                ReduceOp::RedOpType op) {
  // maia implements the bitwise ops in place only (their .Tensor_out would
  // fall back to the host).
  const bool bitwise = op == ReduceOp::BAND || op == ReduceOp::BOR || op == ReduceOp::BXOR;
  if (bitwise && !a.is_same(out)) out.copy_(a);
  switch (op) {
    case ReduceOp::SUM: at::add_out(out, a, b); break;
    case ReduceOp::PRODUCT: at::mul_out(out, a, b); break;
    case ReduceOp::MIN: at::minimum_out(out, a, b); break;
    case ReduceOp::MAX: at::maximum_out(out, a, b); break;
    case ReduceOp::BAND: out.bitwise_and_(b); break;
    case ReduceOp::BOR: out.bitwise_or_(b); break;
    case ReduceOp::BXOR: out.bitwise_xor_(b); break;
    default: TORCH_CHECK(false, "maia c10d: a transport got reduction ", int(op));
  }
}

constexpr size_t kMaxFold = 4;

/// The eager binary's kernel prefix ("fold4_sum") reducing arity (3 or 4)
/// inputs with op in dtype, or nullptr where it has none: its fold kernels
/// cover the dtypes reductions travel in (MaiaBackend.cpp's wireDtype).
const char* foldKernel(ReduceOp::RedOpType op, size_t arity, at::ScalarType dtype) {
  // Static names: the kernel cache is keyed by the name's address.
  static constexpr const char* kNames[2][7] = {
      {"fold3_sum", "fold3_prod", "fold3_min", "fold3_max", "fold3_band", "fold3_bor",
       "fold3_bxor"},
      {"fold4_sum", "fold4_prod", "fold4_min", "fold4_max", "fold4_band", "fold4_bor",
       "fold4_bxor"}};
  const bool integral = dtype == at::kLong || dtype == at::kInt || dtype == at::kChar ||
                        dtype == at::kByte;
  if (!integral && dtype != at::kFloat && dtype != at::kDouble) return nullptr;
  if (arity < 3 || arity > kMaxFold) return nullptr;
  int index = -1;
  switch (op) {
    case ReduceOp::SUM: index = 0; break;
    case ReduceOp::PRODUCT: index = 1; break;
    case ReduceOp::MIN: index = 2; break;
    case ReduceOp::MAX: index = 3; break;
    case ReduceOp::BAND: index = integral ? 4 : -1; break;
    case ReduceOp::BOR: index = integral ? 5 : -1; break;
    case ReduceOp::BXOR: index = integral ? 6 : -1; break;
    default: break;
  }
  return index < 0 ? nullptr : kNames[arity - 3][index];
}

}  // namespace

void combine(const at::Tensor& result, const std::vector<at::Tensor>& sources,
             ReduceOp::RedOpType op) {
  TORCH_INTERNAL_ASSERT(sources.size() >= 2);
  at::Tensor out = result;  // the *_out functions take a non-const reference
  // Each pass reduces the result so far (after the first) and up to
  // kMaxFold - 1 more sources.
  size_t next = 0;
  while (next < sources.size()) {
    std::vector<const at::Tensor*> inputs;
    if (next > 0) inputs.push_back(&out);
    while (inputs.size() < kMaxFold && next < sources.size()) inputs.push_back(&sources[next++]);
    // Two inputs (or a dtype or op without a fold kernel): binary kernels.
    const char* kernel = foldKernel(op, inputs.size(), out.scalar_type());
    if (kernel == nullptr) {
      for (size_t i = 1; i < inputs.size(); ++i)
        combineOut(out, i == 1 ? *inputs[0] : out, *inputs[i], op);
      continue;
    }
    std::vector<const at::Tensor*> operands{&out};
    operands.insert(operands.end(), inputs.begin(), inputs.end());
    ops::launchDense(ops::eagerKernel(kernel, out.scalar_type()), operands, out.numel());
  }
}

}  // namespace torch_maia::distributed
