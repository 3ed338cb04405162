// cdist on maia: _cdist_forward, the operator torch.cdist reaches for every
// p but the matrix-product Euclidean path (_euclidean_dist, a composite of
// native maia operators), as one launch of the NN kernel binary
// (runtime/kernels/nn/distance.h) over the broadcast batch. The CPU's
// checks and dtypes (float32/float64). Its backward, _cdist_backward, is
// still the counted host fallback.
#include <ATen/ExpandUtils.h>
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

MAIA_NATIVE_KERNELS(m) { m.impl("_cdist_forward", TORCH_FN(cdistForward)); }

}  // namespace
}  // namespace torch_maia::ops
