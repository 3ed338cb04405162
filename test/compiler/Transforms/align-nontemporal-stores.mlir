// RUN: maia-opt %s -split-input-file -maia-align-nontemporal-stores | FileCheck %s

// A 64-byte vector: an aligned address takes the streaming store with the
// vector's alignment, any other an ordinary store.
// CHECK-LABEL: llvm.func @vector_of_a_line(
// CHECK-SAME: %[[P:.*]]: !llvm.ptr, %[[V:.*]]: vector<16xf32>)
// CHECK: %[[A:.*]] = llvm.ptrtoint %[[P]] : !llvm.ptr to i64
// CHECK: %[[MASK:.*]] = llvm.mlir.constant(63 : i64) : i64
// CHECK: %[[ZERO:.*]] = llvm.mlir.constant(0 : i64) : i64
// CHECK: %[[LOW:.*]] = llvm.and %[[A]], %[[MASK]] : i64
// CHECK: %[[OK:.*]] = llvm.icmp "eq" %[[LOW]], %[[ZERO]] : i64
// CHECK: llvm.cond_br %[[OK]], ^[[STREAM:.*]], ^[[PLAIN:.*]]
// CHECK: ^[[STREAM]]:
// CHECK-NEXT: llvm.store %[[V]], %[[P]] {alignment = 64 : i64, nontemporal} : vector<16xf32>, !llvm.ptr
// CHECK-NEXT: llvm.br ^[[NEXT:.*]]
// CHECK: ^[[PLAIN]]:
// CHECK-NEXT: llvm.store %[[V]], %[[P]] {alignment = 4 : i64} : vector<16xf32>, !llvm.ptr
// CHECK-NEXT: llvm.br ^[[NEXT]]
// CHECK: ^[[NEXT]]:
// CHECK-NEXT: llvm.call_intrinsic "llvm.x86.sse.sfence"() : () -> ()
// CHECK-NEXT: llvm.return
llvm.func @vector_of_a_line(%p: !llvm.ptr, %v: vector<16xf32>) {
  llvm.store %v, %p {alignment = 4 : i64, nontemporal} : vector<16xf32>, !llvm.ptr
  llvm.return
}

// -----

// Wider than a line (split into 64-byte registers): aligned to 64. 16 bytes
// (one xmm register): aligned to 16.
// CHECK-LABEL: llvm.func @wide_and_narrow(
// CHECK: llvm.mlir.constant(63 : i64)
// CHECK: llvm.store {{.*}} {alignment = 64 : i64, nontemporal} : vector<16xf64>
// CHECK: llvm.store {{.*}} {alignment = 8 : i64} : vector<16xf64>
// CHECK: llvm.mlir.constant(15 : i64)
// CHECK: llvm.store {{.*}} {alignment = 16 : i64, nontemporal} : vector<16xi8>
// CHECK: llvm.store {{.*}} {alignment = 1 : i64} : vector<16xi8>
llvm.func @wide_and_narrow(%p: !llvm.ptr, %d: vector<16xf64>, %b: vector<16xi8>) {
  llvm.store %d, %p {alignment = 8 : i64, nontemporal} : vector<16xf64>, !llvm.ptr
  llvm.store %b, %p {alignment = 1 : i64, nontemporal} : vector<16xi8>, !llvm.ptr
  llvm.return
}

// -----

// Left alone: temporal stores, scalars, vectors narrower than a register or
// of a size that is not a power of two, and stores already aligned.
// CHECK-LABEL: llvm.func @untouched(
// CHECK-NOT: llvm.cond_br
// CHECK: llvm.store {{.*}} {alignment = 4 : i64} : vector<16xf32>
// CHECK: llvm.store {{.*}} {alignment = 4 : i64, nontemporal} : f32
// CHECK: llvm.store {{.*}} {alignment = 2 : i64, nontemporal} : vector<4xf16>
// CHECK: llvm.store {{.*}} {alignment = 4 : i64, nontemporal} : vector<12xf32>
// CHECK: llvm.store {{.*}} {alignment = 64 : i64, nontemporal} : vector<16xf32>
// CHECK-NOT: llvm.cond_br
// A function with streaming stores still ends with a store fence.
// CHECK: llvm.call_intrinsic "llvm.x86.sse.sfence"()
// CHECK-NEXT: llvm.return
llvm.func @untouched(%p: !llvm.ptr, %v: vector<16xf32>, %s: f32, %h: vector<4xf16>,
                     %t: vector<12xf32>) {
  llvm.store %v, %p {alignment = 4 : i64} : vector<16xf32>, !llvm.ptr
  llvm.store %s, %p {alignment = 4 : i64, nontemporal} : f32, !llvm.ptr
  llvm.store %h, %p {alignment = 2 : i64, nontemporal} : vector<4xf16>, !llvm.ptr
  llvm.store %t, %p {alignment = 4 : i64, nontemporal} : vector<12xf32>, !llvm.ptr
  llvm.store %v, %p {alignment = 64 : i64, nontemporal} : vector<16xf32>, !llvm.ptr
  llvm.return
}

// -----

// Temporal stores only: no fence. Every return of a function with
// streaming stores gets one.
// CHECK-LABEL: llvm.func @temporal_only(
// CHECK-NOT: sfence
// CHECK: llvm.return
llvm.func @temporal_only(%p: !llvm.ptr, %v: vector<16xf32>) {
  llvm.store %v, %p {alignment = 64 : i64} : vector<16xf32>, !llvm.ptr
  llvm.return
}

// CHECK-LABEL: llvm.func @two_returns(
// CHECK: llvm.cond_br
// CHECK: llvm.call_intrinsic "llvm.x86.sse.sfence"()
// CHECK-NEXT: llvm.return
// CHECK: llvm.call_intrinsic "llvm.x86.sse.sfence"()
// CHECK-NEXT: llvm.return
llvm.func @two_returns(%p: !llvm.ptr, %v: vector<16xf32>, %c: i1) {
  llvm.store %v, %p {alignment = 64 : i64, nontemporal} : vector<16xf32>, !llvm.ptr
  llvm.cond_br %c, ^a, ^b
^a:
  llvm.return
^b:
  llvm.return
}
