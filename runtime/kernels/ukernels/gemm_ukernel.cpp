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
// Packed B across calls: a template kernel walks a program's columns in
// blocks and, per column block, its rows in blocks, so consecutive calls of
// a program often read the same panel of B. A caller that knows B has not
// changed since its previous call on this thread (same kernel launch, same
// program) passes reuse_b != 0, and the fp32 entry point then skips packing
// B if that call packed the same columns of the same view; the eager GEMM
// packs B once per program for all rows too. bf16/f16 always pack.
//
// ABI: what MLIR's func-to-LLVM lowering passes for
//   func.func private @maia_ukernel_gemm_f32(
//       memref<?xf32>, index, index, index,   // A, a_offset, a_rs, a_cs
//       memref<?xf32>, index, index, index,   // B ...
//       memref<?xf32>, index, index, index,   // C ...
//       index, index, index, index, index,    // depth, row0, rows, col0, cols
//       index)                                // reuse_b
// a memref<?xT> being expanded to (allocated, aligned, offset, size, stride).
// The symbols are hidden: each kernel binary holds its own copy and exports
// only its kernels.
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "element.h"
#include "gemm.h"

namespace {

template <typename T>
struct FlatMemref {  // the expanded descriptor of a memref<?xT>
  const T* allocated;
  T* aligned;
  int64_t offset, size, stride;
};

/// Which block of which B the thread's packed panels hold.
struct PackedBKey {
  const float* b0 = nullptr;
  int64_t rs = 0, cs = 0, depth = -1, cols = -1;
  bool operator==(const PackedBKey&) const = default;
};

/// The fp32 blocked loop with every K block of B's column block packed up
/// front (kept for the next call), then the rows in blocks of kMC as in
/// runBlocked. Small products take the eager GEMM's own paths.
void gemmF32(const maia_gemm::Problem<float>& p, bool reuse_b) {
  using namespace maia_gemm;
  if (p.k == 0 || takesSmallMPath(p) || takesSmallMPath(transposed(p))) return gemm(p);
  static thread_local ScratchBuffer packed_b;
  static thread_local PackedBKey packed_key;
  const int64_t ncp = roundUp(p.n, kNR);
  const PackedBKey key{p.b.data, p.b.rs, p.b.cs, p.k, p.n};
  float* bp = packed_b.get(static_cast<size_t>(ncp * p.k));
  const int64_t kc_max = reductionBlock(p.k);
  if (!reuse_b || !(packed_key == key)) {
    packed_key = PackedBKey{};  // not valid while being overwritten
    for (int64_t pc = 0; pc < p.k; pc += kc_max)
      packB(View<float>{&p.b.at(pc, 0), p.b.rs, p.b.cs}, std::min(kc_max, p.k - pc), p.n,
            bp + pc * ncp);
    packed_key = key;
  }
  float* ap = threadScratch().a.get(static_cast<size_t>(kMC * kc_max));
  for (int64_t ic = 0; ic < p.m; ic += kMC) {
    const int64_t mc = std::min(kMC, p.m - ic);
    for (int64_t pc = 0; pc < p.k; pc += kc_max) {
      const int64_t kc = std::min(kc_max, p.k - pc);
      packA(View<float>{&p.a.at(ic, pc), p.a.rs, p.a.cs}, mc, kc, ap);
      macroKernel(mc, p.n, kc, ap, BPanels::packed(bp + pc * ncp, kc), p.c + ic * p.rsc,
                  p.rsc, p.csc, 1.0f, pc == 0 ? 0.0f : 1.0f);
    }
  }
}

template <typename T>
void gemmTile(FlatMemref<T> a, int64_t a_offset, int64_t a_rs, int64_t a_cs, FlatMemref<T> b,
              int64_t b_offset, int64_t b_rs, int64_t b_cs, FlatMemref<T> c, int64_t c_offset,
              int64_t c_rs, int64_t c_cs, int64_t depth, int64_t row0, int64_t rows,
              int64_t col0, int64_t cols, int64_t reuse_b) {
  using maia_gemm::View;
  if (rows <= 0 || cols <= 0) return;
  const T* a0 = a.aligned + a.offset + a_offset + row0 * a_rs;
  const T* b0 = b.aligned + b.offset + b_offset + col0 * b_cs;
  T* c0 = c.aligned + c.offset + c_offset + row0 * c_rs + col0 * c_cs;
  const maia_gemm::Problem<T> problem{rows, cols, depth, View<T>{a0, a_rs, a_cs},
                                      View<T>{b0, b_rs, b_cs}, c0, c_rs, c_cs, 1.0f, 0.0f};
  if constexpr (std::is_same_v<T, float>) {
    gemmF32(problem, reuse_b != 0);
  } else {
    maia_gemm::gemm(problem);
  }
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
      int64_t row0, int64_t rows, int64_t col0, int64_t cols, int64_t reuse_b) {         \
    gemmTile<T>({a_al, a_ptr, a_off, a_size, a_stride}, a_offset, a_rs, a_cs,            \
                {b_al, b_ptr, b_off, b_size, b_stride}, b_offset, b_rs, b_cs,            \
                {c_al, c_ptr, c_off, c_size, c_stride}, c_offset, c_rs, c_cs, depth, row0, \
                rows, col0, cols, reuse_b);                                              \
  }

MAIA_UKERNEL_GEMM(maia_ukernel_gemm_f32, float)
MAIA_UKERNEL_GEMM(maia_ukernel_gemm_bf16, maia_gemm::bf16)
MAIA_UKERNEL_GEMM(maia_ukernel_gemm_f16, maia_gemm::f16)
