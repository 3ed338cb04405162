# argmax keeps a value and a position per lane, then picks the first
# position holding the maximum across the lanes.
# RUN: %python %s | FileCheck %s
import torch
from lowering import show


def argmax(x):
    return x.argmax(dim=-1)


show(argmax, torch.randn(6, 50))
# CHECK-LABEL: // argmax: 1 kernels
# CHECK: func.func @maia_red_fused_argmax{{.*}}(%in_ptr0: memref<?xf32>, %out_ptr0: memref<?xi64>)
# CHECK: memref.alloca() : memref<vector<16xf32>>
# CHECK: memref.alloca() : memref<vector<16xi64>>
# CHECK: arith.cmpf ogt
# CHECK: arith.cmpf uno
# CHECK: vector.reduction <maximumf>
# CHECK: vector.reduction <minsi>, {{.*}} : vector<16xi64> into i64
# CHECK: memref.store {{.*}}, %out_ptr0[%x] : memref<?xi64>
