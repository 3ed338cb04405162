// searchsorted, bucketize and histc on maia: ATen's own argument checks
// (BucketizationUtils.h) and the CPU's edge selection around kernels of the
// NN binary (runtime/kernels/nn/bucketing.h) that place each value as the
// CPU does. Dtypes the CPU refuses take the host path, which raises its
// error.
#include <ATen/native/BucketizationUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/aminmax.h>
#include <ATen/ops/bucketize.h>
#include <ATen/ops/histc.h>
#include <ATen/ops/searchsorted.h>
#include <torch/library.h>

#include <cmath>
#include <optional>
#include <string_view>

#include "WorkSplit.h"
#include "ops/EagerKernels.h"
#include "ops/Fallback.h"
#include "ops/HostRouting.h"
#include "ops/MaiaOps.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;

/// The CPU computes searchsorted for every dtype but bool.
bool searchesOnDevice(c10::ScalarType dtype) {
  return dtype != at::kBool;
}

/// out (int64 or int32) = the position of each value among the last
/// dimension of boundaries (1-D: shared by every value), as the CPU's
/// searchsorted_out_cpu: the same checks, promotion and shapes.
Tensor& searchsortedOut(const Tensor& boundaries, const Tensor& values, bool out_int32,
                        bool right, std::optional<std::string_view> side,
                        const std::optional<Tensor>& sorter_opt, Tensor& out) {
  const Tensor sorter = sorter_opt.value_or(Tensor());
  at::native::searchsorted_pre_check(boundaries, values, out, out_int32, right, side, sorter);
  at::native::resize_output(out, values.sizes());
  const bool is_right = side ? *side == "right" : right;
  if (values.numel() == 0) return out;
  Tensor trimmed_values, trimmed_boundaries, trimmed_sorter;
  at::native::searchsorted_maybe_trim_input_tensors(trimmed_values, trimmed_boundaries,
                                                    trimmed_sorter, values, boundaries, sorter);
  const Tensor& v = trimmed_values.defined() ? trimmed_values : values;
  const Tensor& b = trimmed_boundaries.defined() ? trimmed_boundaries : boundaries;
  if (!searchesOnDevice(v.scalar_type())) {  // raises the CPU's error
    noteHostFallback("aten::searchsorted.Tensor_out");
    Tensor host_out = at::empty({0}, out.options().device(at::kCPU));
    at::searchsorted_out(host_out, b.cpu(), v.cpu(), out_int32, right, side,
                         sorter.defined() ? std::optional<Tensor>(sorter.cpu()) : std::nullopt);
    return out.copy_(host_out);
  }
  const int64_t length = b.size(-1);
  const int64_t count = v.dim() == 0 ? 1 : v.size(-1);
  const int64_t rows = v.numel() / count;
  const Tensor b2 = b.reshape({-1, length});
  const Tensor v2 = v.reshape({rows, count});
  const Tensor s2 = sorter.defined() ? sorter.reshape({-1, length}) : Tensor();
  const bool direct = out.scalar_type() == at::kLong && out.is_contiguous();
  Tensor positions = direct ? out : newEmpty(values.sizes(), out.options().dtype(at::kLong));
  maiaKernelArg out_arg = rowMajorMemref(positions, {rows, count});
  launchNn("searchsorted", v.scalar_type(),
           {out_arg, memrefOf(b2), memrefOf(v2), s2.defined() ? memrefOf(s2) : out_arg,
            intArg(s2.defined() ? 1 : 0), intArg(is_right ? 1 : 0)},
           programsFor(v.numel(), v.numel() * 16), values.device());
  if (!direct) out.copy_(positions);
  return out;
}

Tensor searchsortedValues(const Tensor& boundaries, const Tensor& values, bool out_int32,
                          bool right, std::optional<std::string_view> side,
                          const std::optional<Tensor>& sorter) {
  Tensor out = newEmpty({0}, values.options().dtype(out_int32 ? at::kInt : at::kLong));
  return searchsortedOut(boundaries, values, out_int32, right, side, sorter, out);
}

Tensor searchsortedScalar(const Tensor& boundaries, const at::Scalar& value, bool out_int32,
                          bool right, std::optional<std::string_view> side,
                          const std::optional<Tensor>& sorter) {
  return searchsortedValues(boundaries,
                            at::native::searchsorted_scalar_tensor(value, boundaries.device()),
                            out_int32, right, side, sorter);
}

Tensor& searchsortedScalarOut(const Tensor& boundaries, const at::Scalar& value, bool out_int32,
                              bool right, std::optional<std::string_view> side,
                              const std::optional<Tensor>& sorter, Tensor& out) {
  return searchsortedOut(boundaries,
                         at::native::searchsorted_scalar_tensor(value, boundaries.device()),
                         out_int32, right, side, sorter, out);
}

