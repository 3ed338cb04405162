// maia_gemm_kernels_{v4,v3}.maiabin: the device GEMM kernels.
//
//   gemm_f32 (A, B, C, alpha, beta)   A, B, C: memref<?x?x?xf32>, any strides
//   gemm_bf16(A, B, C, alpha, beta)   ... xbf16; alpha, beta: f32 scalars
//   gemm_f16 (A, B, C, alpha, beta)   ... xf16
//   gemm_f64 (A, B, C, alpha, beta)   ... xf64; alpha, beta: f64 scalars
//   gemm_i64, gemm_i32, gemm_i16, gemm_i8, gemm_u8 (A, B, C, alpha, beta)
//                                     ... of the integer type; alpha, beta:
//                                     i64 scalars (wrapping, as the CPU)
//
// C[b] = alpha * A[b] @ B[b] + beta * C[b] for b < batch, with A [batch', M,
// K], B [batch', K, N], C [batch, M, N] (batch' is batch or 1) and strides
// in elements: 0 broadcasts a batch, a row stride of 1 is a transposed
// operand. beta == 0 never reads C (it may hold NaN); K == 0 or alpha == 0
// gives beta * C without reading A or B (as BLAS). bf16/f16 accumulate in
// fp32 and round once to the output type; float64 and the integers take
// wide_gemm.h. Shapes that do not agree trap:
// the driver reports it as the device's sticky error naming the kernel.
//
// Grid: grid[0] splits the rows of C, grid[1] its columns (in whole
// micro-tiles), grid[2] the batch; any grid >= 1 is correct. Launch with
// maia_gemm_grid() from gemm_launch.h.
//
// The same sources build two binaries: _v4 (-march=x86-64-v4, AVX-512
// microkernel) and _v3 (-march=x86-64-v3, AVX2). The driver refuses a
// binary whose target features the host lacks (maiaErrorUnsupportedImage),
// so a loader tries _v4 first, then _v3. Each binary's metadata (this
// kernel table, and the features of its ISA level) is written by
// gen_gemm_metadata.py, like that of every host-built kernel binary: a
// change to the entry points or their arguments goes there too.
#include <maia/kernel_abi.h>

#include <cstdint>

#include "element.h"
#include "gemm.h"
#include "program_split.h"
#include "wide_gemm.h"

