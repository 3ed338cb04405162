// LU on maia (float32/float64; complex on the counted host fallback
// through HostRouting): linalg_lu_factor_ex, linalg_lu_solve, linalg_lu,
// lu_unpack, and what ATen composes from them per backend: _linalg_solve_ex,
// linalg_inv_ex, _linalg_det, _linalg_slogdet. Kernels: lu_factor, lu_solve
// and lu_permutation of runtime/kernels/nn/linalg.h, programs over batch
// entries.
//
// ATen's structured meta functions check the arguments and lay out the
// results (batches of column-major matrices, as LAPACK's); the
// implementations follow ATen's CPU ones step for step (the A^T trick of
// solve/det/slogdet included, so LU and pivots outputs are the CPU's), with
// the kernels in place of LAPACK. Errors from info are ATen's own
// _linalg_check_errors, one host read of info when check_errors asks.
#include <ATen/ops/_linalg_check_errors.h>
#include <ATen/ops/_linalg_det_meta.h>
#include <ATen/ops/_linalg_slogdet_meta.h>
#include <ATen/ops/_linalg_solve_ex_meta.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/linalg_inv_ex_meta.h>
#include <ATen/ops/linalg_lu_factor_ex.h>
#include <ATen/ops/linalg_lu_factor_ex_meta.h>
#include <ATen/ops/linalg_lu_meta.h>
#include <ATen/ops/linalg_lu_solve_meta.h>
#include <ATen/ops/linalg_solve_ex.h>
#include <ATen/ops/lu_unpack_meta.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/prod.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/tril.h>
#include <ATen/ops/triu.h>
#include <ATen/ops/zeros_like.h>
#include <torch/library.h>

#include "ops/HostRouting.h"
#include "ops/LinalgSupport.h"
#include "ops/Structured.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;
using namespace linalg;
namespace meta = at::meta;

void luFactorInto(const Tensor& a, bool pivot, bool check_errors, const Tensor& lu,
                  const Tensor& pivots, const Tensor& info) {
  TORCH_CHECK(pivot, "linalg.lu_factor: LU without pivoting is not implemented on the CPU");
  checkSingleOrDouble("lu_cpu", a);
  if (!lu.is_same(a)) lu.copy_(a);
  if (lu.numel() > 0) {
    inFlatBatches(lu, 2, [&](const Tensor& flat_lu) {
      inFlatBatches(pivots, 1, [&](const Tensor& flat_pivots) {
        inFlatBatches(info, 0, [&](const Tensor& flat_info) {
          launchLinalg("lu_factor", lu, flat_lu.size(0),
                       flat_lu.numel() * std::min(lu.size(-2), lu.size(-1)),
                       {memrefOf(flat_lu), memrefOf(flat_pivots), memrefOf(flat_info)});
        });
      });
    });
  } else {
    info.zero_();
  }
  if (check_errors) at::_linalg_check_errors(info, "torch.linalg.lu_factor_ex", a.dim() == 2);
}

std::array<Tensor, 3> luFactor(const Tensor& a, bool pivot, bool check_errors, Given<3> given) {
  Structured<meta::structured_linalg_lu_factor_ex, 3> op(given);
  op.meta(a, pivot, check_errors);
  luFactorInto(a, pivot, check_errors, op.outputs[0], op.outputs[1], op.outputs[2]);
  return op.outputs;
}

/// result = A^-1 B (left) or B A^-1 from A's LU factors; adjoint: A^T.
void luSolveInto(const Tensor& lu, const Tensor& pivots, const Tensor& b, bool left,
                 bool adjoint, const Tensor& result) {
  checkSingleOrDouble("linalg.lu_solve_cpu", lu);
  if (result.numel() == 0) return;
  // X A = B is A^T X^T = B^T.
  const Tensor x = left ? result : result.mT();
  if (!x.is_same(b)) x.copy_(left ? b : b.mT());
  const bool transpose = left ? adjoint : !adjoint;
  const auto [flat_lu, flat_pivots] = factorsFor(lu, pivots, x);
  inFlatBatches(x, 2, [&](const Tensor& flat_x) {
    launchLinalg("lu_solve", x, flat_x.size(0), flat_x.numel() * x.size(-2) * 2,
                 {memrefOf(flat_lu), memrefOf(flat_pivots), memrefOf(flat_x),
                  intArg(transpose)});
  });
}

std::array<Tensor, 1> luSolve(const Tensor& lu, const Tensor& pivots, const Tensor& b, bool left,
                              bool adjoint, Given<1> given) {
  Structured<meta::structured_linalg_lu_solve, 1> op(given);
  op.meta(lu, pivots, b, left, adjoint);
  luSolveInto(lu, pivots, b, left, adjoint, op.outputs[0]);
  return op.outputs;
}

