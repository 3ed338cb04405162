# Reducing over a non-contiguous dimension (column sums: bias gradients, batch
# norm) puts the lanes on x: contiguous loads per row of the reduction, one
# accumulator per output element, a vector store of the results, no
# cross-lane reduction.
# RUN: %python %s | FileCheck %s
import torch
from lowering import show


def column_sums(x):
    return x.sum(0)


show(column_sums, torch.randn(37, 53), atol=1e-4, rtol=1e-4)
# CHECK-LABEL: // column_sums: 1 kernels
# CHECK: func.func @maia_red_fused_sum{{.*}} attributes {maia.kernel, maia.grid_rank = 2}
# CHECK: scf.for %lane0 =
# CHECK: scf.for %r0 = {{.*}} to %r_count
# CHECK: vector.maskedload %in_ptr0
# CHECK: arith.addf {{.*}} : vector<16xf32>
# CHECK-NOT: vector.reduction
# CHECK: vector.maskedstore %out_ptr0
