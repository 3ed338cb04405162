# Indirect indexing: embedding rows are selected by loaded indices (uniform
# per row: contiguous vector loads at a computed base), gather's indices vary
# per lane (vector.gather). Out-of-range indices trap like a device assert.
# RUN: %python %s | FileCheck %s
import torch
import torch.nn.functional as F
from lowering import show


def embedding(ids, table):
    return F.embedding(ids, table)


def gather(x, index):
    return torch.gather(x, 1, index)


show(embedding, torch.randint(0, 50, (7, 9)), torch.randn(50, 32))
# CHECK-LABEL: // embedding: 1 kernels
# CHECK: func.func @maia_poi_fused_embedding{{.*}}(%in_ptr0: memref<?xi64>, %in_ptr1: memref<?xf32>, %out_ptr0: memref<?xf32>)
# CHECK: memref.load %in_ptr0
# CHECK: arith.index_cast
# CHECK: "llvm.intr.trap"()
# CHECK: vector.maskedload %in_ptr1
# CHECK: vector.maskedstore %out_ptr0

show(gather, torch.randn(10, 20), torch.randint(0, 20, (10, 5)))
# CHECK-LABEL: // gather: 1 kernels
# CHECK: vector.maskedload %in_ptr0{{.*}} vector<16xi64>
# CHECK: arith.index_cast {{.*}} : vector<16xi64> to vector<16xindex>
# CHECK: vector.reduction <or>
# CHECK: "llvm.intr.trap"()
# CHECK: vector.gather %in_ptr1