namespace maia_gemm {
namespace {

/// The operands' batch strides (0 for a batch of size 1, which broadcasts
/// whatever its stride says), once their shapes are checked to agree: a
/// mismatch traps.
struct BatchStrides {
  int64_t a, b;
};
template <typename T>
BatchStrides checkedBatchStrides(const maia_kernel::MemRef<T, 3>& a,
                                 const maia_kernel::MemRef<T, 3>& b,
                                 const maia_kernel::MemRef<T, 3>& c) {
  const int64_t batch = c.sizes[0];
  if (a.sizes[1] != c.sizes[1] || b.sizes[1] != a.sizes[2] || b.sizes[2] != c.sizes[2] ||
      (a.sizes[0] != batch && a.sizes[0] != 1) || (b.sizes[0] != batch && b.sizes[0] != 1))
    __builtin_trap();
  return {a.sizes[0] == 1 ? 0 : a.strides[0], b.sizes[0] == 1 ? 0 : b.strides[0]};
}

template <typename T>
void gemmProgram(void* const* args, const maia_grid_t* grid) {
  const auto& a = maia_kernel::memref<T, 3>(args, 0);
  const auto& b = maia_kernel::memref<T, 3>(args, 1);
  const auto& c = maia_kernel::memref<T, 3>(args, 2);
  const float alpha = maia_kernel::scalar<float>(args, 3);
  const float beta = maia_kernel::scalar<float>(args, 4);
  const int64_t batch = c.sizes[0], m = c.sizes[1], n = c.sizes[2], k = a.sizes[2];
  const auto [a_batch_stride, b_batch_stride] = checkedBatchStrides(a, b, c);

  Range rows = split(m, kMR, grid->num_programs[0], grid->program_id[0]);
  Range cols = split(n, kNR, grid->num_programs[1], grid->program_id[1]);
  Range mats = split(batch, 1, grid->num_programs[2], grid->program_id[2]);
  auto problem = [&](int64_t i) {
    const T* a0 = a.aligned + a.offset + i * a_batch_stride + rows.begin * a.strides[1];
    const T* b0 = b.aligned + b.offset + i * b_batch_stride + cols.begin * b.strides[2];
    T* c0 = c.aligned + c.offset + i * c.strides[0] + rows.begin * c.strides[1] +
            cols.begin * c.strides[2];
    return Problem<T>{rows.end - rows.begin, cols.end - cols.begin, k,
                      View<T>{a0, a.strides[1], a.strides[2]},
                      View<T>{b0, b.strides[1], b.strides[2]}, c0, c.strides[1], c.strides[2],
                      alpha, beta};
  };
  if (mats.begin == mats.end) return;
  // A convolution's kernel is one A for the images of the batch.
  if (a_batch_stride == 0)
    return gemmSharedA(problem(mats.begin),
                       SharedABatch{mats.end - mats.begin, b_batch_stride, c.strides[0]});
  for (int64_t i = mats.begin; i < mats.end; ++i) gemm(problem(i));
}

/// A float64 or integer program: its share of rows, columns and batch, as
/// gemmProgram splits them (any grid is correct).
template <typename T>
void wideGemmProgram(void* const* args, const maia_grid_t* grid) {
  using Scalar = typename Wide<T>::Scalar;
  using Acc = typename Wide<T>::Acc;
  const auto& a = maia_kernel::memref<T, 3>(args, 0);
  const auto& b = maia_kernel::memref<T, 3>(args, 1);
  const auto& c = maia_kernel::memref<T, 3>(args, 2);
  const Acc alpha = static_cast<Acc>(maia_kernel::scalar<Scalar>(args, 3));
  const Acc beta = static_cast<Acc>(maia_kernel::scalar<Scalar>(args, 4));
  const int64_t batch = c.sizes[0], m = c.sizes[1], n = c.sizes[2], k = a.sizes[2];
  const auto [a_batch_stride, b_batch_stride] = checkedBatchStrides(a, b, c);
  constexpr int64_t kRowUnit = 4, kColUnit = 64;
  Range rows = split(m, kRowUnit, grid->num_programs[0], grid->program_id[0]);
  Range cols = split(n, kColUnit, grid->num_programs[1], grid->program_id[1]);
  Range mats = split(batch, 1, grid->num_programs[2], grid->program_id[2]);
  for (int64_t i = mats.begin; i < mats.end; ++i) {
    wideGemm(WideProblem<T>{
        rows.end - rows.begin, cols.end - cols.begin, k,
        a.aligned + a.offset + i * a_batch_stride + rows.begin * a.strides[1], a.strides[1],
        a.strides[2],
        b.aligned + b.offset + i * b_batch_stride + cols.begin * b.strides[2], b.strides[1],
        b.strides[2],
        c.aligned + c.offset + i * c.strides[0] + rows.begin * c.strides[1] +
            cols.begin * c.strides[2],
        c.strides[1], c.strides[2], alpha, beta});
  }
}

}  // namespace
}  // namespace maia_gemm

// Each entry point runs its dtype's program.
#define MAIA_GEMM_KERNEL(symbol, program)                           \
  MAIA_KERNEL symbol(void* const* args, const maia_grid_t* grid) { \
    maia_gemm::program(args, grid);                                 \
  }
MAIA_GEMM_KERNEL(gemm_f32, gemmProgram<float>)
MAIA_GEMM_KERNEL(gemm_bf16, gemmProgram<maia_gemm::bf16>)
MAIA_GEMM_KERNEL(gemm_f16, gemmProgram<maia_gemm::f16>)
MAIA_GEMM_KERNEL(gemm_f64, wideGemmProgram<double>)
MAIA_GEMM_KERNEL(gemm_i64, wideGemmProgram<int64_t>)
MAIA_GEMM_KERNEL(gemm_i32, wideGemmProgram<int32_t>)
MAIA_GEMM_KERNEL(gemm_i16, wideGemmProgram<int16_t>)
MAIA_GEMM_KERNEL(gemm_i8, wideGemmProgram<int8_t>)
MAIA_GEMM_KERNEL(gemm_u8, wideGemmProgram<uint8_t>)
#undef MAIA_GEMM_KERNEL
