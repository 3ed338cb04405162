"""Operators that real models call run natively on maia (issue 13): each is
compared with the CPU and must leave no entry in torch.maia.fallback_counts()."""

import contextlib

import pytest
import torch

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


@contextlib.contextmanager
def no_fallback(*ops):
    """Asserts that the body sends none of ops (schema names, any overload)
    to the host fallback."""
    torch.maia.reset_fallback_counts()
    yield
    counts = torch.maia.fallback_counts()
    hits = {name: n for name, n in counts.items()
            if any(name == f"aten::{op}" or name.startswith(f"aten::{op}.") for op in ops)}
    assert not hits, f"host fallbacks: {hits}"


class TestRandom:
    @pytest.mark.parametrize("dtype", FLOATS)
    def test_randn_statistics(self, dtype):
        torch.maia.manual_seed(0)
        with no_fallback("normal_"):
            x = torch.randn(1_000_000, device="maia", dtype=dtype)
        y = x.cpu().double()
        assert abs(y.mean().item()) < 0.01
        assert abs(y.std().item() - 1) < 0.01
        # Tails as a normal distribution has them (P(|z| > 3) = 0.0027).
        assert 0.002 < (y.abs() > 3).double().mean().item() < 0.0035

    @pytest.mark.parametrize("dtype", FLOATS)
    def test_rand_statistics(self, dtype):
        torch.maia.manual_seed(0)
        with no_fallback("uniform_"):
            x = torch.rand(1_000_000, device="maia", dtype=dtype)
        y = x.cpu().double()
        assert 0 <= y.min().item() and y.max().item() < 1
        assert abs(y.mean().item() - 0.5) < 0.01
        assert abs(y.std().item() - (1 / 12) ** 0.5) < 0.01
        # Every tenth of [0, 1) is about as likely.
        counts = torch.histc(y, bins=10, min=0, max=1)
        assert (counts - 100_000).abs().max().item() < 5_000

    @pytest.mark.parametrize("dtype", FLOATS)
    def test_parameters(self, dtype):
        with no_fallback("normal_", "uniform_"):
            n = torch.empty(200_000, device="maia", dtype=dtype).normal_(3.0, 0.5).cpu().double()
            u = torch.empty(200_000, device="maia", dtype=dtype).uniform_(-2.0, 6.0)
        u = u.cpu().double()
        assert abs(n.mean().item() - 3) < 0.02 and abs(n.std().item() - 0.5) < 0.02
        assert -2 <= u.min().item() and u.max().item() < 6
        assert abs(u.mean().item() - 2) < 0.05

    @pytest.mark.parametrize("op", ["rand", "randn"])
    def test_same_seed_same_numbers_and_calls_differ(self, op):
        draw = getattr(torch, op)
        with no_fallback("normal_", "uniform_"):
            torch.maia.manual_seed(1234)
            a, b = draw(1000, device="maia").cpu(), draw(1000, device="maia").cpu()
            torch.maia.manual_seed(1234)
            c = draw(1000, device="maia").cpu()
            g = torch.Generator(device="maia").manual_seed(1234)
            d = draw(1000, device="maia", generator=g).cpu()
        assert torch.equal(a, c) and torch.equal(a, d)
        assert not torch.equal(a, b)
        # Elements of one draw are not repeated patterns.
        assert a.unique().numel() > 990

    def test_strided_and_empty(self):
        with no_fallback("normal_", "uniform_"):
            x = torch.zeros(64, 64, device="maia")
            x.t().normal_()
            x[:, ::2].uniform_(5, 6)
            torch.empty(0, device="maia").normal_()
        y = x.cpu()
        assert ((y[:, ::2] >= 5) & (y[:, ::2] < 6)).all()
        assert (y[:, 1::2] != 0).all()

    def test_bad_arguments(self):
        x = torch.empty(4, device="maia")
        with pytest.raises(RuntimeError, match="from"):
            x.uniform_(2, 1)
        with pytest.raises(RuntimeError, match="std"):
            x.normal_(0, -1)


ALL_DTYPES = FLOATS + [torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8,
                       torch.bool]


def sample(shape, dtype):
    """A CPU tensor of dtype with nonzero entries (so zeroing is visible)."""
    if dtype == torch.bool:
        return torch.ones(shape, dtype=dtype)
    return torch.randint(1, 100, shape).to(dtype)


class TestTriangular:
    @pytest.mark.parametrize("dtype", ALL_DTYPES)
    @pytest.mark.parametrize("op", ["tril", "triu"])
    def test_functional_batched_diagonals(self, op, dtype):
        x = sample((3, 2, 5, 7), dtype)
        with no_fallback(op):
            for diagonal in [-8, -2, 0, 1, 3, 9]:
                actual = getattr(torch, op)(x.to("maia"), diagonal)
                torch.testing.assert_close(actual.cpu(), getattr(torch, op)(x, diagonal))

    @pytest.mark.parametrize("op", ["tril", "triu"])
    def test_in_place_and_out(self, op):
        x = sample((4, 6, 6), torch.float32)
        with no_fallback(op, op + "_"):
            y = x.to("maia")
            getattr(y, op + "_")(1)
            torch.testing.assert_close(y.cpu(), getattr(torch, op)(x, 1))
            # A strided (transposed) tensor in place, and a strided input.
            t = x.to("maia").transpose(1, 2)
            getattr(t, op + "_")(-1)
            torch.testing.assert_close(t.cpu(), getattr(torch, op)(x.transpose(1, 2), -1))
            out = torch.empty(0, device="maia")
            getattr(torch, op)(x.to("maia")[:, ::2], out=out)
            torch.testing.assert_close(out.cpu(), getattr(torch, op)(x[:, ::2]))

    def test_causal_mask_and_backward(self):
        with no_fallback("tril", "triu"):
            mask = torch.tril(torch.ones(8, 8, dtype=torch.bool, device="maia"))
            x = torch.randn(8, 8, device="maia", requires_grad=True)
            x.triu(1).sum().backward()
        torch.testing.assert_close(mask.cpu(), torch.tril(torch.ones(8, 8, dtype=torch.bool)))
        torch.testing.assert_close(x.grad.cpu(), torch.ones(8, 8).triu(1))

    def test_errors_and_empty(self):
        with pytest.raises(RuntimeError, match="at least 2 dimensions"):
            torch.tril(torch.ones(3, device="maia"))
        assert torch.triu(torch.ones(0, 4, device="maia")).shape == (0, 4)
