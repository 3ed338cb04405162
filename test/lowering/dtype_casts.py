# Storage types vs compute types: bfloat16 and float16 load as themselves
# and compute in f32 (rounded where PyTorch rounds); bool is stored as bytes.
# RUN: %python %s | FileCheck %s
import torch
from lowering import show


def bf16_scale(x):
    return (x * 3.0).to(torch.float16)


def int_to_bool(x):
    return (x % 3) == 0


show(bf16_scale, torch.randn(100).to(torch.bfloat16), atol=1e-2, rtol=1e-2)
# CHECK-LABEL: // bf16_scale: 1 kernels
# CHECK: (%in_ptr0: memref<?xbf16>, %out_ptr0: memref<?xf16>)
# CHECK: vector.maskedload %in_ptr0{{.*}} into vector<16xbf16>
# CHECK: arith.extf {{.*}} : vector<16xbf16> to vector<16xf32>
# CHECK: arith.mulf {{.*}} : vector<16xf32>
# CHECK: arith.truncf {{.*}} : vector<16xf32> to vector<16xf16>
# CHECK: vector.maskedstore %out_ptr0{{.*}} vector<16xf16>

show(int_to_bool, torch.randint(-50, 50, (77,), dtype=torch.int32))
# CHECK-LABEL: // int_to_bool: 1 kernels
# CHECK: (%in_ptr0: memref<?xi32>, %out_ptr0: memref<?xi8>)
# CHECK: arith.remsi {{.*}} : vector<16xi32>
# CHECK: arith.cmpi eq, {{.*}} : vector<16xi32>
# CHECK: arith.extui {{.*}} : vector<16xi1> to vector<16xi8>
# CHECK: vector.maskedstore %out_ptr0{{.*}} vector<16xi8>
