"""OpInfo sweep of the native elementwise and matrix-product operators: PyTorch's own sample
inputs (torch.testing._internal.common_methods_invocations.op_db) run on maia
and on the CPU, compared with torch.testing.assert_close, for every dtype
maia supports; gradients for the differentiable ones in float32/float64.
Each (op, dtype) must run without the host fallback, except the matrix
products in dtypes without a device GEMM, whose host path is counted."""

import pytest
import torch
from torch.testing._internal.common_methods_invocations import op_db

from opinfo_support import (LOW_PRECISION_TOLERANCES, MATMUL_TOLERANCES, cases,
                            check_forward_samples, check_gradient_samples, forbid_fallback)

NATIVE = [
    "add", "sub", "mul", "div", "floor_divide", "maximum", "minimum", "pow",
    "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor",
    "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor", "neg", "abs", "exp", "log",
    "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "nn.functional.relu",
    "nn.functional.silu", "nn.functional.gelu", "erf", "reciprocal", "where",
    "mm", "addmm", "bmm", "baddbmm", "matmul", "nn.functional.linear", "dot", "mv", "addmv",
    "clamp", "masked_fill", "ceil", "floor", "trunc", "round", "addcmul", "addcdiv", "lerp",
    "log2", "log10", "sgn", "sign", "clamp_min", "clamp_max",
    "remainder", "fmod", "fmax", "fmin", "atan2", "logaddexp", "xlogy", "rsub", "isnan",
    "signbit", "bitwise_not", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh",
    "atanh", "lgamma", "digamma",
]
# Samples whose CPU result depends on behaviour maia does not reproduce, with why.
UNSUPPORTED_SAMPLE_KWARGS = {"out", "dtype"}

OPS = [op for op in op_db if op.name in NATIVE and op.variant_test_name in ("", "no_rounding_mode",
                                                                          "trunc_rounding",
                                                                          "floor_rounding")]


# Low-precision results may differ from the CPU's by one rounding step (the
# CPU contracts a + alpha * b into an FMA, for instance).
TOLERANCES = LOW_PRECISION_TOLERANCES
# Matrix products (MATMUL_TOLERANCES) in every dtype run on the device GEMM.
MATMUL_OPS = {"mm", "addmm", "bmm", "baddbmm", "matmul", "nn.functional.linear", "dot", "mv",
              "addmv"}


def check_fallbacks(op, dtype):
    return lambda before, sample: forbid_fallback(before, op.name)


def tolerances(op, dtype):
    table = MATMUL_TOLERANCES if op.name in MATMUL_OPS else TOLERANCES
    return table.get(dtype, {})


@pytest.mark.parametrize("op,dtype", list(cases(OPS)))
def test_matches_cpu(op, dtype):
    check_forward_samples(op, dtype, UNSUPPORTED_SAMPLE_KWARGS, tolerances(op, dtype),
                          check_fallbacks(op, dtype))


GRAD_OPS = [op for op in OPS if op.supports_autograd]


@pytest.mark.parametrize("op", GRAD_OPS, ids=lambda op: f"{op.name}.{op.variant_test_name}")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_gradients_match_cpu(op, dtype):
    check_gradient_samples(op, dtype, UNSUPPORTED_SAMPLE_KWARGS, upstream=torch.ones_like,
                           **tolerances(op, dtype))
