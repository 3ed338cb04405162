"""native_layer_norm and native_batch_norm on maia return their statistics
the way PyTorch's fake kernels for non-CPU devices say (float32 for half
types; evaluation-mode batch norm returns the running statistics, not empty
ones): eager maia, the fake kernel that torch.compile traces with, and
compiled maia agree on dtypes, shapes and values."""

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

TOLERANCE = {torch.float32: 1e-4, torch.float16: 2e-2, torch.bfloat16: 5e-2}


def check_conventions(op, args):
    on_maia = [a.to("maia") if isinstance(a, torch.Tensor) else a for a in args]
    eager = op(*on_maia)
    with FakeTensorMode() as mode:
        fake = op(*[mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in on_maia])
    torch._dynamo.reset()
    compiled = torch.compile(lambda *a: op(*a))(*on_maia)
    for index, (e, f, c) in enumerate(zip(eager, fake, compiled)):
        assert (e.dtype, e.shape) == (f.dtype, f.shape), (index, e.dtype, e.shape, f.dtype, f.shape)
        assert (c.dtype, c.shape) == (f.dtype, f.shape), (index, c.dtype, c.shape, f.dtype, f.shape)
        tol = TOLERANCE[args[0].dtype]
        torch.testing.assert_close(c.cpu(), e.cpu(), atol=tol, rtol=tol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_layer_norm_statistics(dtype):
    x = torch.randn(4, 6, 8).to(dtype)
    weight, bias = torch.randn(8).to(dtype), torch.randn(8).to(dtype)
    check_conventions(torch.ops.aten.native_layer_norm, (x, [8], weight, bias, 1e-5))


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_batch_norm_statistics(training, dtype):
    x = torch.randn(4, 3, 5, 5).to(dtype)
    weight, bias = torch.randn(3).to(dtype), torch.randn(3).to(dtype)
    mean, var = torch.randn(3).to(dtype), (torch.rand(3) + 0.5).to(dtype)
    check_conventions(torch.ops.aten._native_batch_norm_legit_no_training
                      if not training else
                      lambda *a: torch.ops.aten.native_batch_norm(*a, True, 0.1, 1e-5)[:3],
                      (x, weight, bias, mean, var) + (() if training else (0.1, 1e-5)))