/// +-1 (int64) from the pivots: the sign of the row permutation.
Tensor permutationSign(const Tensor& pivots) {
  return at::arange(1, pivots.size(-1) + 1, pivots.options())
      .ne(pivots)
      .sum(-1, /*keepdim=*/false, at::kLong)
      .fmod_(2)
      .mul_(-2)
      .add_(1);
}

std::array<Tensor, 4> solveEx(const Tensor& a, const Tensor& b, bool left, bool check_errors,
                              Given<4> given) {
  Structured<meta::structured__linalg_solve_ex, 4> op(given);
  op.meta(a, b, left, check_errors);
  auto& [result, lu, pivots, info] = op.outputs;
  // As the CPU: a contiguous (real) A is factored as A^T, which needs no
  // column-major copy, and solved with adjoint.
  const bool use_transpose = a.is_contiguous();
  luFactorInto(use_transpose ? a.mT() : a, true, false, lu, pivots, info);
  if (check_errors) at::_linalg_check_errors(info, "torch.linalg.solve_ex", a.dim() == 2);
  const bool vector_case =
      b.dim() == 1 || (a.dim() - 1 == b.dim() && b.sizes() == a.sizes().slice(0, a.dim() - 1));
  luSolveInto(lu, pivots, vector_case ? b.unsqueeze(-1) : b, left, use_transpose,
              vector_case ? result.unsqueeze(-1) : result);
  return op.outputs;
}

std::array<Tensor, 2> invEx(const Tensor& a, bool check_errors, Given<2> given) {
  Structured<meta::structured_linalg_inv_ex, 2> op(given);
  op.meta(a, check_errors);
  auto& [inverse, info] = op.outputs;
  Tensor identity = at::zeros_like(inverse);
  identity.diagonal(0, -2, -1).fill_(1.);
  at::linalg_solve_ex_out(inverse, info, a, identity, /*left=*/true, check_errors);
  return op.outputs;
}

/// A's LU factors for det/slogdet, of A^T when A is contiguous (as the CPU).
void determinantFactors(const Tensor& a, const Tensor& lu, const Tensor& pivots) {
  const Tensor info = at::empty({0}, a.options().dtype(at::kInt));
  Tensor lu_out = lu, pivots_out = pivots, info_out = info;
  at::linalg_lu_factor_ex_out(lu_out, pivots_out, info_out, a.is_contiguous() ? a.mT() : a);
}

std::array<Tensor, 3> det(const Tensor& a, Given<3> given) {
  Structured<meta::structured__linalg_det, 3> op(given);
  op.meta(a);
  auto& [result, lu, pivots] = op.outputs;
  determinantFactors(a, lu, pivots);
  at::mul_out(result, permutationSign(pivots), at::prod(lu.diagonal(0, -2, -1), -1));
  return op.outputs;
}

std::array<Tensor, 4> slogdet(const Tensor& a, Given<4> given) {
  Structured<meta::structured__linalg_slogdet, 4> op(given);
  op.meta(a);
  auto& [sign, logabsdet, lu, pivots] = op.outputs;
  determinantFactors(a, lu, pivots);
  const Tensor diagonal = lu.diagonal(0, -2, -1);
  at::mul_out(sign, diagonal.sgn().prod(-1), permutationSign(pivots));
  at::sum_out(logabsdet, diagonal.abs().log_(), {-1});
  return op.outputs;
}

std::array<Tensor, 3> luUnpack(const Tensor& lu, const Tensor& pivots, bool unpack_data,
                              bool unpack_pivots, Given<3> given) {
  Structured<meta::structured_lu_unpack, 3> op(given);
  op.meta(lu, pivots, unpack_data, unpack_pivots);
  auto& [p, l, u] = op.outputs;
  const int64_t m = lu.size(-2), n = lu.size(-1);
  if (unpack_data) {
    // linalg_lu factors into L (m > n) or U: the other one is taken first.
    auto lower = [&] {
      at::tril_out(l, m > n ? lu : lu.narrow(-1, 0, m), -1);
      l.diagonal(0, -2, -1).fill_(1.);
    };
    auto upper = [&] { at::triu_out(u, m > n ? lu.narrow(-2, 0, n) : lu, 0); };
    if (m > n) {
      upper();
      lower();
    } else {
      lower();
      upper();
    }
  }
  if (unpack_pivots && p.numel() > 0) {
    // The permutation the swaps make of 0..m-1, then P[perm[j], j] = 1.
    std::vector<int64_t> perm_shape = batchShapeOf(lu, 2);
    perm_shape.push_back(m);
    Tensor perm = at::arange(m, pivots.options().dtype(at::kLong)).expand(perm_shape).contiguous();
    const Tensor flat_pivots = flatBatchInput(pivots.to(at::kInt), 1);
    launchNn("lu_permutation", at::kLong, {memrefOf(flatBatchView(perm, 1)),
                                           memrefOf(flat_pivots)},
             programsFor(flat_pivots.size(0), perm.numel()), lu.device());
    p.zero_();
    p.scatter_(-2, perm.unsqueeze(-2), 1.);
  }
  return op.outputs;
}

