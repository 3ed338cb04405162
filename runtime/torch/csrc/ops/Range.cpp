// arange, linspace and logspace on maia: ATen's arange.start_out and
// linspace.out (argument checks, the element count, the resize) with their
// fills, the arange_stub and linspace_stub, registered for PrivateUse1 as
// kernels of the NN binary (runtime/kernels/nn/range.h); logspace.out (the
// CPU's has no stub) with the same checks around its kernel.
//
// The kernel reproduces the CPU's values bit for bit, and the CPU's float
// values depend on how its kernel splits the range: the chunk of
// at::parallel_for (from the host's thread count now) and the vector width.
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <ATen/TensorIterator.h>
#include <ATen/native/DispatchStub.h>
#include <ATen/native/RangeFactories.h>
#include <ATen/ops/arange_native.h>
#include <ATen/ops/linspace_native.h>
#include <torch/library.h>

#include <cmath>

#include "WorkSplit.h"
#include "ops/EagerKernels.h"
#include "ops/HostRouting.h"
#include "ops/MaiaOps.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;

// The CPU kernel writes 256-bit vectors (measured with torch 2.13 on AVX-512
// hosts too: float64 values match 4-element groups, not 8).
constexpr int64_t kCpuVectorBytes = 32;

/// The length of at::parallel_for's chunks over n elements, as the CPU
/// kernel would split them now.
int64_t cpuChunk(int64_t n) {
  const int64_t grain = at::internal::GRAIN_SIZE;
  const int64_t threads = at::get_num_threads();
  if (n <= grain || threads <= 1 || at::in_parallel_region()) return std::max<int64_t>(n, 1);
  const int64_t tasks = std::min(threads, (n + grain - 1) / grain);
  return (n + tasks - 1) / tasks;
}

void arangeFill(at::TensorIterator& iter, const at::Scalar& start, const at::Scalar& size,
                const at::Scalar& step) {
  const Tensor& out = iter.tensor(0);  // contiguous: arange_out makes sure
  const int64_t n = size.toLong();
  if (n == 0) return;
  const bool floating = at::isFloatingType(out.scalar_type());
  launchNn("arange", out.scalar_type(),
           {rowMajorMemref(out, {n}),
            maiaKernelArgFloat(maiaDtypeF64, floating ? start.toDouble() : 0.0),
            maiaKernelArgFloat(maiaDtypeF64, floating ? step.toDouble() : 0.0),
            intArg(floating ? 0 : start.toLong()), intArg(floating ? 0 : step.toLong()),
            intArg(kCpuVectorBytes / static_cast<int64_t>(out.element_size())),
            intArg(cpuChunk(n))},
           programsFor(n, n), out.device());
}

/// Raises as the CPU's kernels do when start or end does not fit out's
/// dtype (Scalar::to<scalar_t>: "value cannot be converted ... without
/// overflow"; negative values wrap into unsigned types).
void checkBoundsFit(const at::Scalar& start, const at::Scalar& end, c10::ScalarType dtype) {
  AT_DISPATCH_ALL_TYPES_AND2(at::kHalf, at::kBFloat16, dtype, "range_bounds", [&] {
    (void)start.to<scalar_t>();
    (void)end.to<scalar_t>();
  });
}

/// linspace_stub: out has steps >= 2 elements, contiguous (linspace_out).
/// Integer bounds reach the kernel as doubles: exact below 2^53.
void linspaceFill(at::TensorIterator& iter, const at::Scalar& start, const at::Scalar& end,
                  int64_t steps) {
  const Tensor& out = iter.tensor(0);
  checkBoundsFit(start, end, out.scalar_type());
  launchNn("linspace", out.scalar_type(),
           {rowMajorMemref(out, {steps}), maiaKernelArgFloat(maiaDtypeF64, start.toDouble()),
            maiaKernelArgFloat(maiaDtypeF64, end.toDouble())},
           programsFor(steps, steps), out.device());
}

/// logspace.out as the CPU's logspace_out: checks, the resize, one element
/// filled directly, the others by the logspace kernel (into a contiguous
/// temporary when out is not contiguous).
Tensor& logspaceOut(const at::Scalar& start, const at::Scalar& end, int64_t steps, double base,
                    Tensor& out) {
  TORCH_CHECK(steps >= 0, "number of steps must be non-negative");
  if (out.numel() != steps) out.resize_({steps});
  if (steps == 0) return out;
  if (steps == 1) return fill(out, std::pow(base, start.toDouble()));
  checkBoundsFit(start, end, out.scalar_type());
  Tensor r = out.is_contiguous() ? out : newEmpty({steps}, out.options());
  launchNn("logspace", r.scalar_type(),
           {rowMajorMemref(r, {steps}), maiaKernelArgFloat(maiaDtypeF64, start.toDouble()),
            maiaKernelArgFloat(maiaDtypeF64, end.toDouble()),
            maiaKernelArgFloat(maiaDtypeF64, base)},
           programsFor(steps, steps), r.device());
  if (!r.is_same(out)) out.copy_(r);
  return out;
}

Tensor& arangeOut(const at::Scalar& start, const at::Scalar& end, const at::Scalar& step,
                  Tensor& out) {
  return at::native::arange_out(start, end, step, out);
}

Tensor& linspaceOut(const at::Scalar& start, const at::Scalar& end, int64_t steps, Tensor& out) {
  return at::native::linspace_out(start, end, steps, out);
}

MAIA_NATIVE_KERNELS(m) {
  m.impl("arange.start_out", TORCH_FN(arangeOut));
  m.impl("linspace.out", TORCH_FN(linspaceOut));
  m.impl("logspace.out", TORCH_FN(logspaceOut));
}

}  // namespace
}  // namespace torch_maia::ops

namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(arange_stub, &torch_maia::ops::arangeFill)
REGISTER_PRIVATEUSE1_DISPATCH(linspace_stub, &torch_maia::ops::linspaceFill)
}  // namespace at::native
