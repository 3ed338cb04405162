# A cat along the innermost dimension in pieces narrower than a vector
# (stack(..., dim=-1): interleaved rotary embeddings) writes each piece into
# its slice of the output with full-vector strided stores, the pieces in one
# kernel sharing their common work (cos and sin once); not a pointwise cat
# whose rows are 2 lanes wide, computed per row in scalars.
# A cat in wide pieces stays a pointwise cat: one contiguous store.
# RUN: %python %s | FileCheck %s
import torch
from lowering import show


def rotate_interleaved(x, angles):
    x1, x2 = x[..., 0::2], x[..., 1::2]
    cos, sin = angles.cos(), angles.sin()
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)


def cat_wide(x, y):
    return torch.cat((x * 2, y + 1), dim=-1)


show(rotate_interleaved, torch.randn(4, 37, 64), torch.randn(37, 32))
# CHECK-LABEL: // rotate_interleaved: 1 kernels
# CHECK: %[[COS:.*]] = math.cos %{{.*}} : vector<16xf32>
# CHECK: %[[SIN:.*]] = math.sin %{{.*}} : vector<16xf32>
# CHECK: vector.scatter %out_ptr0
# CHECK-NOT: math.cos
# CHECK: vector.scatter %out_ptr1
# CHECK-NOT: func.func

show(cat_wide, torch.randn(37, 40), torch.randn(37, 24))
# CHECK-LABEL: // cat_wide: 1 kernels
# CHECK: vector.maskedstore %out_ptr0
# CHECK-NOT: %out_ptr1
