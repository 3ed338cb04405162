// Small helpers shared by the operators launched from the NN kernel binary
// (Softmax.cpp, LayerNorm.cpp, Loss.cpp, IndexSelect.cpp, Embedding.cpp,
// the pooling, upsampling and sorting operators, ...).
#pragma once

#include <ATen/OpMathType.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/tensor.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

namespace torch_maia::ops {

/// PyTorch's error for an operator without kernels for t's (non-floating) dtype.
inline void checkFloating(const char* op, const at::Tensor& t) {
  TORCH_CHECK(at::isFloatingType(t.scalar_type()), op, ": \"", op,
              "\" not implemented for '", t.scalar_type(), "'");
}

/// The CPU's NotImplementedError for a dtype its kernel `op` (e.g.
/// "glu_cpu") is not compiled for (supported false): the exact type and
/// text the CPU raises.
inline void checkDtype(const char* op, c10::ScalarType dtype, bool supported) {
  TORCH_CHECK_NOT_IMPLEMENTED(supported, "\"", op, "\" not implemented for '",
                              c10::toString(dtype), "'");
}

/// The same for a kernel compiled for the floating dtypes only.
inline void checkFloatDtype(const char* op, c10::ScalarType dtype) {
  checkDtype(op, dtype, at::isFloatingType(dtype));
}

/// The same for a kernel compiled for float32 and float64 only (the CPU's
/// LAPACK-style kernels, which refuse float16 and bfloat16).
inline void checkSingleOrDouble(const char* op, const at::Tensor& t) {
  checkDtype(op, t.scalar_type(),
             t.scalar_type() == at::kFloat || t.scalar_type() == at::kDouble);
}

/// Host integers (indices, offsets, lengths) as an int64 tensor on device.
inline at::Tensor int64Tensor(c10::IntArrayRef values, const c10::Device& device) {
  return at::tensor(values, at::kLong).to(device);
}

/// Where a kernel accumulating in the compute type writes t: t itself, or
/// for float16/bfloat16 a float32 tensor like it (copied into t after).
inline at::Tensor computeTypeTarget(const at::Tensor& t) {
  const c10::ScalarType compute = at::toOpMathType(t.scalar_type());
  return compute == t.scalar_type() ? t : at::empty_like(t, t.options().dtype(compute));
}

/// Runs accumulate(wide) on a float32 copy of the float16/bfloat16 tensor
/// t and rounds the result into t once, as the CPU sums scattered 16-bit
/// floats: rounding at every add loses the small addends of a large sum.
template <typename Accumulate>
at::Tensor& accumulateInOpMath(at::Tensor& t, Accumulate accumulate) {
  TORCH_INTERNAL_ASSERT(at::isReducedFloatingType(t.scalar_type()));
  at::Tensor wide = t.to(at::toOpMathType(t.scalar_type()));
  accumulate(wide);
  t.copy_(wide);
  return t;
}

/// The product of sizes[begin, end): the extent of those dimensions
/// flattened (outer/inner extents of [outer, n, inner] views).
inline int64_t prod(c10::IntArrayRef sizes, int64_t begin, int64_t end) {
  int64_t n = 1;
  for (int64_t d = begin; d < end; ++d) n *= sizes[d];
  return n;
}

}  // namespace torch_maia::ops
