// Least squares on maia (linalg_lstsq.out, so torch.linalg.lstsq; float32
// and float64), composed of maia's native operators around the device SVD
// (LinalgSpectral.cpp): x = V diag(1/s) U^H b over the singular values
// above rcond * s_max, the minimum-norm least-squares solution every
// LAPACK driver returns for the inputs it is meant for (gels: full rank;
// gelsy, gelsd, gelss: any rank). The outputs follow the CPU's per-driver
// conventions: residuals for tall inputs except with gelsy (and with
// gelsd/gelss only at full rank), rank except with gels, singular values
// with gelsd/gelss, rank and singular values over A's own batch. gelsy's
// rank comes from the singular values rather than its pivoted QR's
// incremental condition estimate: they agree when the numerical rank is
// clear at the default rcond (eps * max(m, n)), and may differ for an
// explicit rcond near a singular value ratio.
#include <ATen/ExpandUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/linalg_svd.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>
#include <torch/library.h>

#include <algorithm>
#include <cctype>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "ops/HostRouting.h"
#include "ops/LinalgSupport.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;
using namespace linalg;

/// The driver the CPU runs: the given one (lower case, one of LAPACK's
/// four), else gelsy.
std::string lstsqDriver(std::optional<c10::string_view> driver) {
  if (!driver.has_value()) return "gelsy";
  std::string name(*driver);
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  TORCH_CHECK(name == "gels" || name == "gelsy" || name == "gelsd" || name == "gelss",
              "torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, "
              "gelss)");
  return name;
}

void checkInputs(const Tensor& a, const Tensor& b) {
  TORCH_CHECK(a.dim() >= 2, "torch.linalg.lstsq: input must have at least 2 dimensions.");
  const int64_t dim_diff = a.dim() - b.dim();
  TORCH_CHECK(0 <= dim_diff && dim_diff <= 1, "torch.linalg.lstsq: input.dim() must be greater "
              "or equal to other.dim() and (input.dim() - other.dim()) <= 1");
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), "torch.linalg.lstsq: Expected input and other ",
              "to have the same dtype, but got input's dtype ", a.scalar_type(),
              " and other's dtype ", b.scalar_type());
  checkSingleOrDouble("linalg_lstsq_cpu", a);
  const Tensor b_matrix = dim_diff == 1 ? b.unsqueeze(-1) : b;
  TORCH_CHECK(a.size(-2) == b_matrix.size(-2), dim_diff == 1
                  ? "torch.linalg.lstsq: input.size(-2) should match other.size(-1)"
                  : "torch.linalg.lstsq: input.size(-2) should match other.size(-2)");
}

void assign(Tensor& out, const Tensor& value) {
  at::native::resize_output(out, value.sizes());
  out.copy_(value);
}

std::tuple<Tensor&, Tensor&, Tensor&, Tensor&> lstsqOut(
    const Tensor& a, const Tensor& b, std::optional<double> rcond,
    std::optional<c10::string_view> driver_name, Tensor& solution, Tensor& residuals,
    Tensor& rank, Tensor& singular_values) {
  checkInputs(a, b);
  const std::string driver = lstsqDriver(driver_name);
  const bool vector = a.dim() == b.dim() + 1;
  const Tensor b_matrix = vector ? b.unsqueeze(-1) : b;
  const int64_t m = a.size(-2), n = a.size(-1), k = b_matrix.size(-1);
  std::vector<int64_t> batch = at::infer_size(batchShapeOf(a, 2), batchShapeOf(b_matrix, 2));
  std::vector<int64_t> rhs_shape = batch;
  rhs_shape.insert(rhs_shape.end(), {m, k});
  const Tensor rhs = b_matrix.expand(rhs_shape);

  Tensor x, s, rank_value;
  if (std::min(m, n) == 0) {
    std::vector<int64_t> x_shape = batch;
    x_shape.insert(x_shape.end(), {n, k});
    x = at::zeros(x_shape, a.options());
    std::vector<int64_t> s_shape = batchShapeOf(a, 2);
    s_shape.push_back(0);
    s = at::zeros(s_shape, a.options());
    rank_value = at::zeros(batchShapeOf(a, 2), a.options().dtype(at::kLong));
  } else {
    auto [u, values, vh] = at::linalg_svd(a, /*full_matrices=*/false);
    const double eps = a.scalar_type() == at::kFloat ? std::numeric_limits<float>::epsilon()
                                                     : std::numeric_limits<double>::epsilon();
    const double relative = rcond.value_or(eps * static_cast<double>(std::max(m, n)));
    // gels assumes full rank: it inverts every singular value.
    const Tensor kept = driver == "gels" ? values.gt(0)
                                         : values.gt(values.amax(-1, true).mul(relative));
    const Tensor inverse = at::where(kept, values.reciprocal(), at::zeros({}, values.options()));
    x = at::matmul(vh.mH(), inverse.unsqueeze(-1).mul(at::matmul(u.mH(), rhs)));
    s = values;
    rank_value = kept.sum(-1);
  }

  bool with_residuals = m > n && driver != "gelsy";
  if (with_residuals && (driver == "gelsd" || driver == "gelss"))
    with_residuals = rank_value.eq(n).all().item<bool>();
  // gels with an empty A: the CPU reports zero residuals (its buffer, not
  // |b|^2 as gelsd and gelss do).
  const Tensor squared_residuals = std::min(m, n) == 0 && driver == "gels"
                                       ? at::zeros_like(rhs).sum(-2)
                                       : at::matmul(a, x).sub(rhs).pow(2).sum(-2);
  assign(residuals, with_residuals ? squared_residuals : at::zeros({0}, a.options()));
  assign(rank, driver == "gels" ? at::zeros({0}, a.options().dtype(at::kLong)) : rank_value);
  assign(singular_values, driver == "gelsd" || driver == "gelss" ? s
                                                                 : at::zeros({0}, a.options()));
  // The CPU's layout: the first n rows of a column-major max(m, n) x k
  // buffer per matrix (where LAPACK leaves the solution).
  std::vector<int64_t> buffer_shape(x.sizes().begin(), x.sizes().end() - 2);
  buffer_shape.insert(buffer_shape.end(), {k, std::max(m, n)});
  Tensor rows = at::empty(buffer_shape, x.options()).mT().narrow(-2, 0, n);
  rows.copy_(x);
  if (vector) rows = rows.squeeze(-1);
  if (solution.numel() == 0) {  // a fresh result (the functional form): the CPU's strides
    at::native::resize_output(solution, rows.sizes());
    solution.set_(rows);
  } else {
    assign(solution, rows);
  }
  return std::forward_as_tuple(solution, residuals, rank, singular_values);
}

}  // namespace

MAIA_NATIVE_KERNELS(m) {
  m.impl("linalg_lstsq.out", TORCH_FN(lstsqOut));
}

}  // namespace torch_maia::ops
