# softmax: one kernel, three loops over the row (max, sum of exp, normalize),
# each reusing the previous reduction's scalar result.
# RUN: %python %s | FileCheck %s
import torch
from lowering import show


def softmax(x):
    return torch.softmax(x, dim=-1)


show(softmax, torch.randn(8, 300))
# CHECK-LABEL: // softmax: 1 kernels
# CHECK: func.func @maia_red_fused__softmax
# CHECK: scf.for %lane0 =
# CHECK: arith.maximumf {{.*}} : vector<16xf32>
# CHECK: %[[MAX:tmp[0-9]+]] = vector.reduction <maximumf>
# CHECK: scf.for %lane1 =
# CHECK: vector.broadcast %[[MAX]] : f32 to vector<16xf32>
# CHECK: math.exp
# CHECK: %[[SUM:tmp[0-9]+]] = vector.reduction <add>
# CHECK: scf.for %lane2 =
# CHECK: vector.broadcast %[[SUM]] : f32 to vector<16xf32>
# CHECK: arith.divf
# CHECK: vector.maskedstore %out_ptr{{[0-9]+}}
