// cdist and pdist on maia: _cdist_forward, the operator torch.cdist
// reaches for every p but the matrix-product Euclidean path
// (_euclidean_dist, a composite of native maia operators), as one launch of
// the NN kernel binary (runtime/kernels/nn/distance.h) over the broadcast
// batch; _pdist_forward as the cdist of the rows with themselves, its upper
// triangle gathered; both backwards as one launch each. The CPU's checks
// and dtypes (float32/float64).
#include <ATen/ExpandUtils.h>
#include <ATen/ops/triu_indices.h>
#include <ATen/ops/zeros_like.h>
#include <torch/library.h>

#include <optional>
#include <vector>

#include "WorkSplit.h"
#include "ops/EagerKernels.h"
#include "ops/HostRouting.h"
#include "ops/MaiaOps.h"
#include "ops/OpUtils.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;

Tensor cdistForward(const Tensor& x1, const Tensor& x2, double p,
                    std::optional<int64_t> compute_mode) {
  TORCH_CHECK(x1.dim() >= 2, "cdist only supports at least 2D tensors, X1 got: ", x1.dim(), "D");
  TORCH_CHECK(x2.dim() >= 2, "cdist only supports at least 2D tensors, X2 got: ", x2.dim(), "D");
  TORCH_CHECK(at::isFloatingType(x1.scalar_type()),
              "cdist only supports floating-point dtypes, X1 got: ", x1.scalar_type());
  TORCH_CHECK(at::isFloatingType(x2.scalar_type()),
              "cdist only supports floating-point dtypes, X2 got: ", x2.scalar_type());
  TORCH_CHECK(x1.size(-1) == x2.size(-1), "X1 and X2 must have the same number of columns. X1: ",
              x1.size(-1), " X2: ", x2.size(-1));
  TORCH_CHECK(p >= 0, "cdist only supports non-negative p values");
  const c10::ScalarType dtype = x1.scalar_type();
  checkDtype("cdist", dtype, dtype == at::kFloat || dtype == at::kDouble);
  const int64_t r1 = x1.size(-2), r2 = x2.size(-2), c = x1.size(-1);
  std::vector<int64_t> batch = at::infer_size(x1.sizes().slice(0, x1.dim() - 2),
                                              x2.sizes().slice(0, x2.dim() - 2));
  const int64_t batch_count = prod(batch, 0, static_cast<int64_t>(batch.size()));
  std::vector<int64_t> shape = batch;
  shape.push_back(r1);
  shape.push_back(r2);
  Tensor out = newEmpty(shape, x1.options());
  if (out.numel() == 0) return out;
  if (c == 0) return out.zero_();
  auto flat = [&](const Tensor& x, int64_t rows) {
    std::vector<int64_t> sizes = batch;
    sizes.push_back(rows);
    sizes.push_back(c);
    return x.expand(sizes).reshape({batch_count, rows, c});
  };
  launchNn("cdist", dtype,
           {rowMajorMemref(out, {batch_count, r1, r2}), memrefOf(flat(x1, r1)),
            memrefOf(flat(x2, r2)), maiaKernelArgFloat(maiaDtypeF64, p)},
           programsFor(batch_count * r1, out.numel() * c), x1.device());
  return out;
}

Tensor cdistBackward(const Tensor& grad, const Tensor& x1, const Tensor& x2, double p,
                     const Tensor& cdist) {
  const int64_t r1 = x1.size(-2), r2 = x2.size(-2), c = x1.size(-1);
  std::vector<int64_t> batch = at::infer_size(x1.sizes().slice(0, x1.dim() - 2),
                                              x2.sizes().slice(0, x2.dim() - 2));
  const int64_t batch_count = prod(batch, 0, static_cast<int64_t>(batch.size()));
  auto expanded = [&](const Tensor& x, int64_t rows, int64_t columns) {
    std::vector<int64_t> sizes = batch;
    sizes.push_back(rows);
    sizes.push_back(columns);
    return x.expand(sizes);
  };
  const Tensor x1_full = expanded(x1, r1, c).contiguous();
  // The gradient of the broadcast x1; autograd reduces it to x1's shape.
  Tensor out = at::zeros_like(x1_full, at::MemoryFormat::Contiguous);
  if (p == 0 || grad.numel() == 0 || x1.numel() == 0 || x2.numel() == 0) return out;
  checkDtype("cdist_backward", x1.scalar_type(),
             x1.scalar_type() == at::kFloat || x1.scalar_type() == at::kDouble);
  launchNn("cdist_bwd", x1.scalar_type(),
           {memrefOf(out.view({batch_count, r1, c})),
            memrefOf(expanded(grad, r1, r2).reshape({batch_count, r1, r2})),
            memrefOf(x1_full.view({batch_count, r1, c})),
            memrefOf(expanded(x2, r2, c).reshape({batch_count, r2, c})),
            memrefOf(expanded(cdist, r1, r2).reshape({batch_count, r1, r2})),
            maiaKernelArgFloat(maiaDtypeF64, p)},
           programsFor(batch_count * r1, out.numel() * r2), x1.device());
  return out;
}

void checkPdist(const Tensor& self, double p) {
  TORCH_CHECK(self.dim() == 2, "pdist only supports 2D tensors, got: ", self.dim(), "D");
  TORCH_CHECK(at::isFloatingType(self.scalar_type()),
              "pdist only supports floating-point dtypes");
  TORCH_CHECK(p >= 0, "pdist only supports non-negative p values");
}

/// The condensed distances (pairs i < j, row-major): cdist of the rows with
/// themselves, the strict upper triangle gathered.
Tensor pdistForward(const Tensor& self, double p) {
  checkPdist(self, p);
  const int64_t n = self.size(0);
  if (n <= 1) return at::empty({0}, self.options());
  const Tensor all = cdistForward(self.unsqueeze(0), self.unsqueeze(0), p, std::nullopt)[0];
  const Tensor pairs = at::triu_indices(n, n, 1, self.options().dtype(at::kLong));
  return all.reshape({-1}).index_select(0, pairs[0].mul(n).add_(pairs[1]));
}

Tensor pdistBackward(const Tensor& grad, const Tensor& self, double p, const Tensor& pdist) {
  checkPdist(self, p);
  Tensor out = at::zeros_like(self, at::MemoryFormat::Contiguous);
  if (p == 0 || grad.numel() == 0 || self.size(0) <= 1) return out;
  launchNn("pdist_bwd", self.scalar_type(),
           {memrefOf(out), memrefOf(grad.contiguous()), memrefOf(self), memrefOf(pdist),
            maiaKernelArgFloat(maiaDtypeF64, p)},
           programsFor(self.size(0), self.numel() * self.size(0)), self.device());
  return out;
}

MAIA_NATIVE_KERNELS(m) {
  m.impl("_cdist_forward", TORCH_FN(cdistForward));
  m.impl("_cdist_backward", TORCH_FN(cdistBackward));
  m.impl("_pdist_forward", TORCH_FN(pdistForward));
  m.impl("_pdist_backward", TORCH_FN(pdistBackward));
}

}  // namespace
}  // namespace torch_maia::ops
