"""Dropout on maia (runtime/torch/csrc/ops/Dropout.cpp): native_dropout draws its mask
on the device from the maia generator (counter-based: seed, offset), and
native_dropout_backward applies it; neither falls back to the host."""

import math

import pytest
import torch

from opinfo_support import forbid_fallback

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


def dropout(x, p):
    return torch.native_dropout(x, p, True)


class TestDropout:
    def test_same_seed_same_mask_and_calls_differ(self):
        x = torch.randn(10000, device="maia")
        torch.maia.manual_seed(1234)
        a_out, a_mask = dropout(x, 0.3)
        b_out, b_mask = dropout(x, 0.3)
        torch.maia.manual_seed(1234)
        c_out, c_mask = dropout(x, 0.3)
        assert torch.equal(a_mask.cpu(), c_mask.cpu())
        assert torch.equal(a_out.cpu(), c_out.cpu())
        assert not torch.equal(a_mask.cpu(), b_mask.cpu())
        torch.maia.manual_seed(1235)
        assert not torch.equal(dropout(x, 0.3)[1].cpu(), a_mask.cpu())

    def test_rng_state_replays(self):
        x = torch.randn(1000, device="maia")
        state = torch.maia.get_rng_state()
        a = dropout(x, 0.5)[1].cpu()
        torch.maia.set_rng_state(state)
        assert torch.equal(dropout(x, 0.5)[1].cpu(), a)

    @pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
    def test_mask_statistics(self, p):
        """The kept fraction is within 6 standard deviations of a Binomial(n, 1 - p) mean,
        and kept elements are independent of position (both halves agree)."""
        n = 1 << 20
        torch.maia.manual_seed(0)
        _, mask = dropout(torch.ones(n, device="maia"), p)
        kept = mask.cpu().double()
        sd = math.sqrt(n * p * (1 - p))
        assert abs(kept.sum().item() - n * (1 - p)) < 6 * sd
        # The two halves differ by a difference of two Binomial(n / 2, 1 - p): sd as above.
        assert abs(kept[: n // 2].sum().item() - kept[n // 2:].sum().item()) < 6 * sd
        # Neighbouring elements (lanes of one Philox block) are uncorrelated.
        both = (kept[0::2] * kept[1::2]).sum().item()
        assert abs(both - n / 2 * (1 - p) ** 2) < 6 * math.sqrt(n / 2)

    @pytest.mark.parametrize("dtype", FLOATS, ids=str)
    def test_scaling_and_no_fallback(self, dtype):
        x = torch.randn(3000, 7).to(dtype)
        p = 0.25
        before = torch.maia.fallback_counts()
        out, mask = dropout(x.to("maia"), p)
        forbid_fallback(before, "native_dropout")
        assert mask.dtype == torch.bool and out.dtype == dtype
        mask_cpu = mask.cpu()
        expected = x * mask_cpu * (1 / (1 - p))  # as the CPU kernel computes it
        torch.testing.assert_close(out.cpu(), expected)

    def test_p_zero_and_one(self):
        x = torch.randn(500, device="maia")
        out, mask = dropout(x, 0.0)
        assert bool(mask.all().cpu())
        torch.testing.assert_close(out.cpu(), x.cpu())
        out, mask = dropout(x, 1.0)
        assert not bool(mask.any().cpu())
        assert torch.equal(out.cpu(), torch.zeros(500))
        # F.dropout: p = 1 zeroes, p = 0 and eval mode return the input.
        assert torch.equal(torch.nn.functional.dropout(x, 1.0).cpu(), torch.zeros(500))
        assert torch.equal(torch.nn.functional.dropout(x, 0.0).cpu(), x.cpu())
        out, mask = torch.native_dropout(x, 0.5, False)
        assert torch.equal(out.cpu(), x.cpu()) and bool(mask.all().cpu())

    def test_non_contiguous_and_empty(self):
        x = torch.randn(40, 30, device="maia").t()
        out, mask = dropout(x, 0.5)
        torch.testing.assert_close(out.cpu(), x.cpu() * mask.cpu() * 2.0)
        out, mask = dropout(torch.empty(0, 3, device="maia"), 0.5)
        assert out.shape == (0, 3) and mask.shape == (0, 3)

    def test_bad_input_is_refused(self):
        x = torch.ones(4, device="maia")
        with pytest.raises(RuntimeError, match="dropout probability has to be between 0 and 1"):
            dropout(x, 1.5)
        with pytest.raises(RuntimeError, match="expected a floating point input"):
            dropout(torch.ones(4, dtype=torch.int64, device="maia"), 0.5)

    @pytest.mark.parametrize("dtype", FLOATS, ids=str)
    def test_backward_is_grad_times_mask_times_scale(self, dtype):
        p = 0.4
        x = torch.randn(2000, dtype=dtype, device="maia", requires_grad=True)
        grad = torch.randn(2000, dtype=dtype)
        y = torch.nn.functional.dropout(x, p)
        before = torch.maia.fallback_counts()
        y.backward(grad.to("maia"))
        forbid_fallback(before, "dropout backward")
        mask = y.detach().cpu() != 0  # x is nonzero almost surely
        torch.testing.assert_close(x.grad.cpu(), grad * mask * (1 / (1 - p)))
        # The operator itself, also with a non-bool mask (the CPU's promotion).
        g, m = grad.to("maia"), mask.to("maia")
        torch.testing.assert_close(torch.ops.aten.native_dropout_backward(g, m, 2.0).cpu(),
                                   grad * mask * 2.0)
        torch.testing.assert_close(
            torch.ops.aten.native_dropout_backward(g, m.to(dtype), 2.0).cpu(),
            torch.ops.aten.native_dropout_backward(grad, mask.to(dtype), 2.0))
