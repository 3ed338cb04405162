# A linear layer's product and its pointwise epilogue are one GEMM template
# kernel: in a loop over blocks of C, the micro-kernel computes a block,
# then the epilogue (bias, gelu, residual add) runs on the same block and
# stores the result.
# RUN: %python %s | FileCheck %s
import torch
import torch.nn.functional as F
from lowering import show


def linear_bias_gelu(x, w, b):
    return F.gelu(F.linear(x, w, b))


def linear_gelu_residual(x, w, b, r):
    return F.gelu(F.linear(x, w, b)) + r


x, w, b = torch.randn(37, 45), torch.randn(29, 45), torch.randn(29)
show(linear_bias_gelu, x, w, b, atol=1e-4, rtol=1e-4)
# CHECK-LABEL: // linear_bias_gelu: 1 kernels
# CHECK: func.func private @maia_ukernel_gemm_f32(memref<?xf32>, index, index, index,
# CHECK: func.func @maia_gemm_fused_{{.*}}(%in_ptr0: memref<?xf32>, %in_ptr1: memref<?xf32>, %in_ptr2: memref<?xf32>, %out_ptr0: memref<?xf32>, %out_ptr1: memref<?xf32>)
# CHECK: scf.for %cb = %x_chunk_start to %x_chunk_stop step %cb_step
# CHECK: scf.for %rb = %x_row_start to %x_row_stop step %rb_step
# CHECK: %reuse_b = arith.subi %rb, %x_row_start
# CHECK: func.call @maia_ukernel_gemm_f32(%in_ptr{{[0-9]}}, {{.*}}, %out_ptr0, {{.*}}, %rb, %rb_rows, %cb, %cb_cols, %reuse_b)
# CHECK: scf.for %row0 = %rb to %rb_stop
# CHECK: scf.for %lane0 = %cb to %cb_stop
# CHECK: %[[C:.*]] = vector.maskedload %out_ptr0
# CHECK: %[[BIAS:.*]] = vector.maskedload %in_ptr0[%lane0]
# CHECK: arith.addf %[[C]], %[[BIAS]]
# CHECK: math.erf
# CHECK: vector.maskedstore %out_ptr1
# CHECK-NOT: func.func

show(linear_gelu_residual, x, w, b, torch.randn(37, 29), atol=1e-4, rtol=1e-4)
# CHECK-LABEL: // linear_gelu_residual: 1 kernels
# CHECK: func.call @maia_ukernel_gemm_f32
# CHECK: math.erf
# CHECK: %[[RES:.*]] = vector.maskedload %in_ptr1
# CHECK: arith.addf %{{.*}}, %[[RES]]
# CHECK: vector.maskedstore %out_ptr1
# CHECK-NOT: func.func
