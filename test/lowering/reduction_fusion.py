# A reduction fuses its pointwise prologue (x * 2 + 1) and epilogue (sqrt):
# one kernel, per-lane accumulator, cross-lane reduction after the loop.
# RUN: %python %s | FileCheck %s
import torch
from lowering import show


def sum_of_squares(x):
    return ((x * 2.0 + 1.0) ** 2).sum(-1).sqrt()


show(sum_of_squares, torch.randn(16, 100), atol=1e-4, rtol=1e-4)
# CHECK-LABEL: // sum_of_squares: 1 kernels
# CHECK: func.func @maia_red_fused_{{.*}} attributes {maia.kernel, maia.grid_rank = 1}
# CHECK: %[[ACC:acc[0-9]+]] = memref.alloca() : memref<vector<16xf32>>
# CHECK: scf.for %x =
# CHECK: memref.store {{.*}}, %[[ACC]][]
# CHECK: scf.for %lane
# CHECK: vector.maskedload %in_ptr0
# CHECK: arith.mulf
# CHECK: arith.addf
# CHECK: memref.load %[[ACC]][]
# CHECK: arith.select %mask
# CHECK: memref.store {{.*}}, %[[ACC]][]
# CHECK: vector.reduction <add>, {{.*}} : vector<16xf32> into f32
# CHECK: math.sqrt {{.*}} : f32
# CHECK: memref.store {{.*}}, %out_ptr{{[0-9]+}}[%x]
# CHECK-NOT: func.func
