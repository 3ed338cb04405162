// Householder QR on maia (float32/float64): geqrf, linalg_householder_product,
// ormqr and linalg_qr, over the geqrf, orgqr and ormqr kernels of
// runtime/kernels/nn/linalg.h (LAPACK's unblocked geqr2/org2r/orm2r with
// larfg's reflector conventions, so R's signs and the reflectors are the
// CPU's). Results are batches of column-major matrices, as the CPU's.
#include <ATen/ops/empty.h>
#include <ATen/ops/linalg_qr_meta.h>
#include <ATen/ops/triu.h>
#include <torch/library.h>

#include "ops/HostRouting.h"
#include "ops/LinalgSupport.h"
#include "ops/Structured.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;
using namespace linalg;
namespace meta = at::meta;

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

}  // namespace

MAIA_NATIVE_KERNELS(m) {
  using T = const Tensor&;
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
}

}  // namespace torch_maia::ops
