"""Operators composed of maia's native operators (ops/ComposedOps.cpp): count_nonzero, aminmax,
trace, eye, index_fill, index_copy, take, put, masked_scatter, renorm, linalg.cross, unique and
unique_consecutive; and addbmm (MatMul.cpp), logcumsumexp (Reduction.cpp), round with decimals
(MathElementwise.cpp). PyTorch's own op_db samples on
maia and on the CPU for every dtype maia supports, with no host fallback in the forward or the
backward (gradients in float32/float64), and the CPU's errors."""

import pytest
import torch
from torch.testing._internal.common_methods_invocations import op_db

from opinfo_support import (LOW_PRECISION_TOLERANCES, MATMUL_TOLERANCES,
                            cases, check_forward_samples, check_gradient_samples,
                            forbid_fallback, new_fallbacks)

COMPOSED = ["count_nonzero", "aminmax", "trace", "eye", "index_fill", "index_copy", "take",
            "put", "linalg.cross", "cross", "unique", "unique_consecutive", "masked_scatter",
            "renorm", "addbmm", "logcumsumexp", "round"]
OPS = [op for op in op_db if op.name in COMPOSED and op.variant_test_name != "decimals_neg_3"]
UNSUPPORTED_SAMPLE_KWARGS = {"out"}


def test_every_listed_op_is_in_op_db():
    assert {op.name for op in OPS} == set(COMPOSED)


def check_fallbacks(op, dtype):
    return lambda before, sample: forbid_fallback(before, op.name)


# addbmm sums in another order than the CPU's BLAS (test_addbmm_error_is_the_cpus_or_less).


def tolerances(op, dtype):
    table = MATMUL_TOLERANCES if op.name == "addbmm" else LOW_PRECISION_TOLERANCES
    return table.get(dtype, {})


@pytest.mark.parametrize("op,dtype", list(cases(OPS)))
def test_matches_cpu(op, dtype):
    check_forward_samples(op, dtype, UNSUPPORTED_SAMPLE_KWARGS, tolerances(op, dtype),
                          check_fallbacks(op, dtype))


GRAD_OPS = [op for op in OPS if op.supports_autograd]


@pytest.mark.parametrize("op", GRAD_OPS, ids=lambda op: op.name)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_gradients_match_cpu(op, dtype):
    check_gradient_samples(op, dtype, UNSUPPORTED_SAMPLE_KWARGS,
                           check_fallback=check_fallbacks(op, dtype), **tolerances(op, dtype))


def test_errors_match_cpu():
    m = torch.ones(3, 4, device="maia")
    with pytest.raises(RuntimeError, match="trace: expected a matrix"):
        torch.trace(torch.ones(3, device="maia"))
    with pytest.raises(RuntimeError, match="cannot compute aminmax over an empty"):
        torch.aminmax(torch.ones(0, device="maia"))
    with pytest.raises(IndexError, match="Expected a long tensor for index"):
        m.index_fill_(0, torch.tensor([0], dtype=torch.int32, device="maia"), 1.0)
    with pytest.raises(RuntimeError, match="must have length 3"):
        torch.linalg.cross(m, m)
    with pytest.raises(RuntimeError, match="n must be greater or equal to 0"):
        torch.eye(-1, device="maia")


def test_index_ops_on_large_strided_tensors():
    torch.manual_seed(0)
    x = torch.randn(300, 7, 50).transpose(0, 2)  # [50, 7, 300], strided
    index = torch.randint(-300, 300, (40,))
    source = torch.randn(50, 7, 40)
    xm = x.to("maia")
    torch.testing.assert_close(xm.index_fill(2, index.to("maia"), -2.5).cpu(),
                               x.index_fill(2, index, -2.5))
    unique = torch.randperm(300)[:40]
    torch.testing.assert_close(xm.index_copy(2, unique.to("maia"), source.to("maia")).cpu(),
                               x.index_copy(2, unique, source))
    flat = torch.randint(-x.numel(), x.numel(), (1000,))
    torch.testing.assert_close(torch.take(xm, flat.to("maia")).cpu(), torch.take(x, flat))
    y, ym = x.clone(), xm.clone()
    values = torch.randn(1000)
    y.put_(flat, values, accumulate=True)
    ym.put_(flat.to("maia"), values.to("maia"), accumulate=True)
    torch.testing.assert_close(ym.cpu(), y)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.bool])
