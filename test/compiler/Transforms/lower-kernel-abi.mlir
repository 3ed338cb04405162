// RUN: maia-opt %s -split-input-file -maia-lower-kernel-abi | FileCheck %s

// The entry point takes (void* const* args, const maia_grid_t* grid); each
// argument is loaded through args[i]; grid fields are loaded once at entry.
// CHECK-LABEL: func.func @k(
// CHECK-SAME: %[[ARGS:.*]]: !llvm.ptr, %[[GRID:.*]]: !llvm.ptr) {
// CHECK-NOT: maia.
// CHECK: %[[SLOT0:.*]] = llvm.getelementptr %[[ARGS]][0] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK: %[[PTR0:.*]] = llvm.load %[[SLOT0]] : !llvm.ptr -> !llvm.ptr
// CHECK: %[[DESC:.*]] = llvm.load %[[PTR0]] : !llvm.ptr -> !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
// CHECK: %[[X:.*]] = builtin.unrealized_conversion_cast %[[DESC]] : {{.*}} to memref<?x?xf32, strided<[?, 1], offset: ?>>
// A bool is a byte; non-zero is true.
// CHECK: %[[SLOT1:.*]] = llvm.getelementptr %[[ARGS]][1]
// CHECK: %[[PTR1:.*]] = llvm.load %[[SLOT1]]
// CHECK: %[[BYTE:.*]] = llvm.load %[[PTR1]] : !llvm.ptr -> i8
// CHECK: %[[FLAG:.*]] = arith.cmpi ne, %[[BYTE]]
// An index is a 64-bit integer.
// CHECK: %[[SLOT2:.*]] = llvm.getelementptr %[[ARGS]][2]
// CHECK: %[[PTR2:.*]] = llvm.load %[[SLOT2]]
// CHECK: %[[N64:.*]] = llvm.load %[[PTR2]] : !llvm.ptr -> i64
// CHECK: %[[N:.*]] = arith.index_cast %[[N64]] : i64 to index
// The unused argument 3 is not loaded.
// CHECK-NOT: llvm.getelementptr %[[ARGS]][3]
// CHECK: llvm.getelementptr %[[ARGS]][4]
// CHECK: llvm.load %{{.*}} : !llvm.ptr -> f16
// program_id[0], program_id[2], num_programs[2] (field 5), one load each.
// CHECK: %[[G0:.*]] = llvm.getelementptr %[[GRID]][0] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK: %[[PID0_64:.*]] = llvm.load %[[G0]] : !llvm.ptr -> i64
// CHECK: %[[PID0:.*]] = arith.index_cast %[[PID0_64]]
// CHECK: llvm.getelementptr %[[GRID]][2] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK: %[[PID2:.*]] = arith.index_cast
// CHECK: llvm.getelementptr %[[GRID]][5] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK: %[[NUM2:.*]] = arith.index_cast
// CHECK-NOT: llvm.getelementptr %[[GRID]]
// CHECK: scf.if %[[FLAG]]
// CHECK: memref.load %[[X]][%[[PID0]], %[[PID2]]]
// CHECK: memref.store %{{.*}}, %[[X]][%[[PID0]], %[[NUM2]]]
// CHECK: memref.store %{{.*}}, %[[X]][%[[N]], %[[N]]]
func.func @k(%x: memref<?x?xf32, strided<[?, 1], offset: ?>>, %flag: i1,
             %n: index, %unused: f64, %h: f16)
    attributes {maia.kernel, maia.grid_rank = 3} {
  %p0 = maia.program_id 0
  %p2 = maia.program_id 2
  %p0_again = maia.program_id 0
  %n2 = maia.num_programs 2
  scf.if %flag {
    %v = memref.load %x[%p0, %p2] : memref<?x?xf32, strided<[?, 1], offset: ?>>
    memref.store %v, %x[%p0_again, %n2] : memref<?x?xf32, strided<[?, 1], offset: ?>>
  }
  %e = arith.extf %h : f16 to f32
  memref.store %e, %x[%n, %n] : memref<?x?xf32, strided<[?, 1], offset: ?>>
  return
}

// -----

// Rank-0 memrefs have a three-field descriptor; helpers are left alone.
// CHECK-LABEL: func.func private @helper(%{{.*}}: f32) -> f32
// CHECK-LABEL: func.func @scalar_memref(
// CHECK-SAME: !llvm.ptr, %{{.*}}: !llvm.ptr)
// CHECK: llvm.load %{{.*}} : !llvm.ptr -> !llvm.struct<(ptr, ptr, i64)>
// CHECK: call @helper
func.func private @helper(%x: f32) -> f32 {
  return %x : f32
}
func.func @scalar_memref(%x: memref<f32>) attributes {maia.kernel} {
  %v = memref.load %x[] : memref<f32>
  %w = func.call @helper(%v) : (f32) -> f32
  memref.store %w, %x[] : memref<f32>
  return
}
