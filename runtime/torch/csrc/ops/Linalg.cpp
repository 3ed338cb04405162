// Dense linear algebra on maia for float32/float64 (complex inputs take the
// counted host fallback through HostRouting): the LU factorization and
// solve, the Cholesky factorization, triangular solves, Householder QR
// (geqrf, householder_product, ormqr, linalg_qr), singular values and
// symmetric eigenvalues (their vectors on the counted host fallback), and
// what ATen composes from them per backend: inverse, solve, det, slogdet,
// lu_unpack, cholesky_solve, cholesky_inverse, cholesky. Kernels:
// runtime/kernels/nn/linalg.h and linalg_spectral.h, one launch per
// factorization or solve, programs over batch entries.
//
// ATen's structured meta functions check the arguments and lay out the
// results (batches of column-major matrices, as LAPACK's); the
// implementations follow ATen's CPU ones step for step (the A^T trick of
// solve/det/slogdet included, so LU and pivots outputs are the CPU's), with
// the kernels in place of LAPACK. Errors from info (singular, not positive
// definite) are ATen's own _linalg_check_errors, one host read of info when
// check_errors asks for it.
#include <ATen/ExpandUtils.h>
#include <ATen/TensorUtils.h>
#include <ATen/ops/_linalg_check_errors.h>
#include <ATen/ops/_linalg_det_meta.h>
#include <ATen/ops/_linalg_eigh.h>
#include <ATen/ops/_linalg_eigh_meta.h>
#include <ATen/ops/_linalg_slogdet_meta.h>
#include <ATen/ops/_linalg_svd.h>
#include <ATen/ops/_linalg_svd_meta.h>
#include <ATen/ops/_linalg_solve_ex_meta.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/linalg_cholesky_ex.h>
#include <ATen/ops/linalg_cholesky_ex_meta.h>
#include <ATen/ops/linalg_inv_ex_meta.h>
#include <ATen/ops/linalg_lu_meta.h>
#include <ATen/ops/linalg_qr_meta.h>
#include <ATen/ops/linalg_lu_factor_ex.h>
#include <ATen/ops/linalg_lu_factor_ex_meta.h>
#include <ATen/ops/linalg_lu_solve.h>
#include <ATen/ops/linalg_lu_solve_meta.h>
#include <ATen/ops/linalg_solve_ex.h>
#include <ATen/ops/lu_unpack_meta.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/prod.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/tril.h>
#include <ATen/ops/triangular_solve_meta.h>
#include <ATen/ops/triu.h>
#include <ATen/ops/zeros_like.h>
#include <torch/library.h>

#include <array>
#include <functional>
#include <tuple>
#include <vector>

#include "WorkSplit.h"
#include "ops/EagerKernels.h"
#include "ops/Fallback.h"
#include "ops/HostRouting.h"
#include "ops/OpUtils.h"
#include "ops/Structured.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;
namespace meta = at::meta;

/// t's batch dimensions flattened into one, as a view of t (rank 3 for
/// matrices, rank 2 for vectors); undefined when no view can do it.
Tensor flatBatchView(const Tensor& t, int64_t trailing) {
  std::vector<int64_t> shape{-1};
  int64_t batch = 1;
  for (int64_t d = 0; d < t.dim() - trailing; ++d) batch *= t.size(d);
  shape[0] = batch;
  for (int64_t d = t.dim() - trailing; d < t.dim(); ++d) shape.push_back(t.size(d));
  const auto strides = at::detail::computeStride(t.sizes(), t.strides(), shape);
  if (!strides.has_value()) return Tensor();
  return t.as_strided(shape, *strides, t.storage_offset());
}

/// Runs `compute` on a batch-flattened view of target (modified in place),
/// or on a column-major copy written back when target has no such view.
void inFlatBatches(const Tensor& target, int64_t trailing,
                   const std::function<void(const Tensor&)>& compute) {
  if (Tensor view = flatBatchView(target, trailing); view.defined()) {
    compute(view);
    return;
  }
  Tensor copy = target.contiguous();
  compute(flatBatchView(copy, trailing));
  target.copy_(copy);
}