@pytest.mark.parametrize("dim", [None, 0, 1, -1])
@pytest.mark.parametrize("fn", [torch.unique, torch.unique_consecutive])
def test_unique_large_dims_inverse_and_counts(fn, dim, dtype):
    torch.manual_seed(0)
    x = torch.randint(0, 5, (400, 3, 2)).to(dtype)
    before = torch.maia.fallback_counts()
    actual = fn(x.to("maia"), return_inverse=True, return_counts=True, dim=dim)
    forbid_fallback(before, fn.__name__)
    for a, e in zip(actual, fn(x, return_inverse=True, return_counts=True, dim=dim)):
        torch.testing.assert_close(a.cpu(), e)


def test_unique_nans_are_distinct():
    # Each NaN is its own value, sorted last. Which NaN group an element's inverse names is
    # the CPU's sort's choice (unstable): the inverse must rebuild the input instead.
    torch.manual_seed(0)
    x = torch.randint(0, 5, (2400,)).float()
    x[::37] = float("nan")
    unique, inverse, counts = torch.unique(x.to("maia"), return_inverse=True, return_counts=True)
    expected = torch.unique(x, return_inverse=True, return_counts=True)
    torch.testing.assert_close(unique.cpu(), expected[0], equal_nan=True)
    torch.testing.assert_close(counts.cpu(), expected[2])
    torch.testing.assert_close(unique[inverse].cpu(), x, equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_addbmm_error_is_the_cpus_or_less(dtype):
    """addbmm accumulates batch by batch into the result as the CPU does (each batch's product
    rounds into it); within a product maia sums in another order than the CPU's BLAS: its
    error against float64 stays within the CPU's own."""
    torch.manual_seed(0)
    bias, a, b = torch.randn(64, 48), torch.randn(7, 64, 96) * 3, torch.randn(7, 96, 48) * 3
    exact = torch.addbmm(bias.double(), a.double(), b.double(), beta=0.5, alpha=1.5)
    cpu = torch.addbmm(*(t.to(dtype) for t in (bias, a, b)), beta=0.5, alpha=1.5)
    before = torch.maia.fallback_counts()
    maia = torch.addbmm(*(t.to(dtype).to("maia") for t in (bias, a, b)), beta=0.5,
                        alpha=1.5).cpu()
    forbid_fallback(before, "addbmm")
    cpu_error = (cpu.double() - exact).abs().max()
    maia_error = (maia.double() - exact).abs().max()
    assert maia_error <= 1.5 * cpu_error, (maia_error, cpu_error)


COUNTING = ["bincount", "repeat_interleave", "isin", "median", "nanmedian", "vdot", "complex",
            "polar"]
# median/nanmedian with a dim (and their tie indices): test_sorting.py.
COUNTING_OPS = [op for op in op_db if op.name in COUNTING]


def check_counting_fallbacks(op, dtype):
    """The counted host paths these ops keep: complex/polar of float16 (complex32)."""
    def allowed(name):
        return op.name in ("complex", "polar") and dtype == torch.float16

    def check(before, sample):
        grew = {name for name in new_fallbacks(before) if not allowed(name)}
        assert not grew, f"{op.name} fell back to the host for: {grew}: {sample}"
    return check


@pytest.mark.parametrize("op,dtype", list(cases(COUNTING_OPS)))
def test_counting_ops_match_cpu(op, dtype):
    check_forward_samples(op, dtype, UNSUPPORTED_SAMPLE_KWARGS,
                          LOW_PRECISION_TOLERANCES.get(dtype, {}),
                          check_counting_fallbacks(op, dtype))


def test_counting_ops_edge_cases():
    maia = torch.device("maia")
    before = torch.maia.fallback_counts()
    x = torch.tensor([1, 2, 2, 5])
    for w in (None, torch.tensor([0.5, 1.0, 2.0, 3.0]), torch.tensor([1, 2, 3, 4])):
        expected = torch.bincount(x, w, minlength=7)
        actual = torch.bincount(x.to(maia), None if w is None else w.to(maia), minlength=7)
        assert actual.dtype == expected.dtype
        torch.testing.assert_close(actual.cpu(), expected)
    torch.testing.assert_close(torch.repeat_interleave(torch.tensor([2, 0, 3, 0], device=maia))
                               .cpu(), torch.repeat_interleave(torch.tensor([2, 0, 3, 0])))
    for values in ([], [float("nan"), 1.0], [float("nan"), 1.0, 3.0], [float("nan")]):
        t = torch.tensor(values)
        for fn in (torch.median, torch.nanmedian):
            torch.testing.assert_close(fn(t.to(maia)).cpu(), fn(t), equal_nan=True)
    forbid_fallback(before, "counting ops")
    with pytest.raises(RuntimeError, match="non-negative"):
        torch.bincount(torch.tensor([-1], device=maia))
    with pytest.raises(RuntimeError, match="can not be negative"):
        torch.repeat_interleave(torch.tensor([2, -1], device=maia))
