// --inspect validates a binary and prints its metadata.
// RUN: maia-compile %s -o %t.maiabin
// RUN: maia-compile --inspect %t.maiabin | FileCheck %s
// Corrupt or truncated binaries are diagnosed, never a crash.
// RUN: not maia-compile --inspect %S/Inputs/truncated.maiabin 2>&1 | FileCheck %s --check-prefix=TRUNC
// RUN: not maia-compile --inspect %S/Inputs/text.maiabin 2>&1 | FileCheck %s --check-prefix=TEXT
// RUN: not maia-compile --inspect %t.missing 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not maia-compile --inspect %S/inspect.mlir 2>&1 | FileCheck %s --check-prefix=TEXT

// CHECK: "compiler": "maia-compile
// CHECK: "format": "maia-kernel-binary",
// CHECK: "format_version": 1,
// CHECK: "kernels": [
// CHECK: "args": [
// CHECK:   "dtype": "f32",
// CHECK:   "kind": "memref",
// CHECK:   "rank": 2,
// CHECK:   "strides": [
// CHECK-NEXT: null,
// CHECK-NEXT: 1
// CHECK:   "dtype": "i64",
// CHECK:   "kind": "memref",
// CHECK:   "strides": [
// CHECK-NEXT: 12,
// CHECK-NEXT: 4,
// CHECK-NEXT: 1
// CHECK:   "dtype": "index",
// CHECK-NEXT: "kind": "scalar"
// CHECK: "grid_rank": 2,
// CHECK-NEXT: "name": "two_d",
// CHECK-NEXT: "symbol": "two_d"
// CHECK: "grid_rank": 3,
// CHECK-NEXT: "name": "explicit_rank",
// CHECK: "target": {
// CHECK-NEXT: "cpu": "{{.+}}",
// CHECK-NEXT: "features": [

// TRUNC: error: {{.*}}truncated.maiabin: not a valid ELF file
// TEXT: error: {{.*}}: not a valid ELF file
// MISSING: error: cannot read

func.func @two_d(%x: memref<?x?xf32, strided<[?, 1], offset: ?>>,
                 %y: memref<2x3x4xi64>, %n: index) attributes {maia.kernel} {
  %p = maia.program_id 1
  return
}

func.func @explicit_rank() attributes {maia.kernel, maia.grid_rank = 3} {
  return
}
