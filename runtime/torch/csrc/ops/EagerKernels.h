// Launching the eager kernel binary (maia_eager_kernels.maiabin) from ATen
// operators: kernel lookup by name, and launches over a TensorIterator.
#pragma once

#include <maia/runtime.h>

#include <ATen/TensorIterator.h>

#include <string>

namespace torch_maia::ops {

/// The eager kernel called name (e.g. "add_f32"), loaded on first use from
/// MAIA_EAGER_KERNELS or the build tree. Throws naming the kernel if absent.
maiaKernel_t eagerKernel(const std::string& name);

/// The kernel-name suffix of a dtype ("f32", "bf16", "i64", "b8", ...).
const char* dtypeSuffix(c10::ScalarType dtype);
maiaDtype driverDtype(c10::ScalarType dtype);

/// Launches kernel over iter's iteration space on the current stream of the
/// iterator's device: every operand becomes a rank-4 memref (outputs
/// first), followed by scalars.
void launchElementwise(maiaKernel_t kernel, const at::TensorIteratorBase& iter,
                       c10::ArrayRef<maiaKernelArg> scalars = {});

}  // namespace torch_maia::ops
