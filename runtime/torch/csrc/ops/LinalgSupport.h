// What the linalg operator files share (LinalgLu.cpp, LinalgCholesky.cpp,
// LinalgQr.cpp, LinalgSpectral.cpp, LinalgLdl.cpp): batches flattened into
// the kernels' rank-3 memrefs, ATen's column-major result layout, the dtype
// check, out= plumbing and the launch.
#pragma once

#include <ATen/TensorUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>

#include <array>
#include <functional>
#include <tuple>
#include <utility>
#include <vector>

#include "WorkSplit.h"
#include "ops/EagerKernels.h"
#include "ops/OpUtils.h"

namespace torch_maia::ops::linalg {

using at::Tensor;

/// The out= tensors of an operator with N outputs (null: allocate).
template <size_t N>
using Given = std::array<Tensor*, N>;

/// t's batch dimensions flattened into one, as a view of t (rank 3 for
/// matrices, rank 2 for vectors); undefined when no view can do it.
inline Tensor flatBatchView(const Tensor& t, int64_t trailing) {
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
inline void inFlatBatches(const Tensor& target, int64_t trailing,
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
inline Tensor flatBatchInput(const Tensor& t, int64_t trailing) {
  Tensor view = flatBatchView(t, trailing);
  return view.defined() ? view : flatBatchView(t.contiguous(), trailing);
}

/// An operator's outputs as the tuple its functional schema returns.
template <size_t N>
auto asTuple(const std::array<Tensor, N>& outputs) {
  return std::apply([](const auto&... t) { return std::make_tuple(t...); }, outputs);
}

/// One launch of an NN-binary linalg kernel over `batches` batch entries.
inline void launchLinalg(const char* kernel, const Tensor& like, int64_t batches, int64_t work,
                         std::vector<maiaKernelArg> args) {
  if (batches == 0) return;
  launchNn(kernel, like.scalar_type(), args, programsFor(batches, work), like.device());
}

inline std::vector<int64_t> batchShapeOf(const Tensor& t, int64_t trailing) {
  return std::vector<int64_t>(t.sizes().begin(), t.sizes().end() - trailing);
}

/// Factors (LU or LDL) and pivots broadcast to x's batch, batch-flattened
/// (materialized only when the expanded views cannot be flattened).
inline std::pair<Tensor, Tensor> factorsFor(const Tensor& factors, const Tensor& pivots,
                                            const Tensor& x) {
  std::vector<int64_t> factors_shape = batchShapeOf(x, 2), pivots_shape = batchShapeOf(x, 2);
  factors_shape.insert(factors_shape.end(), {factors.size(-2), factors.size(-1)});
  pivots_shape.push_back(pivots.size(-1));
  return {flatBatchInput(factors.expand(factors_shape), 2),
          flatBatchInput(pivots.expand(pivots_shape), 1)};
}

/// A batch of column-major copies of t (LAPACK's working layout): always a
/// new tensor, as the kernels overwrite it (contiguous() would return an
/// already column-major t itself).
inline Tensor columnMajorCopy(const Tensor& t) {
  return t.mT().clone(at::MemoryFormat::Contiguous).mT();
}

/// An out= variant: `result` resized to out and copied in.
inline Tensor& copyToOut(const Tensor& result, Tensor& out) {
  at::native::resize_output(out, result.sizes());
  return out.copy_(result);
}

}  // namespace torch_maia::ops::linalg