/// An input as a batch-flattened view (or a contiguous copy).
Tensor flatBatchInput(const Tensor& t, int64_t trailing) {
  Tensor view = flatBatchView(t, trailing);
  return view.defined() ? view : flatBatchView(t.contiguous(), trailing);
}

/// The kernels' dtypes: what the CPU's LAPACK kernel `cpu_name` refuses
/// (float16, bfloat16) raises its error.
void checkSingleOrDouble(const char* cpu_name, const Tensor& t) {
  checkDtype(cpu_name, t.scalar_type(),
             t.scalar_type() == at::kFloat || t.scalar_type() == at::kDouble);
}

template <size_t N>
auto asTuple(const std::array<Tensor, N>& outputs) {
  return std::apply([](const auto&... t) { return std::make_tuple(t...); }, outputs);
}

void launchLinalg(const char* kernel, const Tensor& like, int64_t batches, int64_t work,
                  std::vector<maiaKernelArg> args) {
  if (batches == 0) return;
  launchNn(kernel, like.scalar_type(), args, programsFor(batches, work), like.device());
}

std::vector<int64_t> batchShapeOf(const Tensor& t, int64_t trailing) {
  return std::vector<int64_t>(t.sizes().begin(), t.sizes().end() - trailing);
}

/// LU and pivots broadcast to x's batch (materialized only when the
/// expanded views cannot be flattened).
std::pair<Tensor, Tensor> factorsFor(const Tensor& lu, const Tensor& pivots, const Tensor& x) {
  std::vector<int64_t> lu_shape = batchShapeOf(x, 2), pivots_shape = batchShapeOf(x, 2);
  lu_shape.insert(lu_shape.end(), {lu.size(-2), lu.size(-1)});
  pivots_shape.push_back(pivots.size(-1));
  return {flatBatchInput(lu.expand(lu_shape), 2), flatBatchInput(pivots.expand(pivots_shape), 1)};
}

/// A batch of column-major copies of t (LAPACK's working layout).
Tensor columnMajorCopy(const Tensor& t) { return t.mT().contiguous().mT(); }

/// An out= variant: `result` resized to out and copied in.
Tensor& copyToOut(const Tensor& result, Tensor& out) {
  at::native::resize_output(out, result.sizes());
  return out.copy_(result);
}

/// factors (batch..., m, n) overwritten by geqrf's R and reflectors; tau
/// (batch..., min(m, n)) written.
void geqrfInPlace(const Tensor& factors, const Tensor& tau) {
  inFlatBatches(factors, 2, [&](const Tensor& flat) {
    inFlatBatches(tau, 1, [&](const Tensor& flat_tau) {
      launchLinalg("geqrf", factors, flat.size(0), flat.numel() * flat_tau.size(1) * 2,
                   {memrefOf(flat), memrefOf(flat_tau)});
    });
  });
}

// ---- LU ------------------------------------------------------------------

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

/// Each operator below runs its meta function with the out= tensors
/// `given` (null: allocate), computes, and returns the outputs.
template <size_t N>
using Given = std::array<Tensor*, N>;

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

// ---- Householder QR ----------------------------------------------------------

/// A column-major copy of a as geqrf's result, and tau (batch..., min(m, n)).
std::tuple<Tensor, Tensor> geqrfFactors(const Tensor& a) {
  TORCH_CHECK(a.dim() >= 2, "torch.geqrf: input must have at least 2 dimensions.");
  checkSingleOrDouble("geqrf_cpu", a);
  Tensor factors = columnMajorCopy(a);
  std::vector<int64_t> tau_shape = batchShapeOf(a, 2);
  tau_shape.push_back(std::min(a.size(-2), a.size(-1)));
  Tensor tau = at::empty(tau_shape, a.options());
  if (factors.numel() > 0) geqrfInPlace(factors, tau);
  return {factors, tau};
}

