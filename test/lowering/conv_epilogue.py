# A convolution and its pointwise epilogue are one convolution template
# kernel: in a loop over blocks of the channels-last output (pixels x
# channels), the micro-kernel computes a block, then the epilogue (bias,
# relu, a residual add) runs on the same block and stores the result. The
# second, 1x1 convolution has no pointwise consumer: it stays the eager
# kernel's extern call (no MLIR kernel).
# RUN: %python %s | FileCheck %s
import torch
import torch.nn.functional as F
from lowering import show


def conv_bias_relu(x, w, b, w2):
    return F.conv2d(F.relu(F.conv2d(x, w, b, padding=1)), w2)


def conv_residual_relu(x, w, r, w2):
    return F.conv2d(F.relu(F.conv2d(x, w, stride=2, padding=1) + r), w2)


x, w, b, w2 = (torch.randn(2, 5, 9, 9), torch.randn(16, 5, 3, 3), torch.randn(16),
               torch.randn(4, 16, 1, 1))
show(conv_bias_relu, x, w, b, w2, atol=1e-4, rtol=1e-4)
# CHECK-LABEL: // conv_bias_relu: 1 kernels
# CHECK: func.func private @maia_ukernel_conv2d_f32(memref<?xf32>, index,
# CHECK: func.func @maia_conv_fused_relu_{{.*}}(%in_ptr0: memref<?xf32>, %in_ptr1: memref<?xf32>, %in_ptr2: memref<?xf32>, %out_ptr0: memref<?xf32>, %out_ptr1: memref<?xf32>)
# CHECK: scf.for %cb = %x_chunk_start to %x_chunk_stop step %cb_step
# CHECK: scf.for %rb = %x_row_start to %x_row_stop step %rb_step
# CHECK: func.call @maia_ukernel_conv2d_f32(%in_ptr{{[0-9]}}, {{.*}}, %out_ptr0, {{.*}}, %rb, %rb_rows, %cb, %cb_cols)
# CHECK: scf.for %row0 = %rb to %rb_stop
# CHECK: scf.for %lane0 = %cb to %cb_stop
# CHECK: %[[C:.*]] = vector.maskedload %out_ptr0
# CHECK: %[[BIAS:.*]] = vector.maskedload %in_ptr0[%lane0]
# CHECK: %[[SUM:.*]] = arith.addf %[[C]], %[[BIAS]]
# CHECK: arith.maximumf %[[SUM]]
# CHECK: vector.maskedstore %out_ptr1
# CHECK-NOT: func.func

show(conv_residual_relu, x, w, torch.randn(2, 16, 5, 5), w2, atol=1e-4, rtol=1e-4)
# The residual is NCHW (a graph input): gathered at the block's pixels.
# CHECK-LABEL: // conv_residual_relu: 1 kernels
# CHECK: func.func @maia_conv_fused_add_relu_
# CHECK: func.call @maia_ukernel_conv2d_f32
# CHECK: %[[C:.*]] = vector.maskedload %out_ptr0
# CHECK: %[[RES:.*]] = vector.gather %in_ptr0
# CHECK: %[[SUM:.*]] = arith.addf %[[C]], %[[RES]]
# CHECK: arith.maximumf %[[SUM]]
# CHECK: vector.maskedstore %out_ptr1
# CHECK-NOT: func.func
