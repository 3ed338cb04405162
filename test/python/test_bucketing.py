"""searchsorted, bucketize, histc and tril/triu_indices on the device
(runtime/kernels/nn/bucketing.h, triangular.h) against the CPU: NaN, ties,
sorters, side/right, promotion, N-D boundaries, several programs, and the
CPU's errors."""

import re

import pytest
import torch

SEARCH_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64,
                 torch.int32, torch.int16, torch.int8, torch.uint8]


def on_maia(*tensors):
    return [t.to("maia") if isinstance(t, torch.Tensor) else t for t in tensors]


def assert_native_equal(fn, *args, **kwargs):
    """fn on maia gives the CPU's result exactly, without the host fallback."""
    expected = fn(*args, **kwargs)
    torch.maia.reset_fallback_counts()
    actual = fn(*on_maia(*args), **{k: on_maia(v)[0] for k, v in kwargs.items()})
    assert torch.maia.fallback_counts() == {}
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    torch.testing.assert_close(actual.cpu(), expected, rtol=0, atol=0, equal_nan=True)


def sorted_with_ties(n, dtype, generator):
    values = torch.randint(0, 20, (n,), generator=generator).to(dtype)
    return values.sort().values


@pytest.mark.parametrize("dtype", SEARCH_DTYPES)
@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_matches_cpu(dtype, right):
    g = torch.Generator().manual_seed(0)
    boundaries = sorted_with_ties(33, dtype, g)
    values = torch.randint(-2, 23, (5, 70), generator=g).to(dtype)
    assert_native_equal(torch.searchsorted, boundaries, values, right=right)
    assert_native_equal(torch.bucketize, values, boundaries, right=right, out_int32=True)
    # N-D boundaries: one sorted row per row of values; the values strided.
    rows = torch.stack([sorted_with_ties(9, dtype, g) for _ in range(5)])
    assert_native_equal(torch.searchsorted, rows, values[:, ::3], side="right" if right else "left")


def test_searchsorted_nan_and_sorter():
    nan = float("nan")
    boundaries = torch.tensor([1.0, 3.0, 3.0, 7.0, nan])
    values = torch.tensor([nan, 0.0, 3.0, 8.0, -float("inf"), float("inf")])
    for right in (False, True):
        assert_native_equal(torch.searchsorted, boundaries, values, right=right)
    unsorted = torch.tensor([7.0, 1.0, 3.0, 2.0])
    sorter = unsorted.argsort()
    assert_native_equal(torch.searchsorted, unsorted, values, sorter=sorter)
    assert_native_equal(torch.searchsorted, unsorted, values, sorter=sorter, right=True)


def test_searchsorted_scalars_promotion_and_empty():
    boundaries = torch.tensor([1, 4, 9, 16])
    assert_native_equal(torch.searchsorted, boundaries, torch.tensor([2.5, 9.0, 20.0]))
    assert_native_equal(torch.searchsorted, boundaries, 9)
    assert_native_equal(torch.searchsorted, boundaries, 9, right=True)
    assert_native_equal(torch.bucketize, 3.5, boundaries.double())
    assert_native_equal(torch.searchsorted, boundaries, torch.empty(0, dtype=torch.long))


def test_searchsorted_many_programs_and_out():
    # 300K values: several programs each take a share.
    g = torch.Generator().manual_seed(1)
    boundaries = torch.randn(1000, generator=g).sort().values
    values = torch.randn(300_000, generator=g)
    assert_native_equal(torch.searchsorted, boundaries, values)
    out = torch.empty(7, dtype=torch.int32, device="maia")
    torch.searchsorted(boundaries.to("maia"), values.to("maia"), out_int32=True, out=out)
    assert out.shape == values.shape
    torch.testing.assert_close(out.cpu(), torch.searchsorted(boundaries, values, out_int32=True))


def test_searchsorted_errors_are_the_cpus():
    b, v = torch.tensor([1.0, 2.0]), torch.tensor([1.5])
    cases = [
        lambda b, v: torch.searchsorted(b, v, side="middle"),
        lambda b, v: torch.searchsorted(b, v, sorter=torch.tensor([0, 5], device=b.device)),
        lambda b, v: torch.searchsorted(b.expand(3, 2), v),
        lambda b, v: torch.bucketize(v, b.expand(3, 2)),
        lambda b, v: torch.searchsorted(b.bool(), v.bool()),
    ]
    for case in cases:
        with pytest.raises((RuntimeError, NotImplementedError)) as cpu_error:
            case(b, v)
        with pytest.raises(type(cpu_error.value), match=re.escape(str(cpu_error.value)[:40])):
            case(*on_maia(b, v))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_histc_matches_cpu(dtype):
    g = torch.Generator().manual_seed(2)
    x = (torch.randn(1000, generator=g) * 3).to(dtype)
    x[::97] = float("nan")
    x[5], x[6] = float("inf"), -float("inf")
    assert_native_equal(torch.histc, x, bins=17, min=-4, max=4)
    assert_native_equal(torch.histc, x[::2], bins=17, min=-4, max=4.5)
    finite = x[torch.isfinite(x)]
    assert_native_equal(torch.histc, finite, bins=10)       # range from the data
    assert_native_equal(torch.histc, torch.full((4,), 2.0, dtype=dtype), bins=4)  # widened
    assert_native_equal(torch.histc, torch.empty(0, dtype=dtype), bins=3)
    # Every element exactly on an edge, the last edge included in the last bin.
    assert_native_equal(torch.histc, torch.arange(11).to(dtype), bins=10, min=0, max=10)


def test_histc_many_programs():
    x = torch.rand(400_000, generator=torch.Generator().manual_seed(3))
    assert_native_equal(torch.histc, x, bins=100, min=0, max=1)


def test_histc_errors_are_the_cpus():
    cases = [
        lambda t: torch.histc(t, bins=0),
        lambda t: torch.histc(t, bins=3, min=2, max=1),
        lambda t: torch.histc(t.long(), bins=3),
        lambda t: torch.histc(t.new_tensor([float("inf")]), bins=3),
    ]
    t = torch.rand(5)
    for case in cases:
        with pytest.raises((RuntimeError, NotImplementedError)) as cpu_error:
            case(t)
        with pytest.raises(type(cpu_error.value), match="histc|histogram"):
            case(t.to("maia"))


@pytest.mark.parametrize("fn", [torch.tril_indices, torch.triu_indices])
def test_triangle_indices_match_cpu(fn):
    for row, col in [(0, 3), (3, 0), (1, 1), (4, 7), (7, 4), (300, 200)]:
        for offset in (-9, -2, 0, 1, 3, 10):
            expected = fn(row, col, offset)
            torch.maia.reset_fallback_counts()
            actual = fn(row, col, offset, device="maia")
            assert torch.maia.fallback_counts() == {}
            assert torch.equal(actual.cpu(), expected), (row, col, offset)
    assert fn(5, 6, 1, dtype=torch.int32, device="maia").dtype == torch.int32
    with pytest.raises(NotImplementedError, match="not implemented for 'Float'"):
        fn(3, 3, dtype=torch.float32, device="maia")
    with pytest.raises(RuntimeError, match="row must be non-negative"):
        fn(-1, 3, device="maia")
