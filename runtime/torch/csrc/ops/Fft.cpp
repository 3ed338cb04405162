// The FFT primitives every torch.fft function (and stft/istft) reduces to,
// on maia: _fft_c2c, _fft_r2c and _fft_c2r (complex64/complex128 and
// float32/float64, like the CPU's MKL/pocketfft kernels), by the NN
// binary's FFT kernels (runtime/kernels/nn/fft.h), one launch per
// transformed dimension over a working buffer.
//
// Results have the layout ATen's _exec_fft gives on the CPU (and the meta
// functions promise compiled graphs): batch dimensions first in order of
// decreasing input stride, then the transformed dimensions, contiguous in
// that order and permuted back.
#include <ATen/WrapDimUtilsMulti.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/view_as_real.h>
#include <c10/util/irange.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "WorkSplit.h"
#include "ops/EagerKernels.h"
#include "ops/HostRouting.h"
#include "ops/MaiaOps.h"

namespace torch_maia::ops {
namespace {

using at::IntArrayRef;
using at::Tensor;

/// The dtypes of the CPU's FFT (what it refuses raises its message).
void checkFftDtype(const Tensor& t, bool complex) {
  const auto real = complex ? c10::toRealValueType(t.scalar_type()) : t.scalar_type();
  TORCH_CHECK(complex == t.is_complex() && (real == at::kFloat || real == at::kDouble),
              "MKL FFT doesn't support tensors of type: ", c10::toString(real));
}

/// dims (wrapped) stably sorted by decreasing stride of t; the last one
/// kept last when it is the half-spectrum dimension.
std::vector<int64_t> sortedDims(const Tensor& t, IntArrayRef dims, bool keep_last) {
  std::vector<int64_t> sorted(dims.begin(), dims.end());
  for (auto& d : sorted) d = c10::maybe_wrap_dim(d, t.dim());
  const auto end = keep_last ? std::prev(sorted.end()) : sorted.end();
  std::stable_sort(sorted.begin(), end,
                   [&](int64_t a, int64_t b) { return t.stride(a) > t.stride(b); });
  return sorted;
}

/// _exec_fft's permutation: the other dimensions by decreasing stride of
/// t (stable), then `dims` as given.
std::vector<int64_t> fftPermutation(const Tensor& t, const std::vector<int64_t>& dims) {
  std::vector<int64_t> perm;
  for (const auto d : c10::irange(t.dim()))
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) perm.push_back(d);
  std::stable_sort(perm.begin(), perm.end(),
                   [&](int64_t a, int64_t b) { return t.stride(a) > t.stride(b); });
  perm.insert(perm.end(), dims.begin(), dims.end());
  return perm;
}

std::vector<int64_t> inversePermutation(const std::vector<int64_t>& perm) {
  std::vector<int64_t> inverse(perm.size());
  for (const auto i : c10::irange(perm.size())) inverse[perm[i]] = static_cast<int64_t>(i);
  return inverse;
}

/// ATen's fft_norm_mode: 0 none, 1 by 1/sqrt(n), 2 by 1/n, n the product
/// of the signal sizes.
double normalizationScale(int64_t normalization, int64_t signal_numel) {
  if (normalization == 0) return 1.0;
  const auto n = static_cast<double>(signal_numel);
  return normalization == 1 ? 1.0 / std::sqrt(n) : 1.0 / n;
}

/// A contiguous tensor's elements as (outer, size(axis), inner) around
/// axis, with a trailing 2 for complex tensors (their view_as_real).
maiaKernelArg linesAround(const Tensor& t, int64_t axis) {
  int64_t outer = 1, inner = 1;
  for (const auto d : c10::irange(axis)) outer *= t.size(d);
  for (int64_t d = axis + 1; d < t.dim(); ++d) inner *= t.size(d);
  if (t.is_complex()) return rowMajorMemref(at::view_as_real(t), {outer, t.size(axis), inner, 2});
  return rowMajorMemref(t, {outer, t.size(axis), inner});
}

int64_t linesOf(const Tensor& t, int64_t axis) { return t.numel() / t.size(axis); }

/// Transforms contiguous complex `buffer` in place along each axis, the
/// last launch applying `scale`.
void c2cInPlace(const Tensor& buffer, const std::vector<int64_t>& axes, bool forward,
                double scale) {
  if (buffer.numel() == 0) return;
  const auto real = c10::toRealValueType(buffer.scalar_type());
  for (const auto i : c10::irange(axes.size())) {
    const int64_t axis = axes[i];
    const maiaKernelArg lines = linesAround(buffer, axis);
    const double launch_scale = i + 1 == axes.size() ? scale : 1.0;
    launchNn("fft_c2c", real,
             {lines, lines, intArg(forward), maiaKernelArgFloat(maiaDtypeF64, launch_scale)},
             programsFor(linesOf(buffer, axis), buffer.numel() * 8), buffer.device());
  }
}

/// The permuted buffer's positions of the last `count` dimensions.
std::vector<int64_t> trailingAxes(int64_t dim, size_t count) {
  std::vector<int64_t> axes(count);
  std::iota(axes.begin(), axes.end(), dim - static_cast<int64_t>(count));
  return axes;
}

Tensor fftC2c(const Tensor& self, IntArrayRef dim, int64_t normalization, bool forward) {
  checkFftDtype(self, true);
  if (dim.empty()) return self.clone();
  const auto dims = sortedDims(self, dim, false);
  const auto perm = fftPermutation(self, dims);
  const Tensor input = self.permute(perm);
  Tensor buffer = at::empty(input.sizes(), self.options());
  buffer.copy_(input);  // resolves conjugate and negative views
  int64_t signal_numel = 1;
  for (const auto d : dims) signal_numel *= self.size(d);
  c2cInPlace(buffer, trailingAxes(self.dim(), dims.size()), forward,
             normalizationScale(normalization, signal_numel));
  return buffer.permute(inversePermutation(perm));
}

Tensor fftR2c(const Tensor& self, IntArrayRef dim, int64_t normalization, bool onesided) {
  checkFftDtype(self, false);
  TORCH_CHECK(!dim.empty(), "_fft_r2c: at least one dimension must be transformed");
  const auto dims = sortedDims(self, dim, true);
  const auto perm = fftPermutation(self, dims);
  const Tensor input = self.permute(perm).contiguous();
  const int64_t last = self.dim() - 1, n = input.size(last);
  std::vector<int64_t> out_sizes(input.sizes().begin(), input.sizes().end());
  if (onesided) out_sizes[last] = n / 2 + 1;
  Tensor buffer = at::empty(out_sizes, self.options().dtype(c10::toComplexType(self.scalar_type())));
  int64_t signal_numel = 1;
  for (const auto d : dims) signal_numel *= self.size(d);
  const double scale = normalizationScale(normalization, signal_numel);
  if (buffer.numel() > 0) {
    launchNn("fft_r2c", self.scalar_type(),
             {linesAround(buffer, last), linesAround(input, last),
              maiaKernelArgFloat(maiaDtypeF64, dims.size() == 1 ? scale : 1.0)},
             programsFor(linesOf(input, last), input.numel() * 8), self.device());
  }
  auto axes = trailingAxes(self.dim(), dims.size());
  axes.pop_back();
  c2cInPlace(buffer, axes, true, scale);
  return buffer.permute(inversePermutation(perm));
}

Tensor fftC2r(const Tensor& self, IntArrayRef dim, int64_t normalization,
              int64_t last_dim_size) {
  checkFftDtype(self, true);
  TORCH_CHECK(!dim.empty(), "_fft_c2r: at least one dimension must be transformed");
  TORCH_CHECK(last_dim_size >= 1, "Invalid number of data points (", last_dim_size,
              ") specified");
  const int64_t last_dim = c10::maybe_wrap_dim(dim.back(), self.dim());
  // As on the CPU, the other dimensions first, by a complex inverse.
  const Tensor spectrum =
      dim.size() > 1 ? fftC2c(self, dim.slice(0, dim.size() - 1), normalization, false)
                     : self.resolve_conj().resolve_neg();
  TORCH_CHECK(spectrum.size(last_dim) == last_dim_size / 2 + 1, "_fft_c2r: dimension ",
              last_dim, " holds ", spectrum.size(last_dim), " frequencies; a real signal of ",
              last_dim_size, " points has ", last_dim_size / 2 + 1);
  const auto perm = fftPermutation(spectrum, {last_dim});
  const Tensor input = spectrum.permute(perm).contiguous();
  const int64_t last = self.dim() - 1;
  std::vector<int64_t> out_sizes(input.sizes().begin(), input.sizes().end());
  out_sizes[last] = last_dim_size;
  Tensor out = at::empty(out_sizes, self.options().dtype(c10::toRealValueType(self.scalar_type())));
  if (out.numel() > 0) {
    launchNn("fft_c2r", out.scalar_type(),
             {linesAround(out, last), linesAround(input, last),
              maiaKernelArgFloat(maiaDtypeF64, normalizationScale(normalization, last_dim_size))},
             programsFor(linesOf(out, last), out.numel() * 8), self.device());
  }
  return out.permute(inversePermutation(perm));
}

}  // namespace