std::tuple<Tensor&, Tensor&> geqrfOut(const Tensor& a, Tensor& factors, Tensor& tau) {
  auto [computed_factors, computed_tau] = geqrfFactors(a);
  copyToOut(computed_factors, factors);
  copyToOut(computed_tau, tau);
  return {factors, tau};
}

Tensor householderProduct(const Tensor& a, const Tensor& tau) {
  const char* api = "torch.linalg.householder_product";
  TORCH_CHECK(a.dim() >= 2, api, ": input must have at least 2 dimensions.");
  TORCH_CHECK(a.size(-2) >= a.size(-1), api,
              ": input.shape[-2] must be greater than or equal to input.shape[-1]");
  TORCH_CHECK(a.size(-1) >= tau.size(-1), api,
              ": input.shape[-1] must be greater than or equal to tau.shape[-1]");
  TORCH_CHECK(a.dim() - tau.dim() == 1, api,
              ": Expected tau to have one dimension less than input, but got tau.ndim equal to ",
              tau.dim(), " and input.ndim is equal to ", a.dim());
  TORCH_CHECK(batchShapeOf(tau, 1) == batchShapeOf(a, 2), api,
              ": Expected batch dimensions of tau to be equal to input.shape[:-2], but got ",
              tau.sizes().slice(0, tau.dim() - 1));
  TORCH_CHECK(tau.scalar_type() == a.scalar_type(), api, ": tau dtype ", tau.scalar_type(),
              " does not match input dtype ", a.scalar_type());
  checkSingleOrDouble("orgqr_cpu", a);
  Tensor q = columnMajorCopy(a);
  if (q.numel() > 0) {
    const Tensor flat_tau = flatBatchInput(tau, 1);
    inFlatBatches(q, 2, [&](const Tensor& flat_q) {
      launchLinalg("orgqr", q, flat_q.size(0), flat_q.numel() * tau.size(-1) * 2,
                   {memrefOf(flat_q), memrefOf(flat_tau)});
    });
  }
  return q;
}

Tensor multiplyByQ(const Tensor& a, const Tensor& tau, const Tensor& other, bool left,
                   bool transpose) {
  const char* api = "torch.ormqr";
  TORCH_CHECK(a.dim() >= 2, api, ": input must have at least 2 dimensions.");
  TORCH_CHECK(other.dim() >= 2, api, ": other must have at least 2 dimensions.");
  const int64_t side = left ? -2 : -1;
  TORCH_CHECK(other.size(side) == a.size(-2), api, ": other.shape[", side,
              "] must be equal to input.shape[-2]");
  TORCH_CHECK(tau.size(-1) <= a.size(-1), api,
              ": tau.shape[-1] must be less than or equal to input.shape[-1]");
  TORCH_CHECK(tau.size(-1) == std::min(other.size(side), a.size(-1)), api,
              ": tau.shape[-1] must be equal to min(other.shape[", side,
              "], input.shape[-1])");
  TORCH_CHECK(batchShapeOf(tau, 1) == batchShapeOf(a, 2), api,
              ": Expected batch dimensions of tau to be equal to input.shape[:-2]");
  TORCH_CHECK(batchShapeOf(other, 2) == batchShapeOf(a, 2), api,
              ": Expected batch dimensions of other to be equal to input.shape[:-2]");
  TORCH_CHECK(tau.scalar_type() == a.scalar_type() && other.scalar_type() == a.scalar_type(),
              api, ": Expected input, tau and other to have the same dtype");
  checkSingleOrDouble("ormqr_cpu", a);
  Tensor result = columnMajorCopy(other);
  if (result.numel() > 0 && tau.size(-1) > 0) {
    const Tensor flat_a = flatBatchInput(a, 2), flat_tau = flatBatchInput(tau, 1);
    inFlatBatches(result, 2, [&](const Tensor& flat_c) {
      launchLinalg("ormqr", result, flat_c.size(0), flat_c.numel() * tau.size(-1) * 2,
                   {memrefOf(flat_a), memrefOf(flat_tau), memrefOf(flat_c), intArg(left),
                    intArg(transpose)});
    });
  }
  return result;
}

