"""multi_margin_loss and multilabel_margin_loss on the device
(runtime/kernels/nn/margin_loss.h, ops/MarginLoss.cpp) against the CPU:
forward and backward for every reduction, p, margin and weights, batched,
unbatched and transposed inputs, with no host fallback; the CPU's errors."""

import pytest
import torch
import torch.nn.functional as F

REDUCTIONS = ["none", "mean", "sum"]


def run(loss, x, *args, **kwargs):
    x = x.clone().requires_grad_(True)
    out = loss(x, *args, **kwargs)
    out.backward(torch.linspace(0.5, 2, out.numel(), dtype=out.dtype).view(out.shape)
                 .to(out.device))
    return out, x.grad


def assert_matches_cpu(loss, x, *args, **kwargs):
    expected = run(loss, x, *args, **kwargs)
    maia_args = [a.to("maia") if isinstance(a, torch.Tensor) else a for a in args]
    maia_kwargs = {k: v.to("maia") if isinstance(v, torch.Tensor) else v
                   for k, v in kwargs.items()}
    torch.maia.reset_fallback_counts()
    actual = run(loss, x.to("maia"), *maia_args, **maia_kwargs)
    assert torch.maia.fallback_counts() == {}
    for mine, cpu in zip(actual, expected):
        assert mine.device.type == "maia" and mine.shape == cpu.shape
        torch.testing.assert_close(mine.cpu(), cpu)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_multi_margin_loss(dtype, reduction):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(6, 5, generator=g, dtype=dtype)
    target = torch.randint(0, 5, (6,), generator=g)
    weight = torch.rand(5, generator=g, dtype=dtype)
    for p, margin, w in [(1, 1.0, None), (2, 0.5, weight), (1, 2.5, weight)]:
        assert_matches_cpu(F.multi_margin_loss, x, target, p=p, margin=margin, weight=w,
                           reduction=reduction)
    assert_matches_cpu(F.multi_margin_loss, x.t().contiguous().t(), target, reduction=reduction)
    assert_matches_cpu(F.multi_margin_loss, x[0], target[0], reduction=reduction)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_multilabel_margin_loss(dtype, reduction):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(4, 6, generator=g, dtype=dtype)
    target = torch.tensor([[3, 0, -1, 1, 1, 1], [5, 4, 3, 2, 1, 0], [-1, 2, 2, 2, 2, 2],
                           [1, 1, 4, -1, 0, 0]])
    assert_matches_cpu(F.multilabel_margin_loss, x, target, reduction=reduction)
    assert_matches_cpu(F.multilabel_margin_loss, x[1], target[0], reduction=reduction)
    out, is_target = torch.ops.aten.multilabel_margin_loss_forward(x.to("maia"),
                                                                   target.to("maia"), 1)
    expected = torch.ops.aten.multilabel_margin_loss_forward(x, target, 1)
    torch.testing.assert_close(is_target.cpu(), expected[1])


def test_the_cpus_errors():
    x = torch.randn(3, 5, device="maia")
    with pytest.raises(RuntimeError, match="only p == 1 and p == 2 supported"):
        torch.ops.aten.multi_margin_loss(x, torch.zeros(3, dtype=torch.long, device="maia"), 3)
    with pytest.raises(RuntimeError, match="inconsistent weight size"):
        F.multi_margin_loss(x, torch.zeros(3, dtype=torch.long, device="maia"),
                            weight=torch.ones(4, device="maia"))
    with pytest.raises(RuntimeError, match="inconsistent target size"):
        F.multilabel_margin_loss(x, torch.zeros(3, 4, dtype=torch.long, device="maia"))
    with pytest.raises(NotImplementedError, match="not implemented for 'BFloat16'"):
        F.multi_margin_loss(x.bfloat16(), torch.zeros(3, dtype=torch.long, device="maia"))
