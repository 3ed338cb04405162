// linalg.matrix_exp on maia, composed from device matrix products: scaling
// and squaring around the degree-18 Taylor polynomial, evaluated by
// Paterson-Stockmeyer (8 products), with the norm bounds of Bader, Blanes
// and Casas (2019) that ATen's own implementation uses, so the truncation
// error stays below the dtype's rounding. One host read (the largest
// squaring count). Its backward (linalg's composite
// matrix_exp_differential) comes back here.
#include <ATen/TensorOperators.h>
#include <ATen/ops/ceil.h>
#include <ATen/ops/exp2.h>
#include <ATen/ops/where.h>
#include <ATen/ops/eye.h>
#include <ATen/ops/log2.h>
#include <ATen/ops/matmul.h>
#include <torch/library.h>

#include <array>
#include <cmath>
#include <vector>

#include "ops/HostRouting.h"
#include "ops/MaiaOps.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;

constexpr int kDegree = 18;
constexpr int kBlock = 6;  // Paterson-Stockmeyer: powers X^1..X^6, then 3 steps in X^6

/// The largest 1-norm of a scaled matrix for which degree 18 is accurate
/// to the dtype's rounding (float32 and complex64; else float64's).
double normBound(c10::ScalarType dtype) {
  const bool single = dtype == at::kFloat || dtype == at::kComplexFloat;
  return single ? 3.010066362817634 : 1.090863719290036;
}

/// sum_{k=0}^{18} X^k / k! for a batch of matrices X.
Tensor taylor18(const Tensor& x) {
  std::array<double, kDegree + 1> coefficient{};
  coefficient[0] = 1.0;
  for (int k = 1; k <= kDegree; ++k) coefficient[k] = coefficient[k - 1] / k;
  std::vector<Tensor> power(kBlock + 1);
  power[0] = at::eye(x.size(-1), x.options()).expand_as(x);
  power[1] = x;
  for (int k = 2; k <= kBlock; ++k) power[k] = at::matmul(power[k - 1], x);
  // Block j: sum_{i<6} c[6j + i] X^i; the result is B0 + X^6 (B1 + X^6 (B2 + X^6 B3)).
  auto block = [&](int j) {
    Tensor sum = power[0].mul(coefficient[kBlock * j]);
    for (int i = 1; i < kBlock && kBlock * j + i <= kDegree; ++i)
      sum = sum.add(power[i], coefficient[kBlock * j + i]);
    return sum;
  };
  Tensor result = block(kDegree / kBlock);
  for (int j = kDegree / kBlock - 1; j >= 0; --j)
    result = block(j).add(at::matmul(power[kBlock], result));
  return result;
}

Tensor matrixExp(const Tensor& a) {
  TORCH_CHECK(a.dim() >= 2, "linalg.matrix_exp: The input tensor A must have at least 2 ",
              "dimensions.");
  TORCH_CHECK(a.size(-1) == a.size(-2), "linalg.matrix_exp: A must be batches of square ",
              "matrices, but they are ", a.size(-2), " by ", a.size(-1), " matrices");
  TORCH_CHECK(at::isFloatingType(a.scalar_type()) || at::isComplexType(a.scalar_type()),
              "matrix_exp: Expected a floating point or complex tensor as input. Got ",
              a.scalar_type());
  const int64_t n = a.size(-1);
  if (n == 0 || a.numel() == 0) return a.clone(at::MemoryFormat::Contiguous);
  if (n == 1) return a.exp();
  // float16/bfloat16: products of 8- or 11-bit mantissas lose the result in
  // the squarings (the CPU's are NaN); computed in float32, rounded once.
  if (a.scalar_type() == at::kHalf || a.scalar_type() == at::kBFloat16)
    return matrixExp(a.to(at::kFloat)).to(a.scalar_type());
  // Each matrix halved until its 1-norm is within the bound, then squared
  // back as often (counts read once to the host, as the CPU's kernel reads
  // them; a matrix needing fewer squarings keeps its value meanwhile).
  const Tensor a3 = a.reshape({-1, n, n});
  const Tensor norm = a3.abs().sum(-2).amax(-1);
  const Tensor squarings =
      at::ceil(at::log2(norm / normBound(a.scalar_type()))).clamp_min(0).nan_to_num(0, 0, 0);
  const int64_t most = squarings.max().item<int64_t>();
  Tensor result = taylor18(most > 0 ? a3 / at::exp2(squarings).view({-1, 1, 1}).to(a3.dtype())
                                    : a3);
  for (int64_t k = 0; k < most; ++k) {
    const Tensor squared = at::matmul(result, result);
    result = at::where((squarings > k).view({-1, 1, 1}), squared, result);
  }
  result = result.view(a.sizes());
  return result.contiguous();
}

}  // namespace

MAIA_NATIVE_KERNELS(m) {
  m.impl("linalg_matrix_exp", TORCH_FN(matrixExp));
}

}  // namespace torch_maia::ops