MAIA_NATIVE_KERNELS(m) {
  using T = const Tensor&;
  m.impl("_fft_c2c", [](T self, c10::SymIntArrayRef dim, int64_t normalization, bool forward) {
    return fftC2c(self, C10_AS_INTARRAYREF_SLOW(dim), normalization, forward);
  });
  m.impl("_fft_c2c.out", [](T self, c10::SymIntArrayRef dim, int64_t normalization,
                            bool forward, Tensor& out) -> Tensor& {
    return resultInto(out, fftC2c(self, C10_AS_INTARRAYREF_SLOW(dim), normalization, forward));
  });
  m.impl("_fft_r2c", TORCH_FN(fftR2c));
  m.impl("_fft_r2c.out", [](T self, IntArrayRef dim, int64_t normalization, bool onesided,
                            Tensor& out) -> Tensor& {
    return resultInto(out, fftR2c(self, dim, normalization, onesided));
  });
  m.impl("_fft_c2r", [](T self, IntArrayRef dim, int64_t normalization, c10::SymInt last) {
    return fftC2r(self, dim, normalization, last.guard_int(__FILE__, __LINE__));
  });
  m.impl("_fft_c2r.out", [](T self, IntArrayRef dim, int64_t normalization, c10::SymInt last,
                            Tensor& out) -> Tensor& {
    return resultInto(
        out, fftC2r(self, dim, normalization, last.guard_int(__FILE__, __LINE__)));
  });
}

}  // namespace torch_maia::ops
