// The SVD and the symmetric eigendecomposition on maia (float32/float64):
// _linalg_svd and _linalg_eigh, values alone or with vectors, by the
// Jacobi kernels of runtime/kernels/nn/linalg_spectral.h in a double
// workspace. Values agree with the CPU's LAPACK to rounding; vectors are a
// valid decomposition whose signs (and basis of a repeated value's space,
// and of U's columns beyond the rank) are Jacobi's, as CUDA's differ from
// the CPU's. A non-finite input gives LAPACK's info, so ATen's
// _linalg_check_errors raises the CPU's messages.
#include <ATen/ops/_linalg_check_errors.h>
#include <ATen/ops/_linalg_eigh_meta.h>
#include <ATen/ops/_linalg_svd_meta.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>

#include <torch/library.h>

#include <vector>

#include "ops/HostRouting.h"
#include "ops/LinalgSupport.h"
#include "ops/Structured.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;
using namespace linalg;
namespace meta = at::meta;

/// values (batch..., k) of the double workspace `work` (batch..., rows,
/// cols) by `kernel`, and the kernel's `vectors` outputs (double, batch
/// flattened like work), checked with ATen's errors for `api`.
void spectral(const char* kernel, const char* api, const Tensor& work, const Tensor& values,
              int64_t matrix_dims, std::vector<Tensor> vectors = {}) {
  const Tensor flat_work = flatBatchView(work, 2);
  Tensor flat_values = at::empty({flat_work.size(0), values.size(-1)},
                                 work.options().dtype(at::kDouble));
  Tensor info = at::zeros({flat_work.size(0)}, work.options().dtype(at::kInt));
  std::vector<maiaKernelArg> args{memrefOf(flat_work), memrefOf(flat_values), memrefOf(info)};
  for (const Tensor& v : vectors) args.push_back(memrefOf(v));
  if (flat_values.numel() > 0 || !vectors.empty())
    launchLinalg(kernel, work, flat_work.size(0), flat_work.numel() * flat_work.size(2) * 20,
                 args);
  values.copy_(flat_values.view(values.sizes()));
  at::_linalg_check_errors(info.view(batchShapeOf(values, 1)), api, matrix_dims == 2);
}

/// A double tensor of the batch of `like` (batch..., rows, cols) with
/// matrices rows x cols, batch flattened.
Tensor flatDoubles(const Tensor& like, int64_t rows, int64_t cols) {
  int64_t batch = 1;
  for (int64_t d = 0; d < like.dim() - 2; ++d) batch *= like.size(d);
  return at::empty({batch, rows, cols}, like.options().dtype(at::kDouble));
}

/// _linalg_svd by one-sided Jacobi on A, or on A^T when A is wide (then
/// A^T's left vectors are A's right ones and the other way round).
std::array<Tensor, 3> linalgSvd(const Tensor& a, bool full_matrices, bool compute_uv,
                                std::optional<c10::string_view> driver, Given<3> given) {
  Structured<meta::structured__linalg_svd, 3> op(given);
  op.meta(a, full_matrices, compute_uv, driver);
  checkSingleOrDouble("linalg_svd_cpu", a);
  const bool wide = a.size(-2) < a.size(-1);
  // Always a copy: the kernels overwrite their workspace (to() and
  // contiguous() would return a contiguous float64 input itself).
  const Tensor work =
      (wide ? a.mT() : a).to(at::kDouble, false, /*copy=*/true, at::MemoryFormat::Contiguous);
  if (!compute_uv) {
    spectral("svd_values", "linalg.svd", work, op.outputs[1], a.dim());
    return op.outputs;
  }
  const int64_t rows = work.size(-2), cols = work.size(-1);
  Tensor left = flatDoubles(work, rows, full_matrices ? rows : cols);
  Tensor right = flatDoubles(work, cols, cols);
  spectral("svd_vectors", "linalg.svd", work, op.outputs[1], a.dim(), {left, right});
  std::vector<int64_t> batch = batchShapeOf(a, 2);
  const auto shaped = [&](const Tensor& t) {
    std::vector<int64_t> shape = batch;
    shape.push_back(t.size(1));
    shape.push_back(t.size(2));
    return t.view(shape);
  };
  op.outputs[0].copy_(shaped(wide ? right : left));
  op.outputs[2].copy_(shaped(wide ? left : right).mT());
  return op.outputs;
}

/// _linalg_eigh of the UPLO triangle's symmetric matrix by cyclic Jacobi.
std::array<Tensor, 2> linalgEigh(const Tensor& a, c10::string_view uplo, bool compute_v,
                                 Given<2> given) {
  Structured<meta::structured__linalg_eigh, 2> op(given);
  op.meta(a, uplo, compute_v);
  checkSingleOrDouble("linalg_eigh_cpu", a);
  const bool lower = uplo == "L" || uplo == "l";
  const Tensor triangle = lower ? a.tril() : a.triu();
  const Tensor symmetric =
      triangle.add((lower ? a.tril(-1) : a.triu(1)).mT()).to(at::kDouble).contiguous();
  if (!compute_v) {
    spectral("eigh_values", "linalg.eigh", symmetric, op.outputs[0], a.dim());
    return op.outputs;
  }
  Tensor vectors = flatDoubles(symmetric, a.size(-1), a.size(-1));
  spectral("eigh_vectors", "linalg.eigh", symmetric, op.outputs[0], a.dim(), {vectors});
  op.outputs[1].copy_(vectors.view(a.sizes()));
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
