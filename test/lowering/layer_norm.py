# layer_norm lowers to a Welford reduction: per-lane (mean, m2, weight), then
# a tree of lane merges, then the normalization loop with the affine epilogue.
# RUN: %python %s | FileCheck %s
import torch
import torch.nn.functional as F
from lowering import show


def layer_norm(x, weight, bias):
    return F.layer_norm(x, (48,), weight, bias)


show(layer_norm, torch.randn(5, 48), torch.randn(48), torch.randn(48), atol=1e-4, rtol=1e-4)
# CHECK-LABEL: // layer_norm: 1 kernels
# CHECK: func.func @maia_red_fused_native_layer_norm
# CHECK-COUNT-3: memref.alloca() : memref<vector<16xf32>>
# CHECK: scf.for %lane0 =
# CHECK: arith.divf {{.*}} : vector<16xf32>
# CHECK: vector.extract_strided_slice {{.*}} : vector<16xf32> to vector<8xf32>
# CHECK: vector.extract_strided_slice {{.*}} : vector<2xf32> to vector<1xf32>
# CHECK: vector.extract {{.*}}[0] : f32 from vector<1xf32>
# CHECK: scf.for %lane1 =
# CHECK: math.rsqrt {{.*}} : f32
# CHECK: vector.maskedstore %out_ptr