/// Q and R of A, as the CPU's linalg_qr: geqrf in Q (when it has A's
/// shape), in R (when R has A's rows) or in a copy; R the upper triangle;
/// Q by orgqr.
std::array<Tensor, 2> linalgQr(const Tensor& a, c10::string_view mode, Given<2> given) {
  Structured<meta::structured_linalg_qr, 2> op(given);
  op.meta(a, mode);
  auto& [q, r] = op.outputs;
  checkSingleOrDouble("geqrf_cpu", a);
  const int64_t m = a.size(-2), n = a.size(-1), k = std::min(m, n);
  const bool compute_q = mode != "r";
  std::vector<int64_t> tau_shape = batchShapeOf(a, 2);
  tau_shape.push_back(k);
  Tensor tau = at::empty(tau_shape, a.options());
  Tensor factors;
  if (compute_q && q.size(-1) == n) {
    factors = q;
    factors.copy_(a);
  } else if (r.size(-2) == m) {
    factors = r;
    factors.copy_(a);
  } else {
    factors = columnMajorCopy(a);
  }
  if (factors.numel() > 0) geqrfInPlace(factors, tau);
  if (factors.is_alias_of(r)) {
    if (compute_q) {
      if (m < n) q.copy_(factors.slice(-1, 0, m));
      else q.slice(-1, 0, n).copy_(factors);
    }
    r.triu_();
  } else {
    at::triu_out(r, factors.slice(-2, 0, n));
  }
  if (compute_q && q.numel() > 0) {
    const Tensor flat_tau = flatBatchInput(tau, 1);
    inFlatBatches(q, 2, [&](const Tensor& flat_q) {
      launchLinalg("orgqr", q, flat_q.size(0), flat_q.numel() * k * 2,
                   {memrefOf(flat_q), memrefOf(flat_tau)});
    });
  }
  return op.outputs;
}

// ---- Singular values and symmetric eigenvalues --------------------------------

/// Copies src into the given outputs (resized as the meta function did).
template <size_t N>
void copyInto(std::array<Tensor, N>& outputs, const std::array<Tensor, N>& src) {
  for (size_t i = 0; i < N; ++i) outputs[i].copy_(src[i]);
}

/// values (batch..., k) of the double workspace `work` (batch..., rows,
/// cols) by `kernel`, checked with ATen's errors for `api`.
void spectralValues(const char* kernel, const char* api, const Tensor& work,
                    const Tensor& values, int64_t matrix_dims) {
  const Tensor flat_work = flatBatchView(work, 2);
  Tensor flat_values = at::empty({flat_work.size(0), values.size(-1)},
                                 work.options().dtype(at::kDouble));
  Tensor info = at::zeros({flat_work.size(0)}, work.options().dtype(at::kInt));
  if (flat_values.numel() > 0)
    launchLinalg(kernel, work, flat_work.size(0),
                 flat_work.numel() * flat_work.size(2) * 20,
                 {memrefOf(flat_work), memrefOf(flat_values), memrefOf(info)});
  values.copy_(flat_values.view(values.sizes()));
  at::_linalg_check_errors(info.view(batchShapeOf(values, 1)), api, matrix_dims == 2);
}

