"""F.grid_sample on maia (grid_sampler_2d/3d and backwards,
runtime/kernels/nn/grid_sample.h) against the CPU: every interpolation
mode, padding mode and align_corners, 2-D and 3-D, coordinates outside
[-1, 1], every float dtype, both gradients, the CPU's errors.

float32/float64 compare within assert_close's tolerances, except the
bicubic grid gradient (a sum of 16 taps per channel with cancellation,
ordered differently from the CPU's vector kernel): 1e-4. float16/bfloat16
forwards round every step as the CPU's scalar_t kernel does, so they meet
the low-precision tolerances; their gradients are compared with the CPU's
float32 gradients of the same values (maia accumulates them in float32)."""

import itertools
import re

import pytest
import torch
import torch.nn.functional as F
from opinfo_support import LOW_PRECISION_TOLERANCES

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
CASES = [(d, mode, padding, align)
         for d, mode, padding, align in itertools.product(
             [2, 3], ["bilinear", "nearest", "bicubic"], ["zeros", "border", "reflection"],
             [False, True])
         if not (d == 3 and mode == "bicubic")]


def sample(x, grid, mode, padding, align):
    return F.grid_sample(x, grid, mode=mode, padding_mode=padding, align_corners=align)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("case", CASES, ids=str)
def test_forward_and_gradients_match_the_cpu(dtype, case):
    d, mode, padding, align = case
    g = torch.Generator().manual_seed(0)
    spatial = (5, 6) if d == 2 else (4, 5, 6)
    out_spatial = (4, 7) if d == 2 else (3, 4, 5)
    x = torch.randn((2, 3) + spatial, generator=g).to(dtype)
    # Beyond [-1, 1] on purpose: the padding modes decide there.
    grid = (torch.rand((2,) + out_spatial + (d,), generator=g) * 2.6 - 1.3).to(dtype)
    tolerances = LOW_PRECISION_TOLERANCES.get(dtype, {})
    torch.maia.reset_fallback_counts()
    actual = sample(x.to("maia"), grid.to("maia"), mode, padding, align)
    assert torch.maia.fallback_counts() == {}
    torch.testing.assert_close(actual.cpu(), sample(x, grid, mode, padding, align),
                               **tolerances)

    reference = torch.float32 if dtype in LOW_PRECISION_TOLERANCES else dtype
    x_cpu = x.to(reference).clone().requires_grad_()
    grid_cpu = grid.to(reference).clone().requires_grad_()
    upstream = torch.randn(actual.shape, generator=g).to(dtype)
    sample(x_cpu, grid_cpu, mode, padding, align).backward(upstream.to(reference))
    x_maia = x.to("maia").requires_grad_()
    grid_maia = grid.to("maia").requires_grad_()
    sample(x_maia, grid_maia, mode, padding, align).backward(upstream.to("maia"))
    assert torch.maia.fallback_counts() == {}
    torch.testing.assert_close(x_maia.grad.cpu(), x_cpu.grad.to(dtype), **tolerances)
    grid_tolerances = tolerances
    if dtype in LOW_PRECISION_TOLERANCES:
        grid_tolerances = dict(atol=5e-2, rtol=5e-2)  # coordinates rounded to 16 bits
    elif mode == "bicubic" and dtype == torch.float32:
        grid_tolerances = dict(atol=1e-4, rtol=1e-5)
    torch.testing.assert_close(grid_maia.grad.cpu(), grid_cpu.grad.to(dtype), **grid_tolerances)


def test_grid_gradient_alone_and_gradcheck():
    x = torch.randn(1, 2, 4, 5, dtype=torch.float64, device="maia")
    grid = (torch.rand(1, 3, 3, 2, dtype=torch.float64) * 2 - 1).to("maia").requires_grad_()
    F.grid_sample(x, grid, align_corners=False).sum().backward()  # no input gradient asked
    assert grid.grad is not None and x.grad is None
    x.requires_grad_()
    for mode in ["bilinear", "bicubic"]:
        assert torch.autograd.gradcheck(
            lambda a, b: F.grid_sample(a, b, mode=mode, padding_mode="border",
                                       align_corners=True), (x, grid))


def test_errors_are_the_cpus():
    x, grid = torch.randn(1, 2, 4, 5), torch.rand(1, 3, 3, 2)
    volume, volume_grid = torch.randn(1, 2, 3, 4, 5), torch.rand(1, 2, 2, 2, 3)
    cases = [
        (lambda a, b: F.grid_sample(a, b[..., :1], align_corners=False), x, grid),
        (lambda a, b: F.grid_sample(a[None], b, align_corners=False), x, grid),
        (lambda a, b: F.grid_sample(a, b, mode="bicubic", align_corners=False),
         volume, volume_grid),
        (lambda a, b: F.grid_sample(a.double(), b, align_corners=False), x, grid),
    ]
    for fn, a, b in cases:
        with pytest.raises(RuntimeError) as cpu:
            fn(a, b)
        with pytest.raises(RuntimeError, match=re.escape(str(cpu.value).splitlines()[0])):
            fn(a.to("maia"), b.to("maia"))
