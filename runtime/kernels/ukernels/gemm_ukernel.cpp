// libmaia_ukernels_{v4,v3}.a: the GEMM micro-kernel library that
// maia-compile links into compiled kernels which call it (IREE's ukernel
// pattern): the template kernels of maia_inductor keep the grid, the loop
// over row blocks and the fused epilogue in MLIR, and call this for the
// product itself, which MLIR's vector code does not reach (packing, a 14x32
// AVX-512 register tile). The code is the eager GEMM's (runtime/kernels/gemm,
// included read-only), so compiled and eager products agree bit for bit.
//
// Each entry point computes one tile of C = A @ B:
//
//   C[row0 + i, col0 + j] = sum_k A[row0 + i, k] * B[k, col0 + j]
//   for i < rows, j < cols, k < depth
//
// where element (i, k) of A is a[a_offset + i * a_rs + k * a_cs], likewise B
// and C (strides in elements, any of them transposed). C is overwritten, never
// read; bf16/f16 accumulate in fp32 over all of K and round once.
//
// ABI: what MLIR's func-to-LLVM lowering passes for
//   func.func private @maia_ukernel_gemm_f32(
//       memref<?xf32>, index, index, index,   // A, a_offset, a_rs, a_cs
//       memref<?xf32>, index, index, index,   // B ...
//       memref<?xf32>, index, index, index,   // C ...
//       index, index, index, index, index)    // depth, row0, rows, col0, cols
// a memref<?xT> being expanded to (allocated, aligned, offset, size, stride).
// The symbols are hidden: each kernel binary holds its own copy and exports
// only its kernels.
#include <cstdint>

#include "element.h"
#include "gemm.h"

namespace {

template <typename T>
struct FlatMemref {  // the expanded descriptor of a memref<?xT>
  const T* allocated;
  T* aligned;
  int64_t offset, size, stride;
};

template <typename T>
void gemmTile(FlatMemref<T> a, int64_t a_offset, int64_t a_rs, int64_t a_cs, FlatMemref<T> b,
              int64_t b_offset, int64_t b_rs, int64_t b_cs, FlatMemref<T> c, int64_t c_offset,
              int64_t c_rs, int64_t c_cs, int64_t depth, int64_t row0, int64_t rows,
              int64_t col0, int64_t cols) {
  using maia_gemm::View;
  if (rows <= 0 || cols <= 0) return;
  const T* a0 = a.aligned + a.offset + a_offset + row0 * a_rs;
  const T* b0 = b.aligned + b.offset + b_offset + col0 * b_cs;
  T* c0 = c.aligned + c.offset + c_offset + row0 * c_rs + col0 * c_cs;
  maia_gemm::gemm(maia_gemm::Problem<T>{rows, cols, depth, View<T>{a0, a_rs, a_cs},
                                        View<T>{b0, b_rs, b_cs}, c0, c_rs, c_cs, 1.0f, 0.0f});
}

}  // namespace

// One entry point per element type; the argument list is the expanded form
// of the MLIR declaration above.
#define MAIA_UKERNEL_GEMM(name, T)                                                       \
  extern "C" __attribute__((visibility("hidden"))) void name(                           \
      const T* a_al, T* a_ptr, int64_t a_off, int64_t a_size, int64_t a_stride,          \
      int64_t a_offset, int64_t a_rs, int64_t a_cs, const T* b_al, T* b_ptr,             \
      int64_t b_off, int64_t b_size, int64_t b_stride, int64_t b_offset, int64_t b_rs,   \
      int64_t b_cs, const T* c_al, T* c_ptr, int64_t c_off, int64_t c_size,              \
      int64_t c_stride, int64_t c_offset, int64_t c_rs, int64_t c_cs, int64_t depth,     \
      int64_t row0, int64_t rows, int64_t col0, int64_t cols) {                          \
    gemmTile<T>({a_al, a_ptr, a_off, a_size, a_stride}, a_offset, a_rs, a_cs,            \
                {b_al, b_ptr, b_off, b_size, b_stride}, b_offset, b_rs, b_cs,            \
                {c_al, c_ptr, c_off, c_size, c_stride}, c_offset, c_rs, c_cs, depth, row0, \
                rows, col0, cols);                                                       \
  }

MAIA_UKERNEL_GEMM(maia_ukernel_gemm_f32, float)
MAIA_UKERNEL_GEMM(maia_ukernel_gemm_bf16, maia_gemm::bf16)
MAIA_UKERNEL_GEMM(maia_ukernel_gemm_f16, maia_gemm::f16)