/// _linalg_svd: singular values on the device (Jacobi); with U and V^H
/// (LAPACK's signs) on the counted host fallback.
std::array<Tensor, 3> linalgSvd(const Tensor& a, bool full_matrices, bool compute_uv,
                                std::optional<c10::string_view> driver, Given<3> given) {
  Structured<meta::structured__linalg_svd, 3> op(given);
  op.meta(a, full_matrices, compute_uv, driver);
  checkSingleOrDouble("linalg_svd_cpu", a);
  if (compute_uv) {
    noteHostFallback("aten::_linalg_svd");
    auto [u, s, vh] = at::_linalg_svd(a.cpu(), full_matrices, true, driver);
    copyInto(op.outputs, {u, s, vh});
    return op.outputs;
  }
  const Tensor tall = a.size(-2) >= a.size(-1) ? a : a.mT();
  spectralValues("svd_values", "linalg.svd", tall.to(at::kDouble).contiguous(), op.outputs[1],
                 a.dim());
  return op.outputs;
}

/// _linalg_eigh: eigenvalues of the UPLO triangle's symmetric matrix on
/// the device (Jacobi); with eigenvectors on the counted host fallback.
std::array<Tensor, 2> linalgEigh(const Tensor& a, c10::string_view uplo, bool compute_v,
                                 Given<2> given) {
  Structured<meta::structured__linalg_eigh, 2> op(given);
  op.meta(a, uplo, compute_v);
  checkSingleOrDouble("linalg_eigh_cpu", a);
  if (compute_v) {
    noteHostFallback("aten::_linalg_eigh");
    auto [values, vectors] = at::_linalg_eigh(a.cpu(), uplo, true);
    copyInto(op.outputs, {values, vectors});
    return op.outputs;
  }
  const bool lower = uplo == "L" || uplo == "l";
  const Tensor triangle = lower ? a.tril() : a.triu();
  const Tensor symmetric = triangle.add((lower ? a.tril(-1) : a.triu(1)).mT());
  spectralValues("eigh_values", "linalg.eigh", symmetric.to(at::kDouble).contiguous(),
                 op.outputs[0], a.dim());
  return op.outputs;
}

// ---- Cholesky and triangular solves -----------------------------------------

std::array<Tensor, 2> choleskyEx(const Tensor& a, bool upper, bool check_errors,
                                 Given<2> given) {
  Structured<meta::structured_linalg_cholesky_ex, 2> op(given);
  op.meta(a, upper, check_errors);
  auto& [l, info] = op.outputs;
  checkSingleOrDouble("cholesky_cpu", a);
  if (l.numel() > 0) {
    l.copy_(a);
    // The upper factor is the lower factor of the transposed view.
    inFlatBatches(upper ? l.mT() : l, 2, [&](const Tensor& flat) {
      inFlatBatches(info, 0, [&](const Tensor& flat_info) {
        launchLinalg("cholesky", l, flat.size(0), flat.numel() * l.size(-1),
                     {memrefOf(flat), memrefOf(flat_info)});
      });
    });
  } else {
    info.zero_();
  }
  if (check_errors) at::_linalg_check_errors(info, "torch.linalg.cholesky_ex", a.dim() == 2);
  return op.outputs;
}

/// x (batch, n, k) overwritten by op(A)^-1 x, op(A) = A or A^T; A's batch
/// broadcast to x's.
void triangularSolveInPlace(const Tensor& a, const Tensor& x, bool upper, bool transpose,
                            bool unitriangular) {
  if (x.numel() == 0) return;
  std::vector<int64_t> shape = batchShapeOf(x, 2);
  shape.insert(shape.end(), {a.size(-2), a.size(-1)});
  const Tensor flat_a = flatBatchInput(a.expand(shape), 2);
  inFlatBatches(x, 2, [&](const Tensor& flat_x) {
    launchLinalg("triangular_solve", x, flat_x.size(0), flat_x.numel() * x.size(-2),
                 {memrefOf(flat_a), memrefOf(flat_x), intArg(upper), intArg(transpose),
                  intArg(unitriangular)});
  });
}

