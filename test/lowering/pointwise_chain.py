# A chain of pointwise ops becomes one kernel: contiguous masked vector loads,
# the ops on vector<16xf32>, one masked vector store; rows split over a 2-D grid.
# RUN: %python %s | FileCheck %s
import torch
from lowering import show


def chain(x, y):
    return ((x + y) * 2.0).relu().exp()


show(chain, torch.randn(64, 33), torch.randn(64, 33))
# CHECK-LABEL: // chain: 1 kernels
# CHECK: func.func @maia_poi_fused_{{.*}}(%in_ptr0: memref<?xf32>, %in_ptr1: memref<?xf32>, %out_ptr0: memref<?xf32>) attributes {maia.kernel, maia.grid_rank = 2}
# CHECK: maia.program_id 0
# CHECK: maia.program_id 1
# CHECK: scf.for %row{{[0-9]+}} =
# CHECK: scf.for %lane{{[0-9]+}} = {{.*}} step %[[VL:tmp[0-9]+]]
# CHECK: vector.create_mask
# CHECK: vector.maskedload %in_ptr0
# CHECK: vector.maskedload %in_ptr1
# CHECK: arith.addf {{.*}} : vector<16xf32>
# CHECK: arith.mulf {{.*}} : vector<16xf32>
# CHECK: arith.maximumf {{.*}} : vector<16xf32>
# CHECK: math.exp {{.*}} : vector<16xf32>
# CHECK: vector.maskedstore %out_ptr0
# CHECK-NOT: func.func
