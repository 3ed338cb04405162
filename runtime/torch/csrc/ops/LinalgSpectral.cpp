// Singular values and symmetric eigenvalues on maia (float32/float64):
// _linalg_svd without U/V and _linalg_eigh without eigenvectors, by the
// Jacobi kernels of runtime/kernels/nn/linalg_spectral.h in a double
// workspace; with vectors (LAPACK's sign choices) on the counted host
// fallback. A non-finite input gives LAPACK's info, so ATen's
// _linalg_check_errors raises the CPU's messages.
#include <ATen/ops/_linalg_check_errors.h>
#include <ATen/ops/_linalg_eigh.h>
#include <ATen/ops/_linalg_eigh_meta.h>
#include <ATen/ops/_linalg_svd.h>
#include <ATen/ops/_linalg_svd_meta.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>

#include "ops/Fallback.h"
#include <torch/library.h>

#include "ops/HostRouting.h"
#include "ops/LinalgSupport.h"
#include "ops/Structured.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;
using namespace linalg;
namespace meta = at::meta;

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

}  // namespace

MAIA_NATIVE_KERNELS(m) {
  using T = const Tensor&;
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
}

}  // namespace torch_maia::ops
