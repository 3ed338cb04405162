// RUN: maia-opt %s | maia-opt | FileCheck %s
// RUN: maia-opt %s --mlir-print-op-generic | maia-opt | FileCheck %s

// CHECK-LABEL: func.func @grid_queries
// CHECK-SAME: attributes {maia.kernel}
func.func @grid_queries(%out: memref<?x?xindex>) attributes {maia.kernel} {
  // CHECK: %[[PID0:.*]] = maia.program_id 0
  // CHECK: %[[PID2:.*]] = maia.program_id 2
  // CHECK: %[[NUM1:.*]] = maia.num_programs 1
  // CHECK: memref.store %[[NUM1]], %{{.*}}[%[[PID0]], %[[PID2]]]
  %p0 = maia.program_id 0
  %p2 = maia.program_id 2
  %n1 = maia.num_programs 1
  memref.store %n1, %out[%p0, %p2] : memref<?x?xindex>
  return
}

// Every supported argument type.
// CHECK-LABEL: func.func @all_argument_types
// CHECK-SAME: maia.grid_rank = 2
func.func @all_argument_types(
    %a: memref<4xi1>, %b: memref<?xi8>, %c: memref<?xi16>, %d: memref<?xi32>,
    %e: memref<?xi64>, %f: memref<?xui8>, %g: memref<?xf16>, %h: memref<?xbf16>,
    %i: memref<?x?xf32, strided<[?, 1], offset: ?>>, %j: memref<f64>,
    %k: memref<?xindex>, %l: memref<2x3x4x5x6x7x8x9xf32>,
    %s1: i1, %s8: i8, %s16: i16, %s32: i32, %s64: i64, %sh: f16, %sb: bf16,
    %sf: f32, %sd: f64, %si: index) attributes {maia.kernel, maia.grid_rank = 2} {
  %p1 = maia.program_id 1
  return
}

// A kernel may call private helpers.
// CHECK-LABEL: func.func private @helper
func.func private @helper(%x: f32) -> f32 {
  return %x : f32
}

// erfc on every float type the op takes, scalars and vectors.
// CHECK-LABEL: func.func @erfc
// CHECK: maia.erfc %{{.*}} : vector<16xf32>
// CHECK: maia.erfc %{{.*}} : bf16
// CHECK: maia.erfc %{{.*}} : vector<8xf16>
func.func @erfc(%v: vector<16xf32>, %b: bf16, %h: vector<8xf16>)
    -> (vector<16xf32>, bf16, vector<8xf16>) {
  %0 = maia.erfc %v : vector<16xf32>
  %1 = maia.erfc %b : bf16
  %2 = maia.erfc %h : vector<8xf16>
  return %0, %1, %2 : vector<16xf32>, bf16, vector<8xf16>
}
