"""The CTC loss on the device (runtime/kernels/nn/ctc_loss.h,
ops/CtcLoss.cpp) against the CPU: padded and concatenated targets,
int32/int64 targets and lengths as lists or tensors, every reduction,
repeated labels (the recursion's skip rule), empty targets and inputs,
impossible alignments (infinite loss) with and without zero_infinity,
unbatched input, gradients; no host fallback; the CPU's errors."""

import pytest
import torch
import torch.nn.functional as F

from native_check import assert_native_matches


def problem(dtype, batch=3, steps=12, labels=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    log_probs = torch.randn(steps, batch, labels, generator=g, dtype=dtype).log_softmax(2)
    targets = torch.randint(1, labels, (batch, 6), generator=g)
    targets[0, 1] = targets[0, 0]  # a repeated label needs a blank between
    input_lengths = torch.tensor([12, 9, 7])[:batch]
    target_lengths = torch.tensor([6, 3, 0])[:batch]  # an empty target
    return log_probs, targets, input_lengths, target_lengths


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_padded_and_concatenated_targets(dtype, reduction):
    lp, targets, il, tl = problem(dtype)
    assert_native_matches(lambda x, t: F.ctc_loss(x, t, il, tl, reduction=reduction), lp, targets)
    flat = torch.cat([targets[b, :tl[b]] for b in range(3)])
    assert_native_matches(lambda x, t: F.ctc_loss(x, t, il.tolist(), tl.tolist(),
                                                  reduction=reduction), lp, flat)
    assert_native_matches(lambda x, t: F.ctc_loss(x, t.int(), il.int(), tl.int(), blank=2,
                                                  reduction=reduction), lp, flat)


@pytest.mark.parametrize("zero_infinity", [False, True])
def test_gradients_including_impossible_alignments(zero_infinity):
    lp, targets, il, tl = problem(torch.float64)
    il = torch.tensor([12, 4, 0])  # element 1: 3 labels in 4 steps with no repeat is possible
    targets[1, :3] = torch.tensor([2, 2, 2])  # ... but repeats need 5 steps: infinite loss
    tl = torch.tensor([6, 3, 1])  # element 2: no input for one label: infinite loss

    def grad_of(x, t):
        x = x.detach().requires_grad_()
        loss = F.ctc_loss(x, t, il, tl, reduction="none", zero_infinity=zero_infinity)
        weights = torch.tensor([1.0, 2.0, 3.0], dtype=x.dtype, device=x.device)
        (torch.where(loss.isinf(), 0, loss) * weights).sum().backward()
        return loss, x.grad

    # An infinite loss's gradient is NaN unless zeroed, on the CPU as here.
    assert_native_matches(grad_of, lp, targets, equal_nan=True)


def test_unbatched_and_reduced_gradients():
    lp, targets, il, tl = problem(torch.float32, batch=1)

    def grad_of(x, t):
        x = x.detach().requires_grad_()
        F.ctc_loss(x, t, il, tl).backward()
        return x.grad

    assert_native_matches(grad_of, lp, targets)
    assert_native_matches(lambda x, t: F.ctc_loss(x[:, 0], t[0], il, tl), lp, targets)


def test_errors_are_the_cpus():
    lp, targets, il, tl = problem(torch.float32)
    cases = [
        (lambda x, t: F.ctc_loss(x, t, il, tl, blank=5), "blank must be in label range"),
        (lambda x, t: F.ctc_loss(x, t, torch.tensor([13, 1, 1]), tl), "at most 12"),
        (lambda x, t: F.ctc_loss(x, t, il, torch.tensor([7, 1, 1])), "size at least 7"),
        (lambda x, t: F.ctc_loss(x.half(), t, il, tl), "not implemented for 'Half'"),
    ]
    for fn, message in cases:
        with pytest.raises(RuntimeError, match=message):
            fn(lp, targets)
        with pytest.raises(RuntimeError, match=message):
            fn(lp.to("maia"), targets.to("maia"))