/// P, L, U of A: the LU factors written straight into L (m > n) or U, then
/// unpacked around them, as the CPU.
std::array<Tensor, 3> linalgLu(const Tensor& a, bool pivot, Given<3> given) {
  Structured<meta::structured_linalg_lu, 3> op(given);
  op.meta(a, pivot);
  auto& [p, l, u] = op.outputs;
  Tensor& factors = a.size(-2) > a.size(-1) ? l : u;
  Tensor pivots = at::empty({0}, a.options().dtype(at::kInt));
  Tensor info = at::empty({0}, a.options().dtype(at::kInt));
  at::linalg_lu_factor_ex_out(factors, pivots, info, a, pivot, /*check_errors=*/false);
  luUnpack(factors, pivots, /*unpack_data=*/true, /*unpack_pivots=*/pivot, {&p, &l, &u});
  return op.outputs;
}

}  // namespace

MAIA_NATIVE_KERNELS(m) {
  using T = const Tensor&;
  m.impl("linalg_lu_factor_ex", [](T a, bool pivot, bool check_errors) {
    return asTuple(luFactor(a, pivot, check_errors, {}));
  });
  m.impl("linalg_lu_factor_ex.out", [](T a, bool pivot, bool check_errors, Tensor& lu,
                                       Tensor& pivots, Tensor& info) {
    luFactor(a, pivot, check_errors, {&lu, &pivots, &info});
    return std::forward_as_tuple(lu, pivots, info);
  });
  m.impl("linalg_lu_solve", [](T lu, T pivots, T b, bool left, bool adjoint) {
    return luSolve(lu, pivots, b, left, adjoint, {})[0];
  });
  m.impl("linalg_lu_solve.out", [](T lu, T pivots, T b, bool left, bool adjoint,
                                   Tensor& out) -> Tensor& {
    luSolve(lu, pivots, b, left, adjoint, {&out});
    return out;
  });
  m.impl("_linalg_solve_ex", [](T a, T b, bool left, bool check_errors) {
    return asTuple(solveEx(a, b, left, check_errors, {}));
  });
  m.impl("_linalg_solve_ex.result", [](T a, T b, bool left, bool check_errors, Tensor& result,
                                       Tensor& lu, Tensor& pivots, Tensor& info) {
    solveEx(a, b, left, check_errors, {&result, &lu, &pivots, &info});
    return std::forward_as_tuple(result, lu, pivots, info);
  });
  m.impl("linalg_inv_ex", [](T a, bool check_errors) {
    return asTuple(invEx(a, check_errors, {}));
  });
  m.impl("linalg_inv_ex.inverse", [](T a, bool check_errors, Tensor& inverse, Tensor& info) {
    invEx(a, check_errors, {&inverse, &info});
    return std::forward_as_tuple(inverse, info);
  });
  m.impl("_linalg_det", [](T a) { return asTuple(det(a, {})); });
  m.impl("_linalg_det.result", [](T a, Tensor& result, Tensor& lu, Tensor& pivots) {
    det(a, {&result, &lu, &pivots});
    return std::forward_as_tuple(result, lu, pivots);
  });
  m.impl("_linalg_slogdet", [](T a) { return asTuple(slogdet(a, {})); });
  m.impl("_linalg_slogdet.sign", [](T a, Tensor& sign, Tensor& logabsdet, Tensor& lu,
                                    Tensor& pivots) {
    slogdet(a, {&sign, &logabsdet, &lu, &pivots});
    return std::forward_as_tuple(sign, logabsdet, lu, pivots);
  });
  m.impl("lu_unpack", [](T lu, T pivots, bool data, bool perm) {
    return asTuple(luUnpack(lu, pivots, data, perm, {}));
  });
  m.impl("lu_unpack.out", [](T lu, T pivots, bool data, bool perm, Tensor& p, Tensor& l,
                             Tensor& u) {
    luUnpack(lu, pivots, data, perm, {&p, &l, &u});
    return std::forward_as_tuple(p, l, u);
  });
  m.impl("linalg_lu", [](T a, bool pivot) { return asTuple(linalgLu(a, pivot, {})); });
  m.impl("linalg_lu.out", [](T a, bool pivot, Tensor& p, Tensor& l, Tensor& u) {
    linalgLu(a, pivot, {&p, &l, &u});
    return std::forward_as_tuple(p, l, u);
  });
}

}  // namespace torch_maia::ops
