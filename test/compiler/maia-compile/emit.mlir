// Every --emit stage, stdin, determinism, options and --time.
// RUN: maia-compile %s --emit=mlir-lowered | FileCheck %s --check-prefix=MLIR
// RUN: maia-compile %s --emit=llvm -o - | FileCheck %s --check-prefix=LLVM
// RUN: maia-compile %s --emit=asm -o - | FileCheck %s --check-prefix=ASM
// RUN: maia-compile %s --emit=obj -o %t.o
// RUN: llvm-readelf -h -s %t.o | FileCheck %s --check-prefix=OBJ
// RUN: maia-compile %s -o %t.maiabin
// RUN: llvm-readelf -h -l -S --dyn-syms -W %t.maiabin | FileCheck %s --check-prefix=ELF
// RUN: maia-compile %s -o %t.again.maiabin
// RUN: cmp %t.maiabin %t.again.maiabin
// RUN: maia-compile - -o %t.stdin.maiabin < %s
// RUN: maia-compile --inspect %t.stdin.maiabin | FileCheck %s --check-prefix=STDIN
// RUN: maia-compile %s -O0 --target-cpu=x86-64-v3 -o %t.v3.maiabin
// RUN: maia-compile --inspect %t.v3.maiabin | FileCheck %s --check-prefix=V3
// RUN: maia-compile %s -o %t.maiabin --time 2>&1 | FileCheck %s --check-prefix=TIME

// MLIR: llvm.func @scale(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr)
// MLIR-NOT: maia.

// LLVM: @maia_metadata = {{.*}}constant [{{[0-9]+}} x i8] c"{\22format\22:\22maia-kernel-binary\22,\22format_version\22:1,{{.*}}\00", section ".maia.meta", align 1
// LLVM: define void @scale(ptr {{.*}}, ptr {{.*}})
// LLVM: <16 x float>

// ASM: scale:
// ASM: zmm
// ASM: .section .maia.meta

// OBJ: Type: REL
// OBJ-DAG: GLOBAL DEFAULT {{.*}} scale
// OBJ-DAG: GLOBAL DEFAULT {{.*}} maia_metadata

// ELF: Type: DYN (Shared object file)
// ELF: Machine: Advanced Micro Devices X86-64
// ELF: .maia.meta PROGBITS
// ELF: GNU_STACK {{.*}} RW 0x
// ELF-DAG: FUNC GLOBAL DEFAULT {{.*}} scale
// ELF-DAG: OBJECT GLOBAL DEFAULT {{.*}} maia_metadata

// V3: "name": "scale"
// V3: "cpu": "x86-64-v3"
// V3-NOT: "avx512f"
// V3: "avx2"
// V3-NOT: "avx512f"

// STDIN: "name": "scale"

// TIME: time: parse
// TIME-NEXT: time: lower
// TIME-NEXT: time: translate
// TIME-NEXT: time: optimize
// TIME-NEXT: time: codegen
// TIME-NEXT: time: link
// TIME-NEXT: time: total

func.func @scale(%x: memref<?xf32>, %s: f32) attributes {maia.kernel} {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %pad = arith.constant 0.0 : f32
  %n = memref.dim %x, %c0 : memref<?xf32>
  %vs = vector.broadcast %s : f32 to vector<16xf32>
  scf.for %i = %c0 to %n step %c16 {
    %v = vector.transfer_read %x[%i], %pad : memref<?xf32>, vector<16xf32>
    %r = arith.mulf %v, %vs : vector<16xf32>
    vector.transfer_write %r, %x[%i] : vector<16xf32>, memref<?xf32>
  }
  return
}
