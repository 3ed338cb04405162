# A batched product and its pointwise epilogue are one GEMM template kernel:
# the program walks its rows batch by batch; per block of C the micro-kernel
# computes the block (operands at their batch's offset), then the epilogue
# (bias, gelu) runs on the same block and stores the result.
# RUN: %python %s | FileCheck %s
import torch
import torch.nn.functional as F
from lowering import show


def bmm_bias_gelu(a, b, bias):
    return F.gelu(torch.bmm(a, b) + bias)


show(bmm_bias_gelu, torch.randn(3, 37, 45), torch.randn(3, 45, 29), torch.randn(29),
     atol=1e-4, rtol=1e-4)
# CHECK-LABEL: // bmm_bias_gelu: 1 kernels
# CHECK: func.func private @maia_ukernel_gemm_f32(memref<?xf32>, index, index, index,
# CHECK: func.func @maia_gemm_fused_{{.*}}(%in_ptr0: memref<?xf32>, %in_ptr1: memref<?xf32>, %in_ptr2: memref<?xf32>, %out_ptr0: memref<?xf32>, %out_ptr1: memref<?xf32>)
# CHECK: scf.for %bt = %bt_first to %bt_last
# CHECK: %bt_off_a = arith.addi
# CHECK: %bt_off_b = arith.addi
# CHECK: %bt_off_c = arith.addi
# CHECK: scf.for %cb = %x_chunk_start to %x_chunk_stop step %cb_step
# CHECK: scf.for %rb = %bt_start to %bt_stop step %rb_step
# CHECK: %reuse_b = arith.subi %rb, %bt_start
# CHECK: %rb_local = arith.subi %rb, %bt_row0
# CHECK: func.call @maia_ukernel_gemm_f32(%in_ptr{{[0-9]}}, %bt_off_a, {{.*}}, %in_ptr{{[0-9]}}, %bt_off_b, {{.*}}, %out_ptr0, %bt_off_c, {{.*}}, %rb_local, %rb_rows, %cb, %cb_cols, %reuse_b)
# CHECK: scf.for %row0 = %rb to %rb_stop
# CHECK: scf.for %lane0 = %cb to %cb_stop
# CHECK: %[[C:.*]] = vector.maskedload %out_ptr0
# CHECK: %[[BIAS:.*]] = vector.maskedload %in_ptr0[%lane0]
# CHECK: arith.addf %[[C]], %[[BIAS]]
# CHECK: math.erf
# CHECK: vector.maskedstore %out_ptr1
# CHECK-NOT: func.func
