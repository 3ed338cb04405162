// arange on maia (torch.arange(..., device="maia")): ATen's arange.start_out
// (argument checks, the element count, the resize) with its fill, the
// arange_stub, registered for PrivateUse1 as the iota kernel of the NN binary
// (runtime/kernels/nn/range.h).
//
// The kernel reproduces the CPU's values bit for bit, and the CPU's float
// values depend on how its kernel splits the range: the chunk of
// at::parallel_for (from the host's thread count now) and the vector width.
#include <ATen/Parallel.h>
#include <ATen/TensorIterator.h>
#include <ATen/native/DispatchStub.h>
#include <ATen/native/RangeFactories.h>
#include <ATen/ops/arange_native.h>
#include <torch/library.h>

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

Tensor& arangeOut(const at::Scalar& start, const at::Scalar& end, const at::Scalar& step,
                  Tensor& out) {
  return at::native::arange_out(start, end, step, out);
}

MAIA_NATIVE_KERNELS(m) { m.impl("arange.start_out", TORCH_FN(arangeOut)); }

}  // namespace
}  // namespace torch_maia::ops

namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(arange_stub, &torch_maia::ops::arangeFill)
}  // namespace at::native
