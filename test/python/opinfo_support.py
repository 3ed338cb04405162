"""What the OpInfo sweeps (test_opinfo_*.py) share: the dtypes maia supports,
moving sample arguments to maia, parametrizing (op, dtype) cases, and
checking that an operation did not fall back to the host."""

import pytest
import torch

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32,
          torch.int16, torch.int8, torch.uint8, torch.bool]

# Low-precision results may differ from the CPU's by a rounding step: the
# tolerances of PyTorch's own device-vs-CPU comparison (test_ops.py
# test_compare_cpu) for float16, one bfloat16 ulp (2^-7 relative) for bfloat16.
LOW_PRECISION_TOLERANCES = {torch.float16: dict(atol=1e-3, rtol=1e-3),
                            torch.bfloat16: dict(atol=1.6e-2, rtol=1.6e-2)}


def to_maia(x):
    return x.to("maia") if isinstance(x, torch.Tensor) else x


def cases(ops, dtypes=DTYPES):
    """pytest params (op, dtype) for each dtype an op supports on the CPU."""
    for op in ops:
        supported = op.supported_dtypes("cpu")
        for dtype in dtypes:
            if dtype in supported:
                yield pytest.param(op, dtype, id=f"{op.name}.{op.variant_test_name}-{dtype}")


def new_fallbacks(before):
    """Operators whose fallback count grew since the counts `before`."""
    after = torch.maia.fallback_counts()
    return {k: v for k, v in after.items() if v > before.get(k, 0)}


def forbid_fallback(before, what):
    grew = new_fallbacks(before)
    assert not grew, f"{what} fell back to the host for: {grew}"
