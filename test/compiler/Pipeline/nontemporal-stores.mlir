// A vector.store {nontemporal = true} reaches LLVM IR as a 64-byte aligned
// !nontemporal store behind an alignment test, and becomes vmovntps on
// AVX-512 and on AVX2 targets (never the scalar movnti an under-aligned
// nontemporal store would become). The ordinary store stays ordinary.
// RUN: maia-compile %s --emit=llvm -o - | FileCheck %s --check-prefix=LLVM
// RUN: maia-compile %s --emit=asm --target-cpu=x86-64-v4 -o - | FileCheck %s --check-prefix=V4
// RUN: maia-compile %s --emit=asm --target-cpu=x86-64-v3 -o - | FileCheck %s --check-prefix=V3

// LLVM-LABEL: define void @copy_streaming(
// LLVM: and i64 %{{.*}}, 63
// LLVM: store <16 x float> %{{.*}}, ptr %{{.*}}, align 64, !nontemporal
// LLVM: store <16 x float> %{{.*}}, ptr %{{.*}}, align 4{{$}}
// LLVM-LABEL: define void @copy_ordinary(
// LLVM-NOT: !nontemporal
// LLVM: ret void

// V4-LABEL: copy_streaming:
// V4-NOT: movnti
// V4: vmovntps %zmm
// V4-NOT: movnti
// V4: sfence
// V4-LABEL: copy_ordinary:
// V4-NOT: vmovnt
// V4-NOT: sfence

// V3-LABEL: copy_streaming:
// V3-NOT: movnti
// V3: vmovntps %ymm
// V3-NEXT: vmovntps %ymm
// V3-NOT: movnti
// V3: sfence
// V3-LABEL: copy_ordinary:
// V3-NOT: vmovnt
// V3-NOT: sfence

func.func @copy_streaming(%x: memref<?xf32>, %y: memref<?xf32>) attributes {maia.kernel} {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  scf.for %i = %c0 to %n step %c16 {
    %v = vector.load %x[%i] : memref<?xf32>, vector<16xf32>
    vector.store %v, %y[%i] {nontemporal = true} : memref<?xf32>, vector<16xf32>
  }
  return
}

func.func @copy_ordinary(%x: memref<?xf32>, %y: memref<?xf32>) attributes {maia.kernel} {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  scf.for %i = %c0 to %n step %c16 {
    %v = vector.load %x[%i] : memref<?xf32>, vector<16xf32>
    vector.store %v, %y[%i] : memref<?xf32>, vector<16xf32>
  }
  return
}