/// X with op(A) X = B (left) or X op(A) = B, a batch of column-major
/// matrices as the CPU's.
Tensor solveTriangular(const Tensor& a, const Tensor& b, bool upper, bool left,
                       bool unitriangular) {
  TORCH_CHECK(a.dim() >= 2 && b.dim() >= 2,
              "linalg.solve_triangular: The input tensor A must have at least 2 dimensions.");
  TORCH_CHECK(a.size(-1) == a.size(-2),
              "linalg.solve_triangular: A must be batches of square matrices, but they are ",
              a.size(-2), " by ", a.size(-1), " matrices");
  const int64_t n = a.size(-1);
  TORCH_CHECK(left ? b.size(-2) == n : b.size(-1) == n,
              "linalg.solve_triangular: Incompatible shapes of A and B for the equation ",
              left ? "AX = B" : "XA = B", " (", a.size(-2), "x", a.size(-1), " and ",
              b.size(-2), "x", b.size(-1), ")");
  // The CPU solves in A's dtype (B converted), whatever B's is.
  const c10::ScalarType dtype = a.scalar_type();
  checkSingleOrDouble("triangular_solve_cpu", a);
  std::vector<int64_t> batch = at::infer_size(batchShapeOf(a, 2), batchShapeOf(b, 2));
  std::vector<int64_t> shape = batch;
  shape.insert(shape.end(), {b.size(-2), b.size(-1)});
  Tensor x = columnMajorCopy(b.to(dtype).expand(shape));
  // X A = B is A^T X^T = B^T.
  triangularSolveInPlace(a.to(dtype), left ? x : x.mT(), upper, /*transpose=*/!left,
                         unitriangular);
  return x;
}

std::array<Tensor, 2> triangularSolve(const Tensor& b, const Tensor& a, bool upper,
                                      bool transpose, bool unitriangular, Given<2> given) {
  Structured<meta::structured_triangular_solve, 2> op(given);
  op.meta(b, a, upper, transpose, unitriangular);
  auto& [x, m] = op.outputs;
  checkSingleOrDouble("triangular_solve_cpu", a);
  m.copy_(a.expand(m.sizes()));
  x.copy_(b.expand(x.sizes()));
  triangularSolveInPlace(m, x, upper, transpose, unitriangular);
  return op.outputs;
}

/// (L L^T)^-1 B, or (U^T U)^-1 B: two triangular solves of a column-major
/// copy of B (cholesky_solve broadcasts before it calls this).
Tensor choleskySolveHelper(const Tensor& b, const Tensor& factor, bool upper) {
  checkSingleOrDouble("cholesky_solve_cpu", b);
  Tensor x = columnMajorCopy(b);
  triangularSolveInPlace(factor, x, upper, /*transpose=*/upper, false);
  triangularSolveInPlace(factor, x, upper, /*transpose=*/!upper, false);
  return x;
}

/// (L L^T)^-1 from the factor, a batch of column-major matrices as the CPU's.
Tensor choleskyInverse(const Tensor& factor, bool upper) {
  TORCH_CHECK(factor.dim() >= 2 && factor.size(-1) == factor.size(-2),
              "cholesky_inverse: A must be batches of square matrices, but they are ",
              factor.size(-2), " by ", factor.size(-1), " matrices");
  checkSingleOrDouble("cholesky_inverse_out_cpu", factor);
  Tensor identity = at::zeros_like(factor, at::MemoryFormat::Contiguous);
  identity.diagonal(0, -2, -1).fill_(1.);
  return choleskySolveHelper(identity, factor, upper);
}

