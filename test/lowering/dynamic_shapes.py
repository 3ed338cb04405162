# dynamic=True: sizes are kernel arguments (index scalars), and the same
# kernel serves other sizes without recompiling.
# RUN: %python %s | FileCheck %s
import torch
from lowering import show


def scaled_sum(x):
    return (x * 2.0).sum(-1)


show(scaled_sum, torch.randn(5, 48), dynamic=True)
# CHECK-LABEL: // scaled_sum: 1 kernels
# CHECK: func.func @maia_red_fused_{{.*}}(%in_ptr0: memref<?xf32>, %out_ptr0: memref<?xf32>, %ks0: index, %ks1: index)
# CHECK: arith.muli %pid, %ks{{[01]}} : index
# CHECK: vector.reduction <add>
