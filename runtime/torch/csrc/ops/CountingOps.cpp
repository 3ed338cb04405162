// Operators that count or rank values, composed of maia's native operators
// (device kernels on the current stream) with the CPU's checks and result
// dtypes: bincount, repeat_interleave, isin, and median/nanmedian over all
// elements. bincount and repeat_interleave synchronize once for their
// output size, as on every device; the others do not.
#include <ATen/native/Resize.h>
#include <ATen/ops/full.h>
#include <ATen/ops/isin.h>
#include <ATen/ops/isnan.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "ops/Fallback.h"
#include "ops/HostRouting.h"
#include "ops/MaiaOps.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;

/// bincount: counts (or summed weights) per value; float weights give float,
/// other weights double, none int64 (the CPU's result dtypes).
Tensor bincount(const Tensor& self, const std::optional<Tensor>& weights, int64_t minlength) {
  TORCH_CHECK(minlength >= 0, "minlength should be >= 0");
  TORCH_CHECK(self.dim() == 1 && !c10::isFloatingType(self.scalar_type()) &&
                  self.scalar_type() != at::kBool,
              "bincount only supports 1-d non-negative integral inputs.");
  const bool weighted = weights.has_value() && weights->defined();
  TORCH_CHECK(!weighted || (weights->dim() == 1 && weights->size(0) == self.size(0)),
              "weights should be 1-d and have the same length as input");
  const c10::ScalarType dtype = !weighted ? at::kLong
                                : weights->scalar_type() == at::kFloat ? at::kFloat
                                                                       : at::kDouble;
  int64_t size = minlength;
  if (self.numel() > 0) {
    auto [lowest, highest] = self.aminmax();
    TORCH_CHECK(lowest.item<int64_t>() >= 0, "bincount only supports 1-d non-negative integral "
                "inputs.");
    size = std::max(size, highest.item<int64_t>() + 1);
  }
  Tensor counts = at::zeros({size}, self.options().dtype(dtype));
  if (self.numel() == 0) return counts;
  Tensor index = self.to(at::kLong);
  return counts.index_add_(0, index, weighted ? weights->to(dtype)
                                              : at::ones({self.size(0)}, counts.options()));
}

/// repeat_interleave(repeats): i repeated repeats[i] times. Each run's start
/// marks a 1 in a zero vector (several for empty runs), whose prefix sum is
/// the run number.
Tensor repeatInterleave(const Tensor& repeats, std::optional<c10::SymInt> output_size) {
  TORCH_CHECK(repeats.dim() == 1, "repeat_interleave only accept 1D vector as repeat");
  TORCH_CHECK(repeats.scalar_type() == at::kLong || repeats.scalar_type() == at::kInt,
              "repeats has to be Long or Int tensor");
  const c10::TensorOptions longs = repeats.options().dtype(at::kLong);
  if (repeats.numel() == 0) return newEmpty({0}, longs);
  Tensor counts = repeats.to(at::kLong);
  TORCH_CHECK(counts.min().item<int64_t>() >= 0, "repeats can not be negative");
  Tensor ends = counts.cumsum(0);
  const int64_t total =
      output_size.has_value() ? output_size->expect_int() : ends[-1].item<int64_t>();
  Tensor marks = at::zeros({total + 1}, longs);
  const int64_t runs = ends.numel() - 1;  // the last run ends at total: no mark
  marks.index_add_(0, ends.narrow(0, 0, runs), at::ones({runs}, longs));
  return marks.narrow(0, 0, total).cumsum(0);
}

/// isin by comparing every element with every test element: exact equality
/// (NaN is in nothing) as the CPU's algorithms give. Beyond 2^26 pairs the
/// comparison matrix would not fit: the counted host path.
Tensor& isinOut(const Tensor& elements, const Tensor& test, bool assume_unique, bool invert,
                Tensor& out) {
  at::native::resize_output(out, elements.sizes());
  if (elements.numel() * test.numel() > (int64_t{1} << 26)) {
    noteHostFallback("aten::isin.Tensor_Tensor_out");
    return out.copy_(at::isin(elements.cpu(), test.cpu(), assume_unique, invert));
  }
  if (test.numel() == 0) return out.fill_(invert);
  Tensor found = elements.unsqueeze(-1).eq(test.reshape({-1})).any(-1);
  return out.copy_(invert ? found.logical_not() : found);
}

/// The lower median of all elements (sorted[(n - 1) / 2]); NaN if any
/// element is NaN (median) or of the non-NaN ones (nanmedian, NaN if none).
/// No synchronization: the rank is computed and gathered on the device.
Tensor medianOfAll(const Tensor& self, bool ignore_nan) {
  Tensor values = std::get<0>(self.reshape({-1}).sort(/*stable=*/false, 0, false));
  const int64_t n = values.numel();
  if (n == 0) return at::full({}, NAN, self.options());
  if (!c10::isFloatingType(self.scalar_type())) return values[(n - 1) / 2].clone();
  // NaNs sort last: median is NaN when the last value is; nanmedian's rank
  // counts the others.
  if (!ignore_nan) return at::where(values[n - 1].isnan(), values[n - 1], values[(n - 1) / 2]);
  Tensor rank = at::isnan(values).logical_not().sum().sub(1).div(2, "floor").clamp_min(0);
  return values.index_select(0, rank.view({1})).squeeze(0);
}

}  // namespace

MAIA_NATIVE_KERNELS(m) {
  m.impl("bincount", TORCH_FN(bincount));
  m.impl("repeat_interleave.Tensor", TORCH_FN(repeatInterleave));
  m.impl("isin.Tensor_Tensor_out", TORCH_FN(isinOut));
  m.impl("isin.Tensor_Tensor", [](const Tensor& elements, const Tensor& test, bool assume_unique,
                                  bool invert) {
    Tensor out = newEmpty({0}, elements.options().dtype(at::kBool));
    return isinOut(elements, test, assume_unique, invert, out);
  });
  m.impl("median", [](const Tensor& self) { return medianOfAll(self, false); });
  m.impl("nanmedian", [](const Tensor& self) { return medianOfAll(self, true); });
}

}  // namespace torch_maia::ops
