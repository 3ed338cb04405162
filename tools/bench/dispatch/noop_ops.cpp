// maia_bench::noop: one trivial operator registered for CPU and for
// PrivateUse1 with identical kernels, so that timing it on a CPU tensor and
// on a maia tensor isolates what the PrivateUse1 dispatch key costs.
#include <torch/library.h>

namespace {

at::Tensor noop(const at::Tensor& self) { return self; }

TORCH_LIBRARY(maia_bench, m) { m.def("noop(Tensor self) -> Tensor"); }

TORCH_LIBRARY_IMPL(maia_bench, CPU, m) { m.impl("noop", TORCH_FN(noop)); }

TORCH_LIBRARY_IMPL(maia_bench, PrivateUse1, m) { m.impl("noop", TORCH_FN(noop)); }

}  // namespace