void checkBucketizeBoundaries(const Tensor& boundaries) {
  TORCH_CHECK(boundaries.dim() == 1, "boundaries tensor must be 1 dimension, but got dim(",
              boundaries.dim(), ")");
}

Tensor& bucketizeOut(const Tensor& values, const Tensor& boundaries, bool out_int32, bool right,
                     Tensor& out) {
  checkBucketizeBoundaries(boundaries);
  return searchsortedOut(boundaries, values, out_int32, right, std::nullopt, std::nullopt, out);
}

Tensor bucketizeValues(const Tensor& values, const Tensor& boundaries, bool out_int32,
                       bool right) {
  Tensor out = newEmpty({0}, values.options().dtype(out_int32 ? at::kInt : at::kLong));
  return bucketizeOut(values, boundaries, out_int32, right, out);
}

Tensor bucketizeScalar(const at::Scalar& value, const Tensor& boundaries, bool out_int32,
                       bool right) {
  checkBucketizeBoundaries(boundaries);
  return searchsortedScalar(boundaries, value, out_int32, right, std::nullopt, std::nullopt);
}

/// histc's outer edges, as the CPU picks them: min and max, or the data's
/// extremes when they are equal (a device reduction and one read, as the
/// CPU's), widened by one each way when still equal.
std::pair<double, double> histcEdges(const Tensor& self, const at::Scalar& min,
                                     const at::Scalar& max) {
  double left = min.to<double>(), right = max.to<double>();
  if (left == right && self.numel() > 0) {
    auto [lo, hi] = at::aminmax(self);
    left = lo.item<double>();
    right = hi.item<double>();
  }
  if (left == right) {
    left -= 1;
    right += 1;
  }
  TORCH_CHECK(std::isfinite(left) && std::isfinite(right), "torch.histc: range of [", left,
              ", ", right, "] is not finite");
  TORCH_CHECK(left < right, "torch.histc: max must be larger than min");
  return {left, right};
}

/// The histogram: each program counts its share of the elements into its
/// own row of int64 counts; the rows are summed and converted to the dtype
/// (exact where the CPU's per-thread float16/bfloat16 counts are too).
Tensor& histcOut(const Tensor& self, int64_t bins, const at::Scalar& min, const at::Scalar& max,
                 Tensor& out) {
  if (!at::isFloatingType(self.scalar_type())) {  // raises the CPU's error
    noteHostFallback("aten::histc.out");
    return out.copy_(at::histc(self.cpu(), bins, min, max));
  }
  TORCH_CHECK(out.scalar_type() == self.scalar_type(),
              "torch.histogram: input tensor and hist tensor should have the same dtype, but got "
              "input ", self.scalar_type(), " and hist ", out.scalar_type());
  TORCH_CHECK(bins > 0, "torch.histogram(): bins must be > 0, but got ", bins,
              " for dimension 0");
  auto [left, right] = histcEdges(self, min, max);
  at::native::resize_output(out, {bins});
  if (self.numel() == 0) return out.zero_();
  const Tensor flat = self.reshape({-1});
  const int64_t programs = programsFor(flat.numel(), flat.numel());
  Tensor counts = newEmpty({programs, bins}, self.options().dtype(at::kLong));
  launchNn("histc_count", self.scalar_type(),
           {memrefOf(counts), memrefOf(flat), maiaKernelArgFloat(maiaDtypeF64, left),
            maiaKernelArgFloat(maiaDtypeF64, right), intArg(bins)},
           programs, self.device());
  return out.copy_(counts.sum(0));
}

Tensor histcCounts(const Tensor& self, int64_t bins, const at::Scalar& min,
                   const at::Scalar& max) {
  Tensor out = newEmpty({0}, self.options());
  return histcOut(self, bins, min, max, out);
}

MAIA_NATIVE_KERNELS(m) {
  m.impl("searchsorted.Tensor", TORCH_FN(searchsortedValues));
  m.impl("searchsorted.Tensor_out", TORCH_FN(searchsortedOut));
  m.impl("searchsorted.Scalar", TORCH_FN(searchsortedScalar));
  m.impl("searchsorted.Scalar_out", TORCH_FN(searchsortedScalarOut));
  m.impl("bucketize.Tensor", TORCH_FN(bucketizeValues));
  m.impl("bucketize.Tensor_out", TORCH_FN(bucketizeOut));
  m.impl("bucketize.Scalar", TORCH_FN(bucketizeScalar));
  m.impl("histc", TORCH_FN(histcCounts));
  m.impl("histc.out", TORCH_FN(histcOut));
}

}  // namespace
}  // namespace torch_maia::ops
