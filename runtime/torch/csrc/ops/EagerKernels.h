// Launching the eager kernel binary (maia_eager_kernels_v4.maiabin, else _v3) from ATen
// operators: kernel lookup by name, and launches over a TensorIterator.
#pragma once

#include <maia/runtime.h>

#include <ATen/TensorIterator.h>
#include <ATen/core/Tensor.h>
#include <c10/util/MaybeOwned.h>

#include <initializer_list>
#include <string>

namespace torch_maia::ops {

/// The kernel called name of the eager elementwise binary (e.g. "add_f32")
/// or of the GEMM binary ("gemm_f32"), loaded on first use from
/// MAIA_KERNEL_DIR or the build tree. Throws naming the kernel if absent.
maiaKernel_t eagerKernel(const std::string& name);
/// Kernel "<op>_<dtype suffix>" of the eager binary, from a per-thread cache
/// keyed by (op, dtype): the per-op path builds no string and takes no lock.
maiaKernel_t eagerKernel(const char* op, c10::ScalarType dtype);
/// Kernel "<op>_<dtype suffix>" of the reduce binary (maia_reduce_kernels.maiabin,
/// e.g. "sum_f32"), cached like eagerKernel(op, dtype).
maiaKernel_t reduceKernel(const char* op, c10::ScalarType dtype);
/// Kernel "gemm_<dtype suffix>" of the GEMM binary (cached like eagerKernel).
maiaKernel_t gemmKernel(c10::ScalarType dtype);
/// Kernel "conv2d_<dtype suffix>" of the convolution binary
/// (maia_conv_kernels_v4.maiabin, else _v3), cached like eagerKernel.
maiaKernel_t convKernel(c10::ScalarType dtype);
/// out[b] = alpha * a[b] @ m[b] + beta * out[b] on the current stream of
/// out's device (MatMul.cpp). a, m, out are 3-D (batch, rows, cols) or 2-D
/// (one batch) tensors of any strides; a batch of a or m of size 1
/// broadcasts. beta == 0 never reads out. Dtypes without a device GEMM
/// (complex) are computed on the host and counted as host fallbacks of op
/// (fallback_counts).
void gemm(const at::Tensor& a, const at::Tensor& m, const at::Tensor& out,
          const at::Scalar& alpha, const at::Scalar& beta, const char* op);
/// Kernel "<op>_<dtype suffix>" of the NN binary (maia_nn_kernels.maiabin,
/// e.g. "softmax_f32"), cached like eagerKernel(op, dtype).
maiaKernel_t nnKernel(const char* op, c10::ScalarType dtype);

/// Kernel "<op>_<dtype suffix>" of the attention binary
/// (maia_attention_kernels_v4.maiabin, else _v3; e.g. "sdpa_fwd_bf16"),
/// cached like eagerKernel(op, dtype).
maiaKernel_t attentionKernel(const char* op, c10::ScalarType dtype);

/// Launches kernel with args on the current stream of device, over a
/// one-dimensional grid of programs (at least one; programsFor in
/// WorkSplit.h says how many).
void launchPrograms(maiaKernel_t kernel, c10::ArrayRef<maiaKernelArg> args, int64_t programs,
                    c10::DeviceIndex device);

/// Launches kernel "<name>_<dtype suffix>" of the NN binary with args on the
/// current stream of device, over a one-dimensional grid of programs.
void launchNn(const char* name, c10::ScalarType dtype,
              c10::ArrayRef<maiaKernelArg> args, int64_t programs, const c10::Device& device);

/// An int64 scalar kernel argument.
inline maiaKernelArg intArg(int64_t v) { return maiaKernelArgInt(maiaDtypeI64, v); }

/// A memref of rank over t's storage from t's offset, sizes and strides
/// left for the caller to set (no view is made for them).
maiaKernelArg unshapedMemref(const at::Tensor& t, int rank);
/// Contiguous t's elements as a row-major memref of the given sizes (the
/// view without the reshape/view dispatch).
maiaKernelArg rowMajorMemref(const at::Tensor& t, std::initializer_list<int64_t> sizes);

/// t itself (borrowed) when it already has dtype, else t cast to it. A copy
/// of a tensor that Python holds would take the GIL twice (torch preserves
/// the PyObject while C++ holds a second reference).
c10::MaybeOwned<at::Tensor> castTo(const at::Tensor& t, c10::ScalarType dtype);

/// A memref argument viewing tensor t (allocation start + element offset,
/// so negative strides stay inside the allocation).
maiaKernelArg memrefOf(const at::Tensor& t);
/// The same of rank `rank` >= t.dim(): leading size-1 dimensions pad it
/// (cheaper than unsqueezed views, which each cost a dispatch).
maiaKernelArg memrefOf(const at::Tensor& t, int rank);

/// The kernel-name suffix of a dtype ("f32", "bf16", "i64", "b8", ...).
const char* dtypeSuffix(c10::ScalarType dtype);
maiaDtype driverDtype(c10::ScalarType dtype);

/// Launches an elementwise kernel over contiguous operands of one shape
/// (outputs first; 0-dim operands are broadcast) on the current stream of
/// their device, without a TensorIterator: each operand is a rank-4 memref
/// over its numel elements, followed by scalars.
void launchDense(maiaKernel_t kernel, c10::ArrayRef<const at::Tensor*> operands, int64_t numel,
                 c10::ArrayRef<maiaKernelArg> scalars = {});

/// Launches kernel over iter's iteration space on the current stream of the
/// iterator's device: every operand becomes a rank-4 memref (outputs
/// first), followed by scalars.
void launchElementwise(maiaKernel_t kernel, const at::TensorIteratorBase& iter,
                       c10::ArrayRef<maiaKernelArg> scalars = {});

}  // namespace torch_maia::ops