/// The deprecated torch.cholesky: linalg_cholesky_ex's factor, errors named "cholesky".
Tensor choleskyDeprecated(const Tensor& a, bool upper) {
  TORCH_WARN_ONCE("torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be ",
                  "removed in a future PyTorch release.");
  if (a.numel() == 0) return at::empty_like(a, at::MemoryFormat::Contiguous);
  auto [factor, info] = at::linalg_cholesky_ex(a, upper, /*check_errors=*/false);
  at::_linalg_check_errors(info, "cholesky", a.dim() == 2);
  return factor;
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
  m.impl("linalg_inv_ex", [](T a, bool check_errors) { return asTuple(invEx(a, check_errors, {})); });
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
  m.impl("linalg_cholesky_ex", [](T a, bool upper, bool check_errors) {
    return asTuple(choleskyEx(a, upper, check_errors, {}));
  });
  m.impl("linalg_cholesky_ex.L", [](T a, bool upper, bool check_errors, Tensor& l,
                                    Tensor& info) {
    choleskyEx(a, upper, check_errors, {&l, &info});
    return std::forward_as_tuple(l, info);
  });
  m.impl("triangular_solve", [](T b, T a, bool upper, bool transpose, bool unitriangular) {
    return asTuple(triangularSolve(b, a, upper, transpose, unitriangular, {}));
  });
  m.impl("triangular_solve.X", [](T b, T a, bool upper, bool transpose, bool unitriangular,
                                  Tensor& x, Tensor& coefficient) {
    triangularSolve(b, a, upper, transpose, unitriangular, {&x, &coefficient});
    return std::forward_as_tuple(x, coefficient);
  });
  m.impl("geqrf", TORCH_FN(geqrfFactors));
  m.impl("geqrf.a", TORCH_FN(geqrfOut));
  m.impl("linalg_householder_product", TORCH_FN(householderProduct));
  m.impl("linalg_householder_product.out", [](T a, T tau, Tensor& out) -> Tensor& {
    return copyToOut(householderProduct(a, tau), out);
  });
  m.impl("ormqr", TORCH_FN(multiplyByQ));
  m.impl("ormqr.out", [](T a, T tau, T other, bool left, bool transpose,
                         Tensor& out) -> Tensor& {
    return copyToOut(multiplyByQ(a, tau, other, left, transpose), out);
  });
  m.impl("linalg_qr", [](T a, c10::string_view mode) { return asTuple(linalgQr(a, mode, {})); });
  m.impl("linalg_qr.out", [](T a, c10::string_view mode, Tensor& q, Tensor& r) {
    linalgQr(a, mode, {&q, &r});
    return std::forward_as_tuple(q, r);
  });
  m.impl("_linalg_svd", [](T a, bool full_matrices, bool compute_uv,
                           std::optional<c10::string_view> driver) {
    return asTuple(linalgSvd(a, full_matrices, compute_uv, driver, {}));
  });
  m.impl("_linalg_svd.U", [](T a, bool full_matrices, bool compute_uv,
                             std::optional<c10::string_view> driver, Tensor& u, Tensor& s,
                             Tensor& vh) {
    linalgSvd(a, full_matrices, compute_uv, driver, {&u, &s, &vh});
    return std::forward_as_tuple(u, s, vh);
  });
  m.impl("_linalg_eigh", [](T a, c10::string_view uplo, bool compute_v) {
    return asTuple(linalgEigh(a, uplo, compute_v, {}));
  });
  m.impl("_linalg_eigh.eigenvalues", [](T a, c10::string_view uplo, bool compute_v,
                                        Tensor& values, Tensor& vectors) {
    linalgEigh(a, uplo, compute_v, {&values, &vectors});
    return std::forward_as_tuple(values, vectors);
  });
  m.impl("cholesky", TORCH_FN(choleskyDeprecated));
  m.impl("linalg_solve_triangular", TORCH_FN(solveTriangular));
  m.impl("linalg_solve_triangular.out", [](T a, T b, bool upper, bool left, bool unitriangular,
                                           Tensor& out) -> Tensor& {
    return copyToOut(solveTriangular(a, b, upper, left, unitriangular), out);
  });
  m.impl("_cholesky_solve_helper", TORCH_FN(choleskySolveHelper));
  m.impl("cholesky_inverse", TORCH_FN(choleskyInverse));
  m.impl("cholesky_inverse.out", [](T factor, bool upper, Tensor& out) -> Tensor& {
    return copyToOut(choleskyInverse(factor, upper), out);
  });
}

}  // namespace torch_maia::ops
