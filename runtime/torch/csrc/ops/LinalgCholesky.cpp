// The Cholesky factorization and triangular solves on maia
// (float32/float64): linalg_cholesky_ex, the deprecated cholesky,
// linalg_solve_triangular, triangular_solve, _cholesky_solve_helper and
// cholesky_inverse, over the cholesky and triangular_solve kernels of
// runtime/kernels/nn/linalg.h (potf2 and left trsm; an upper factor is the
// lower factor of the transposed view). Results are batches of
// column-major matrices, as the CPU's.
#include <ATen/ExpandUtils.h>
#include <ATen/ops/_linalg_check_errors.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/linalg_cholesky_ex.h>
#include <ATen/ops/linalg_cholesky_ex_meta.h>
#include <ATen/ops/triangular_solve_meta.h>
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
