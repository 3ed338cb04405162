// segment_reduce on maia. ATen's own operator functions run for maia
// (argument checks, the validation of lengths, contiguous operands) and
// reach the device through the PrivateUse1 entries of ATen's segment-reduce
// dispatch stubs, which launch the NN binary's kernels
// (runtime/kernels/nn/segment_reduce.h). Lengths become offsets by a
// device cumsum, so one kernel serves both forms.
#include <ATen/native/DispatchStub.h>
#include <ATen/native/ReductionType.h>
#include <ATen/native/SegmentReduce.h>
#include <ATen/ops/_segment_reduce_backward_native.h>
#include <ATen/ops/cumsum.h>
#include <ATen/ops/segment_reduce_native.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>
#include <torch/library.h>

#include <optional>

#include "WorkSplit.h"
#include "ops/EagerKernels.h"
#include "ops/HostRouting.h"
#include "ops/MaiaOps.h"
#include "ops/OpUtils.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;
using at::native::ReductionType;
using Initial = std::optional<at::Scalar>;

/// The kernels' reduction codes (SegmentOp in segment_reduce.h).
int64_t segmentOpCode(ReductionType reduction) {
  switch (reduction) {
    case ReductionType::MAX: return 0;
    case ReductionType::MEAN: return 1;
    case ReductionType::MIN: return 2;
    case ReductionType::SUM: return 3;
    case ReductionType::PROD: return 4;
  }
  TORCH_CHECK(false, "segment_reduce(): unknown reduction");
}

/// data viewed as (outer, n, inner) around axis, and the segments' offsets
/// as (outer, segments + 1) int64.
struct SegmentPlan {
  int64_t outer = 1, n = 1, inner = 1, segments = 0;
  Tensor offsets;
};

SegmentPlan planFor(const Tensor& data, const Tensor& lengths_or_offsets, int64_t axis,
                    bool is_offsets) {
  checkFloatDtype("_segment_reduce_cpu", data.scalar_type());
  SegmentPlan p;
  for (int64_t d = 0; d < axis; ++d) p.outer *= data.size(d);
  for (int64_t d = axis + 1; d < data.dim(); ++d) p.inner *= data.size(d);
  p.n = data.size(axis);
  const int64_t last = lengths_or_offsets.size(-1);
  p.segments = is_offsets ? last - 1 : last;
  TORCH_CHECK(p.segments >= 0 && lengths_or_offsets.numel() == p.outer * last,
              "segment_reduce(): ", is_offsets ? "offsets" : "lengths", " of shape ",
              lengths_or_offsets.sizes(), " do not match the leading dimensions of data of shape ",
              data.sizes());
  const Tensor rows = lengths_or_offsets.reshape({p.outer, last});
  if (is_offsets) {
    p.offsets = rows.to(at::kLong);
  } else {
    p.offsets = at::zeros({p.outer, p.segments + 1}, rows.options().dtype(at::kLong));
    p.offsets.narrow(1, 1, p.segments).copy_(at::cumsum(rows, 1, at::kLong));
  }
  return p;
}

maiaKernelArg initialArg(const Initial& initial) {
  return maiaKernelArgFloat(maiaDtypeF64, initial.has_value() ? initial->to<double>() : 0.0);
}

Tensor segmentReduce(ReductionType reduction, const Tensor& data, const Tensor& lengths_or_offsets,
                     int64_t axis, const Initial& initial, bool is_offsets) {
  const SegmentPlan p = planFor(data, lengths_or_offsets, axis, is_offsets);
  std::vector<int64_t> shape = data.sizes().vec();
  shape[axis] = p.segments;
  Tensor out = newEmpty(shape, data.options());
  const int64_t outputs = out.numel();
  if (outputs == 0) return out;
  launchNn("segment_reduce", data.scalar_type(),
           {rowMajorMemref(out, {p.outer, p.segments, p.inner}),
            rowMajorMemref(data, {p.outer, p.n, p.inner}), memrefOf(p.offsets),
            intArg(segmentOpCode(reduction)), intArg(initial.has_value()), initialArg(initial)},
           programsFor(outputs, outputs + data.numel()), data.device());
  return out;
}

Tensor segmentReduceBackward(const Tensor& grad, const Tensor& output, const Tensor& data,
                             ReductionType reduction, const Tensor& lengths_or_offsets,
                             int64_t axis, const Initial& initial, bool is_offsets) {
  const SegmentPlan p = planFor(data, lengths_or_offsets, axis, is_offsets);
  Tensor grad_input = at::zeros_like(data, at::MemoryFormat::Contiguous);
  const int64_t outputs = grad.numel();
  if (outputs == 0 || data.numel() == 0) return grad_input;
  TORCH_CHECK(grad.numel() == p.outer * p.segments * p.inner && output.numel() == grad.numel(),
              "segment_reduce backward: grad of shape ", grad.sizes(), " and output of shape ",
              output.sizes(), " do not match ", p.segments, " segments of data of shape ",
              data.sizes());
  const std::initializer_list<int64_t> result_shape = {p.outer, p.segments, p.inner};
  launchNn("segment_reduce_bwd", data.scalar_type(),
           {rowMajorMemref(grad_input, {p.outer, p.n, p.inner}), rowMajorMemref(grad, result_shape),
            rowMajorMemref(output, result_shape), rowMajorMemref(data, {p.outer, p.n, p.inner}),
            memrefOf(p.offsets), intArg(segmentOpCode(reduction)), intArg(initial.has_value()),
            initialArg(initial)},
           programsFor(outputs, outputs + data.numel()), data.device());
  return grad_input;
}

Tensor lengthsForward(ReductionType reduction, const Tensor& data, const Tensor& lengths,
                      int64_t axis, const Initial& initial) {
  return segmentReduce(reduction, data, lengths, axis, initial, /*is_offsets=*/false);
}
Tensor offsetsForward(ReductionType reduction, const Tensor& data, const Tensor& offsets,
                      int64_t axis, const Initial& initial) {
  return segmentReduce(reduction, data, offsets, axis, initial, /*is_offsets=*/true);
}
Tensor lengthsBackward(const Tensor& grad, const Tensor& output, const Tensor& data,
                       ReductionType reduction, const Tensor& lengths, int64_t axis,
                       const Initial& initial) {
  return segmentReduceBackward(grad, output, data, reduction, lengths, axis, initial, false);
}
Tensor offsetsBackward(const Tensor& grad, const Tensor& output, const Tensor& data,
                       ReductionType reduction, const Tensor& offsets, int64_t axis,
                       const Initial& initial) {
  return segmentReduceBackward(grad, output, data, reduction, offsets, axis, initial, true);
}

}  // namespace
}  // namespace torch_maia::ops

namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(_segment_reduce_lengths_stub, &torch_maia::ops::lengthsForward)
REGISTER_PRIVATEUSE1_DISPATCH(_segment_reduce_offsets_stub, &torch_maia::ops::offsetsForward)
REGISTER_PRIVATEUSE1_DISPATCH(_segment_reduce_lengths_backward_stub,
                              &torch_maia::ops::lengthsBackward)
REGISTER_PRIVATEUSE1_DISPATCH(_segment_reduce_offsets_backward_stub,
                              &torch_maia::ops::offsetsBackward)
}  // namespace at::native

namespace torch_maia::ops {
MAIA_NATIVE_KERNELS(m) {
  m.impl("segment_reduce", TORCH_FN(at::native::segment_reduce_kernel));
  m.impl("_segment_reduce_backward", TORCH_FN(at::native::_segment_reduce_backward_kernel));
}
}  // namespace torch_maia::ops
