"""glu (F.glu, nn.GLU) and prelu (F.prelu, nn.PReLU) on maia, forward and
backward, against the CPU: every float dtype, any halving dim, one weight
or one per channel, 1-D to 4-D inputs, strided inputs, out=, NaN, tensors
split over several programs, gradcheck in float64; and that none of it
reaches the host fallback.

float32/float64 within assert_close's defaults (the CPU's exp is SLEEF's),
float16/bfloat16 within PyTorch's device-vs-CPU tolerances, compared in the
same dtype: maia rounds where the CPU rounds (glu's backward stores the
sigmoid in the dtype first)."""

import pytest
import torch
import torch.nn.functional as F

from opinfo_support import LOW_PRECISION_TOLERANCES

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


@pytest.fixture(autouse=True)
def no_fallback():
    torch.maia.reset_fallback_counts()
    yield
    hits = {name: n for name, n in torch.maia.fallback_counts().items()
            if "glu" in name or "prelu" in name}
    assert not hits, f"host fallbacks: {hits}"


def tolerances(dtype):
    return LOW_PRECISION_TOLERANCES.get(dtype, {})


def check(fn, inputs, grad_of=()):
    """fn's result on maia against the CPU's, and the gradients of the
    inputs at positions grad_of for the same random output gradient."""
    cpu = [t.detach().clone().requires_grad_(i in grad_of) for i, t in enumerate(inputs)]
    maia = [t.detach().to("maia").requires_grad_(i in grad_of) for i, t in enumerate(inputs)]
    expected, actual = fn(*cpu), fn(*maia)
    dtype = inputs[0].dtype
    torch.testing.assert_close(actual.cpu(), expected, equal_nan=True, **tolerances(dtype))
    assert actual.stride() == expected.stride()
    if grad_of:
        grad = torch.randn(expected.shape).to(dtype)
        expected.backward(grad)
        actual.backward(grad.to("maia"))
        for i in grad_of:
            torch.testing.assert_close(maia[i].grad.cpu(), cpu[i].grad, equal_nan=True,
                                       **tolerances(dtype))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_glu(dtype):
    for shape in [(6,), (4, 8), (3, 4, 10), (2, 6, 3, 4)]:
        x = torch.randn(shape).mul(3).to(dtype)
        for dim in range(-len(shape), len(shape)):
            if shape[dim] % 2 == 0:
                check(lambda t: F.glu(t, dim), [x], grad_of=(0,))


def test_glu_strided_nan_large_and_out():
    x = torch.randn(8, 6).t()  # halving dim 0 of a transposed tensor
    check(lambda t: F.glu(t, 0), [x], grad_of=(0,))
    x = torch.randn(4, 10)
    x[1, 2], x[2, 7] = float("nan"), float("inf")
    check(lambda t: F.glu(t, 1), [x], grad_of=(0,))
    check(lambda t: F.glu(t, -1), [torch.randn(128, 2048)], grad_of=(0,))
    out = torch.empty(0, device="maia")
    x = torch.randn(3, 8)
    torch._C._nn.glu(x.to("maia"), 1, out=out)
    torch.testing.assert_close(out.cpu(), F.glu(x, 1))
    assert F.glu(torch.randn(0, 4, device="maia")).shape == (0, 2)


def test_glu_errors_are_the_cpus():
    with pytest.raises(RuntimeError, match="Halving dimension must be even"):
        F.glu(torch.randn(3, 5, device="maia"))
    with pytest.raises(RuntimeError, match="glu_cpu.*not implemented for 'Long'"):
        F.glu(torch.ones(4, dtype=torch.int64, device="maia"))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_prelu(dtype):
    for shape in [(7,), (3, 5), (2, 4, 6), (2, 3, 4, 5)]:
        x = torch.randn(shape).mul(3).to(dtype)
        channels = shape[1] if len(shape) > 1 else 1
        for weight in (torch.tensor([0.25]), torch.rand(channels).sub(0.5)):
            check(F.prelu, [x, weight.to(dtype)], grad_of=(0, 1))


def test_prelu_strided_nan_and_large():
    x = torch.randn(2, 5, 6, 7).contiguous(memory_format=torch.channels_last)
    x[0, 1, 2, 3] = float("nan")
    check(F.prelu, [x, torch.rand(5)], grad_of=(0, 1))
    # several programs; float64, as the weight's gradient sums 102400 products
    # per channel (maia's sum and the CPU's add in different orders)
    check(F.prelu, [torch.randn(64, 16, 40, 40, dtype=torch.float64),
                    torch.rand(16, dtype=torch.float64)], grad_of=(0, 1))
    module = torch.nn.PReLU(3).to("maia")
    y = module(torch.randn(2, 3, 4, device="maia"))
    y.sum().backward()
    assert module.weight.grad.shape == (3,)


def test_prelu_errors_are_the_cpus():
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        torch.ops.aten._prelu_kernel(torch.ones(3, dtype=torch.int64, device="maia"),
                                     torch.ones(1, dtype=torch.int64, device="maia"))


def test_gradcheck_in_float64():
    x = torch.randn(3, 4, dtype=torch.float64, device="maia", requires_grad=True)
    w = torch.rand(4, dtype=torch.float64, device="maia", requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: F.glu(t, 1), (x,))
    assert torch.autograd.gradcheck(F.prelu, (x, w))
