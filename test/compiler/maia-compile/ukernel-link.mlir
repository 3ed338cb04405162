// A kernel calling a micro-kernel of runtime/kernels/ukernels links against
// the library's archive (found beside libMaiaCompiler, or in
// MAIA_KERNEL_DIR): the binary defines the micro-kernel, hidden, and
// exports only the kernel.
// RUN: maia-compile %s -o %t.maiabin
// RUN: llvm-nm --defined-only %t.maiabin | FileCheck %s --check-prefix=DEFINED
// RUN: llvm-nm -D --defined-only %t.maiabin | FileCheck %s --check-prefix=EXPORTED
// The call passes each memref as its expanded descriptor.
// RUN: maia-compile %s --emit=llvm -o - | FileCheck %s --check-prefix=CALL
// Without the library, the link fails saying where it looked.
// RUN: env MAIA_KERNEL_DIR=%t.nowhere not maia-compile %s -o %t.fail.maiabin 2>&1 \
// RUN:   | FileCheck %s --check-prefix=MISSING

// DEFINED: t maia_ukernel_gemm_f32
// EXPORTED-NOT: maia_ukernel
// EXPORTED: T gemm_tile
// EXPORTED-NOT: maia_ukernel
// CALL: call void @maia_ukernel_gemm_f32(ptr %{{.*}}, ptr %{{.*}}, i64 %{{.*}}, i64 %{{.*}}, i64 %{{.*}}, i64
// MISSING: undefined symbol: maia_ukernel_gemm_f32
// MISSING: the kernel calls a micro-kernel, but the micro-kernel library {{.*}}nowhere/libmaia_ukernels_v{{[34]}}.a does not exist

func.func private @maia_ukernel_gemm_f32(memref<?xf32>, index, index, index,
                                         memref<?xf32>, index, index, index,
                                         memref<?xf32>, index, index, index,
                                         index, index, index, index, index, index)

func.func @gemm_tile(%a: memref<?xf32>, %b: memref<?xf32>, %c: memref<?xf32>,
                     %m: index, %n: index, %k: index) attributes {maia.kernel} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  func.call @maia_ukernel_gemm_f32(%a, %c0, %k, %c1, %b, %c0, %n, %c1,
                                   %c, %c0, %n, %c1, %k, %c0, %m, %c0, %n, %c0)
      : (memref<?xf32>, index, index, index, memref<?xf32>, index, index, index,
         memref<?xf32>, index, index, index, index, index, index, index, index, index) -> ()
  return
}
