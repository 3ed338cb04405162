/*
 * maia/kernel_abi.h - the kernel side of the MAIA kernel-binary ABI
 * (DESIGN section 5, docs/runtime.md "Kernels"), for kernels written in C or
 * C++ and built by the host compiler (cmake/MaiaKernelBinary.cmake). It is
 * the ABI maia-compile emits:
 *   void kernel(void* const* args, const maia_grid_t* grid);
 * args[i] points to an MLIR memref descriptor or to a scalar value.
 *
 * Kernel-side contract (docs/runtime.md, "Sticky errors"). A fault in kernel
 * code (SIGSEGV, SIGBUS, SIGILL, SIGFPE) becomes a sticky device error: the
 * driver's signal handler unwinds the core with siglongjmp, skipping every
 * kernel frame without running anything in them. So kernel code must
 *   - take no lock (a lock held across a fault is never released),
 *   - allocate nothing (an allocation live across a fault leaks, and a
 *     fault inside malloc leaves its arena locked),
 *   - rely on no destructor or cleanup (none runs for the skipped frames),
 *   - run no code at load or unload: the driver refuses static
 *     constructors and destructors and does not run the toolchain's
 *     initializers.
 * A fault while a core runs a kernel's entry point (the kernel, or any
 * library routine it calls) is the kernel's; a fault anywhere else (driver
 * copies and fills, host functions) crashes the process.
 */
#ifndef MAIA_KERNEL_ABI_H
#define MAIA_KERNEL_ABI_H

#include <maia/runtime.h>

#include <stdint.h>

/* The members of the MLIR memref descriptor of element type T and rank R,
 * in the order the driver lays them out. One definition for the C and the
 * C++ spelling of the type, so they cannot drift apart. */
#define MAIA_MEMREF_MEMBERS(T, R) \
  T* allocated;                   \
  T* aligned;                     \
  int64_t offset;                 \
  int64_t sizes[R];               \
  int64_t strides[R]

/* The memref descriptor type in C, e.g.
 *   typedef MAIA_MEMREF(float, 2) memref_f32_2d;
 *   const memref_f32_2d* x = (const memref_f32_2d*)args[0]; */
#define MAIA_MEMREF(T, R)      \
  struct {                     \
    MAIA_MEMREF_MEMBERS(T, R); \
  }

#ifdef __cplusplus
#define MAIA_KERNEL_ABI_EXTERN_C extern "C"
#else
#define MAIA_KERNEL_ABI_EXTERN_C
#endif

/* Declares an entry point: unmangled and exported (kernel binaries are built
 * with hidden visibility, so nothing else is). */
#define MAIA_KERNEL MAIA_KERNEL_ABI_EXTERN_C __attribute__((visibility("default"))) void

/* Embeds the binary's metadata JSON: exported as maia_metadata and placed in
 * section .maia.meta, where the loader reads it before mapping code. The
 * product kernel binaries get theirs from runtime/kernels/kernel_binary_gen.py
 * (maia_add_generated_kernel_binary); a hand-written literal is for test
 * binaries whose metadata is what they test. */
#define MAIA_METADATA(json)                                             \
  MAIA_KERNEL_ABI_EXTERN_C __attribute__((visibility("default"), used, \
                                          section(".maia.meta")))      \
  const char maia_metadata[] = json

#ifdef __cplusplus

namespace maia_kernel {

/// The MLIR memref descriptor for rank R.
template <typename T, int R>
struct MemRef {
  MAIA_MEMREF_MEMBERS(T, R);

  T& at(int64_t i) const { return aligned[offset + i * strides[0]]; }
  T& at(int64_t i, int64_t j) const {
    return aligned[offset + i * strides[0] + j * strides[1]];
  }
};

template <typename T, int R>
const MemRef<T, R>& memref(void* const* args, int index) {
  return *static_cast<const MemRef<T, R>*>(args[index]);
}

template <typename T>
T scalar(void* const* args, int index) {
  return *static_cast<const T*>(args[index]);
}

inline int64_t linearProgramId(const maia_grid_t* g) {
  return g->program_id[0] +
         g->num_programs[0] * (g->program_id[1] + g->num_programs[1] * g->program_id[2]);
}

inline int64_t numPrograms(const maia_grid_t* g) {
  return g->num_programs[0] * g->num_programs[1] * g->num_programs[2];
}

/// The contiguous slice [begin, end) of n elements that this program owns.
struct Slice {
  int64_t begin, end;
};
inline Slice programSlice(const maia_grid_t* g, int64_t n) {
  int64_t p = linearProgramId(g), count = numPrograms(g);
  return {n * p / count, n * (p + 1) / count};
}

}  // namespace maia_kernel

#endif /* __cplusplus */

#endif /* MAIA_KERNEL_ABI_H */
