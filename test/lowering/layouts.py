# Broadcast and non-contiguous inputs: a broadcast row vector is a scalar
# load per lane group or a contiguous load; a transposed input is a strided
# gather; both keep the output store contiguous.
# RUN: %python %s | FileCheck %s
import torch
from lowering import show


def add_column(x, column):
    return x + column[:, None]


def add_transposed(x, y):
    return x + y.t()


show(add_column, torch.randn(37, 53), torch.randn(37))
# CHECK-LABEL: // add_column: 1 kernels
# CHECK: vector.maskedload %in_ptr0
# CHECK: %[[S:tmp[0-9]+]] = memref.load %in_ptr1
# CHECK: vector.broadcast %[[S]] : f32 to vector<16xf32>
# CHECK: vector.maskedstore %out_ptr0

show(add_transposed, torch.randn(37, 53), torch.randn(53, 37))
# CHECK-LABEL: // add_transposed: 1 kernels
# CHECK: vector.maskedload %in_ptr0
# CHECK: vector.gather %in_ptr1
# CHECK: vector.maskedstore %out_ptr0
