// The LDL^T factorization on maia (float32/float64): linalg_ldl_factor_ex
// and linalg_ldl_solve with their out= forms (so linalg.ldl_factor and
// ldl_solve), by the Bunch-Kaufman kernels of runtime/kernels/nn/ldl.h:
// LAPACK's sytf2 and sytrs on the lower triangle, so LD, the pivots and
// info are the CPU's (its sytrf runs the same unblocked code below its
// block size). ATen's structured meta functions check the arguments and
// lay out the results; complex inputs stay on the counted host fallback.
#include <ATen/ops/_linalg_check_errors.h>
#include <ATen/ops/linalg_ldl_factor_ex_meta.h>
#include <ATen/ops/linalg_ldl_solve_meta.h>
#include <torch/library.h>

#include "ops/HostRouting.h"
#include "ops/LinalgSupport.h"
#include "ops/Structured.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;
using namespace linalg;
namespace meta = at::meta;

std::array<Tensor, 3> ldlFactor(const Tensor& a, bool hermitian, bool check_errors,
                                Given<3> given) {
  Structured<meta::structured_linalg_ldl_factor_ex, 3> op(given);
  op.meta(a, hermitian, check_errors);
  checkSingleOrDouble("ldl_factor_kernel_cpu", a);
  auto& [ld, pivots, info] = op.outputs;
  ld.copy_(a.tril());  // the kernel reads and writes the lower triangle only
  if (ld.numel() > 0) {
    inFlatBatches(ld, 2, [&](const Tensor& flat_ld) {
      inFlatBatches(pivots, 1, [&](const Tensor& flat_pivots) {
        inFlatBatches(info, 0, [&](const Tensor& flat_info) {
          launchLinalg("ldl_factor", ld, flat_ld.size(0), flat_ld.numel() * ld.size(-1),
                       {memrefOf(flat_ld), memrefOf(flat_pivots), memrefOf(flat_info)});
        });
      });
    });
  } else {
    info.zero_();
  }
  if (check_errors) at::_linalg_check_errors(info, "torch.linalg.ldl_factor_ex", a.dim() == 2);
  return op.outputs;
}

std::array<Tensor, 1> ldlSolve(const Tensor& ld, const Tensor& pivots, const Tensor& b,
                               bool hermitian, Given<1> given) {
  Structured<meta::structured_linalg_ldl_solve, 1> op(given);
  op.meta(ld, pivots, b, hermitian);
  checkSingleOrDouble("ldl_solve_kernel_cpu", ld);
  const Tensor& x = op.outputs[0];
  if (x.numel() == 0) return op.outputs;
  if (!x.is_same(b)) x.copy_(b);
  const auto [flat_ld, flat_pivots] = factorsFor(ld, pivots, x);
  inFlatBatches(x, 2, [&](const Tensor& flat_x) {
    launchLinalg("ldl_solve", x, flat_x.size(0), flat_x.numel() * x.size(-2) * 2,
                 {memrefOf(flat_ld), memrefOf(flat_pivots), memrefOf(flat_x)});
  });
  return op.outputs;
}

}  // namespace

MAIA_NATIVE_KERNELS(m) {
  using T = const Tensor&;
  m.impl("linalg_ldl_factor_ex", [](T a, bool hermitian, bool check_errors) {
    return asTuple(ldlFactor(a, hermitian, check_errors, {}));
  });
  m.impl("linalg_ldl_factor_ex.out", [](T a, bool hermitian, bool check_errors, Tensor& ld,
                                        Tensor& pivots, Tensor& info) {
    ldlFactor(a, hermitian, check_errors, {&ld, &pivots, &info});
    return std::forward_as_tuple(ld, pivots, info);
  });
  m.impl("linalg_ldl_solve", [](T ld, T pivots, T b, bool hermitian) {
    return ldlSolve(ld, pivots, b, hermitian, {})[0];
  });
  m.impl("linalg_ldl_solve.out",
         [](T ld, T pivots, T b, bool hermitian, Tensor& out) -> Tensor& {
           ldlSolve(ld, pivots, b, hermitian, {&out});
           return out;
         });
}

}  // namespace torch_maia::ops
