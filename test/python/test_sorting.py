"""sort (stable and not, ascending and descending, out=), argsort, msort
and topk on maia against the CPU: every dtype, any dim, empty and
1-element tensors, sizes split over several programs, non-contiguous and
expanded inputs, ties, NaN, signed zeros, and autograd; and that none of
it reaches the host fallback.

Stable sorts equal the CPU's bit for bit (values and indices). An unstable
sort orders ties as it likes: its values must equal the CPU's and its
indices must be a permutation that picks them. topk's values equal the
CPU's; its indices equal the CPU's where the values are distinct and pick
equal values where they tie. kthvalue, median/nanmedian along a dim and mode
equal the CPU's values and indices, ties included."""

import re

import pytest
import torch

SORT_OPS = ("sort", "topk", "argsort", "msort")
ALL_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64,
              torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool]
BITS = {torch.float32: torch.int32, torch.float64: torch.int64, torch.float16: torch.int16,
        torch.bfloat16: torch.int16}


@pytest.fixture(autouse=True)
def no_sort_fallback():
    """Every test: no sorting operator ran on the host fallback."""
    torch.maia.reset_fallback_counts()
    yield
    hits = {name: n for name, n in torch.maia.fallback_counts().items()
            if name.split(".")[0].removeprefix("aten::") in SORT_OPS}
    assert not hits, f"host fallbacks: {hits}"


def bits(t):
    """t's bit patterns, so equality sees NaN payloads and the sign of zero."""
    t = t.cpu()
    return t.view(BITS[t.dtype]) if t.dtype in BITS else t


def assert_bits_equal(actual, expected):
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    assert torch.equal(bits(actual), bits(expected))


def make(shape, dtype, ties=False):
    """Values of dtype with NaN, infinities and both zeros among floats; few
    distinct values (many ties) when ties."""
    if dtype == torch.bool:
        return torch.randint(0, 2, shape).bool()
    if not dtype.is_floating_point:
        info = torch.iinfo(dtype)
        low, high = (0, 4) if ties else (max(info.min, -1000), min(info.max, 1000))
        return torch.randint(low, high, shape, dtype=dtype)
    x = torch.randint(-3, 4, shape).to(dtype) if ties else torch.randn(shape).to(dtype)
    flat = x.view(-1)
    if flat.numel() >= 8:
        specials = torch.tensor([float("nan"), float("inf"), -float("inf"), -0.0, 0.0,
                                 float("nan")], dtype=dtype)
        picks = torch.randperm(flat.numel())[: specials.numel()]
        flat[picks] = specials
    return x


def layout(x, kind):
    """x (values unchanged) as contiguous, transposed, sliced or expanded."""
    if kind == "transposed" and x.dim() >= 2:
        return x.transpose(0, -1).contiguous().transpose(0, -1)
    if kind == "sliced":
        wide = torch.zeros(*x.shape[:-1], 2 * x.shape[-1], dtype=x.dtype)
        wide[..., ::2] = x
        return wide[..., ::2]
    return x


SHAPES = [(0,), (1,), (17,), (4, 0, 3), (3, 1, 5), (6, 33), (2, 3, 4, 5)]


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("descending", [False, True])
def test_stable_sort_is_the_cpus_bit_for_bit(dtype, shape, descending):
    for ties in (False, True):
        x = make(shape, dtype, ties)
        for dim in range(-len(shape), len(shape)):
            expected = torch.sort(x, dim=dim, descending=descending, stable=True)
            actual = torch.sort(x.to("maia"), dim=dim, descending=descending, stable=True)
            assert_bits_equal(actual.values, expected.values)
            assert torch.equal(actual.indices.cpu(), expected.indices)


def assert_valid_sort(x, dim, values, indices, expected_values):
    """values equal the CPU's; indices are a permutation of each slice that
    picks them."""
    values, indices = values.cpu(), indices.cpu()
    torch.testing.assert_close(values, expected_values, rtol=0, atol=0, equal_nan=True)
    torch.testing.assert_close(x.gather(dim, indices), values, rtol=0, atol=0, equal_nan=True)
    if x.numel():
        positions = torch.arange(x.shape[dim]).view([-1 if d == dim % x.dim() else 1
                                                     for d in range(x.dim())])
        assert torch.equal(indices.sort(dim).values, positions.expand_as(indices))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_unstable_sort_is_a_valid_sort(dtype):
    for shape in [(40,), (5, 70), (3, 4, 5)]:
        x = make(shape, dtype, ties=True)
        for dim in range(len(shape)):
            for descending in (False, True):
                expected = torch.sort(x, dim=dim, descending=descending)
                actual = torch.sort(x.to("maia"), dim=dim, descending=descending)
                assert_valid_sort(x, dim, actual.values, actual.indices, expected.values)


@pytest.mark.parametrize("kind", ["transposed", "sliced"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64], ids=str)
def test_sort_of_strided_inputs(kind, dtype):
    x = layout(make((9, 13), dtype, ties=True), kind)
    assert not x.is_contiguous()
    for dim in (0, 1):
        expected = torch.sort(x, dim=dim, stable=True, descending=True)
        actual = torch.sort(x.to("maia"), dim=dim, stable=True, descending=True)
        assert_bits_equal(actual.values, expected.values)
        assert torch.equal(actual.indices.cpu(), expected.indices)
        assert actual.values.stride() == expected.values.stride()


def test_sort_of_an_expanded_dimension_keeps_the_order():
    x = torch.randn(3, 1).expand(3, 6)
    xm = torch.randn(3, 1).to("maia").expand(3, 6)
    for t in (x, xm):
        values, indices = torch.sort(t, dim=1, descending=True)
        assert torch.equal(indices.cpu(), torch.arange(6).expand(3, 6))
        assert torch.equal(values.cpu(), t.cpu())


def test_sort_splits_over_programs():
    """Sizes large enough for several programs (many slices) and one large
    slice: still the CPU's stable order."""
    for shape, dim in [((64, 2048), 1), ((2048, 64), 0), ((300_000,), 0)]:
        x = make(shape, torch.float32, ties=True)
        expected = torch.sort(x, dim=dim, stable=True)
        actual = torch.sort(x.to("maia"), dim=dim, stable=True)
        assert_bits_equal(actual.values, expected.values)
        assert torch.equal(actual.indices.cpu(), expected.indices)


def test_sort_of_more_dimensions_than_a_kernel_takes():
    x = make((2, 3, 1, 2, 2, 1, 2, 3, 2, 4), torch.float64, ties=True)
    for dim in (0, 4, 9):
        expected = torch.sort(x, dim=dim, stable=True)
        actual = torch.sort(x.to("maia"), dim=dim, stable=True)
        assert_bits_equal(actual.values, expected.values)
        assert torch.equal(actual.indices.cpu(), expected.indices)


def test_sort_of_a_scalar():
    x = torch.tensor(2.5)
    values, indices = torch.sort(x.to("maia"))
    assert values.dim() == 0 and values.item() == 2.5 and indices.item() == 0


def test_sort_out_variants_resize_and_write_strided_outputs():
    x = make((5, 7), torch.float32, ties=True)
    expected = torch.sort(x, dim=0, stable=True)
    values = torch.empty(0, device="maia")
    indices = torch.empty(0, dtype=torch.int64, device="maia")
    torch.sort(x.to("maia"), dim=0, stable=True, out=(values, indices))
    assert_bits_equal(values, expected.values)
    assert torch.equal(indices.cpu(), expected.indices)
    # strided out tensors of the right size are written in place
    values = torch.empty(7, 5, device="maia").t()
    indices = torch.empty(7, 5, dtype=torch.int64, device="maia").t()
    torch.sort(x.to("maia"), dim=0, stable=True, out=(values, indices))
    assert values.stride() == (1, 5)
    assert_bits_equal(values, expected.values)
    assert torch.equal(indices.cpu(), expected.indices)
    # values aliasing the input: the input is read before it is overwritten
    xm = x.to("maia")
    indices = torch.empty(0, dtype=torch.int64, device="maia")
    torch.sort(xm, dim=0, stable=True, out=(xm, indices))
    assert_bits_equal(xm, expected.values)


def test_argsort_and_msort():
    x = make((6, 9), torch.float32, ties=True)
    xm = x.to("maia")
    assert torch.equal(torch.argsort(xm, dim=1, stable=True).cpu(),
                       torch.argsort(x, dim=1, stable=True))
    assert torch.equal(torch.argsort(xm, dim=0, descending=True, stable=True).cpu(),
                       torch.argsort(x, dim=0, descending=True, stable=True))
    assert_bits_equal(torch.msort(xm), torch.msort(x))


def test_sort_errors_are_the_cpus():
    xm = torch.randn(3, 4, device="maia")
    with pytest.raises(IndexError, match="Dimension out of range"):
        torch.sort(xm, dim=2)
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype"):
        torch.sort(xm, out=(torch.empty(0, device="maia"), torch.empty(0, device="maia")))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_sort_backward(dtype):
    x = torch.randn(4, 6, dtype=torch.float64).to(dtype)
    grad = torch.randn(4, 6, dtype=torch.float64).to(dtype)
    xc = x.clone().requires_grad_()
    torch.sort(xc, dim=1, descending=True, stable=True).values.backward(grad)
    xm = x.to("maia").requires_grad_()
    torch.sort(xm, dim=1, descending=True, stable=True).values.backward(grad.to("maia"))
    assert torch.equal(xm.grad.cpu(), xc.grad)


TOPK_DTYPES = [d for d in ALL_DTYPES if d != torch.bool]


def assert_topk(x, k, dim, largest, sorted_, distinct):
    expected = torch.topk(x, k, dim=dim, largest=largest, sorted=sorted_)
    actual = torch.topk(x.to("maia"), k, dim=dim, largest=largest, sorted=sorted_)
    values, indices = actual.values.cpu(), actual.indices.cpu()
    assert values.shape == expected.values.shape and indices.dtype == torch.int64
    torch.testing.assert_close(x.gather(dim, indices), values, rtol=0, atol=0, equal_nan=True)
    if not sorted_:  # any order: compare as sets
        values = values.sort(dim, descending=largest).values
        expected_values = expected.values.sort(dim, descending=largest).values
    else:
        expected_values = expected.values
    torch.testing.assert_close(values, expected_values, rtol=0, atol=0, equal_nan=True)
    if distinct and sorted_:
        assert torch.equal(indices, expected.indices)


@pytest.mark.parametrize("dtype", TOPK_DTYPES, ids=str)
def test_topk_against_the_cpu(dtype):
    for shape in [(1,), (13,), (3, 200), (4, 5, 6)]:
        for ties in (False, True):
            x = make(shape, dtype, ties)
            distinct = x.flatten().unique().numel() == x.numel()
            for dim in range(-len(shape), len(shape)):
                n = shape[dim]
                # k * 64 <= n takes the CPU's partial sort, else its nth_element
                for k in sorted({0, 1, 2, n // 2, n} & set(range(n + 1))):
                    for largest in (True, False):
                        for sorted_ in (True, False):
                            assert_topk(x, k, dim, largest, sorted_, distinct)


def test_topk_of_strided_and_large_inputs():
    x = layout(torch.randn(50, 300), "sliced")
    for k in (3, 40):
        assert_topk(x, k, 1, True, True, True)
        assert_topk(x.t(), k, 0, False, True, True)
    x = torch.randn(256, 4096)  # several programs
    assert_topk(x, 5, 1, True, True, True)
    assert_topk(x, 3000, 1, False, True, True)


def test_topk_errors_and_edge_cases():
    xm = torch.randn(3, 4, device="maia")
    with pytest.raises(RuntimeError, match="k out of range"):
        torch.topk(xm, 5)
    with pytest.raises(RuntimeError, match="bool"):
        torch.topk(torch.ones(3, dtype=torch.bool, device="maia"), 1)
    values, indices = torch.topk(torch.tensor(4.0, device="maia"), 1)
    assert values.item() == 4.0 and indices.item() == 0
    values = torch.empty(0, device="maia")
    indices = torch.empty(0, dtype=torch.int64, device="maia")
    torch.topk(xm, 2, dim=0, out=(values, indices))
    expected = torch.topk(xm.cpu(), 2, dim=0)
    assert torch.equal(values.cpu(), expected.values)
    assert torch.equal(indices.cpu(), expected.indices)


def test_topk_backward():
    x = torch.randn(5, 30, dtype=torch.float64)
    grad = torch.randn(5, 4, dtype=torch.float64)
    xc = x.clone().requires_grad_()
    torch.topk(xc, 4, dim=1).values.backward(grad)
    xm = x.to("maia").requires_grad_()
    torch.topk(xm, 4, dim=1).values.backward(grad.to("maia"))
    assert torch.equal(xm.grad.cpu(), xc.grad)


def test_no_host_synchronization():
    """sort, topk and the other kernels of this change only enqueue: issued
    behind a kernel that blocks the stream until released, they return (a
    host synchronization would hang), and compute the CPU's results."""
    import torch.nn.functional as F
    from test_overlap import KERNEL_DIR, launch_wait_for_flag
    if not KERNEL_DIR:
        pytest.skip("MAIA_KERNEL_DIR (the built test kernels) is set by ctest")
    x = make((4, 6, 8), torch.float32, ties=True)
    w = torch.rand(6)
    ops = [lambda t, w: torch.sort(t, dim=1, stable=True).values,
           lambda t, w: torch.sort(t, dim=1, stable=True).indices,
           lambda t, w: torch.topk(t, 3).indices,
           lambda t, w: torch.flip(t, (0, 2)),
           lambda t, w: torch.roll(t, (1, -3), (0, 2)),
           lambda t, w: F.glu(t, 2),
           lambda t, w: torch.ops.aten.glu_backward(t[..., :4], t, 2),
           lambda t, w: F.prelu(t, w),
           lambda t, w: torch.ops.aten._prelu_kernel_backward(t, t, w.view(1, 6, 1))[1],
           lambda t, w: F.interpolate(t, size=11),
           lambda t, w: F.interpolate(t, size=11, mode="linear"),
           lambda t, w: torch.ops.aten.upsample_linear1d_backward(t, [8], [4, 6, 4], False),
           lambda t, w: torch.ops.aten.upsample_nearest1d_backward(t, [8], [4, 6, 4])]
    xm, wm = x.to("maia"), w.to("maia")
    blocked, release = torch.maia.Stream(), torch.maia.Stream()
    flag = torch.zeros(1, dtype=torch.int32, device="maia")
    torch.maia.synchronize()
    with torch.maia.stream(blocked):
        launch_wait_for_flag(flag, blocked)
        results = [op(xm, wm) for op in ops]
        assert not blocked.query()
    with torch.maia.stream(release):
        flag.copy_(torch.ones(1, dtype=torch.int32).pin_memory(), non_blocking=True)
    blocked.synchronize()
    for op, actual in zip(ops, results):
        torch.testing.assert_close(actual.cpu(), op(x, w), equal_nan=True)


# kthvalue, median/nanmedian along a dim and mode pick one value and index per
# slice by the CPU's own selection steps: among ties the very index the CPU
# returns, NaN where it puts it. Slices of 1..70 elements cover the
# quickselect's base cases and std::sort's insertion-sort/introsort switch.
SELECT_DTYPES = [d for d in ALL_DTYPES if d != torch.bool]
SELECT_SHAPES = [(1,), (2,), (3,), (17,), (6, 33), (3, 70), (2, 3, 4, 5)]
SELECT_OPS = {
    "kthvalue": lambda x, dim, keepdim: torch.kthvalue(x, (x.size(dim) + 1) // 2 if x.dim() else 1,
                                                       dim, keepdim),
    "kthvalue_last": lambda x, dim, keepdim: torch.kthvalue(x, x.size(dim) if x.dim() else 1,
                                                            dim, keepdim),
    "median": lambda x, dim, keepdim: torch.median(x, dim, keepdim),
    "nanmedian": lambda x, dim, keepdim: torch.nanmedian(x, dim, keepdim),
    "mode": lambda x, dim, keepdim: torch.mode(x, dim, keepdim),
}


def assert_selection_matches(fn, x, dim, keepdim):
    expected = fn(x, dim, keepdim)
    torch.maia.reset_fallback_counts()
    actual = fn(x.to("maia"), dim, keepdim)
    assert torch.maia.fallback_counts() == {}, torch.maia.fallback_counts()
    assert_bits_equal(actual.values, expected.values)
    assert torch.equal(actual.indices.cpu(), expected.indices)


@pytest.mark.parametrize("op", SELECT_OPS)
@pytest.mark.parametrize("dtype", SELECT_DTYPES, ids=str)
@pytest.mark.parametrize("shape", SELECT_SHAPES, ids=str)
def test_selection_is_the_cpus_with_ties(op, dtype, shape):
    torch.manual_seed(len(shape) * 100 + shape[-1])
    for ties in (True, False):
        x = make(shape, dtype, ties=ties)
        for dim in range(-1, len(shape) - 1):
            assert_selection_matches(SELECT_OPS[op], x, dim, keepdim=dim == 0)


@pytest.mark.parametrize("op", SELECT_OPS)
def test_selection_of_strided_inputs_scalars_and_all_nan(op):
    fn = SELECT_OPS[op]
    x = make((5, 40), torch.float32, ties=True)
    for kind in ("transposed", "sliced"):
        assert_selection_matches(fn, layout(x, kind), 1, False)
    assert_selection_matches(fn, torch.tensor(2.5), 0, False)
    assert_selection_matches(fn, torch.full((3, 25), float("nan")), 1, True)


def test_mode_of_bool_and_selection_errors():
    assert_selection_matches(SELECT_OPS["mode"], make((4, 30), torch.bool), 1, False)
    cases = [lambda t: torch.kthvalue(t, 9, 0), lambda t: torch.kthvalue(t, 0, 0),
             lambda t: torch.median(t[:0], 0), lambda t: torch.mode(t[:0], 0),
             lambda t: torch.kthvalue(t.bool(), 1, 0), lambda t: torch.median(t.bool(), 0)]
    t = torch.rand(4, 3)
    for case in cases:
        with pytest.raises((RuntimeError, IndexError, NotImplementedError)) as cpu_error:
            case(t)
        with pytest.raises(type(cpu_error.value), match=re.escape(str(cpu_error.value))):
            case(t.to("maia"))


def test_selection_out_variants():
    x = make((4, 9), torch.float64, ties=True)
    values = torch.empty(0, dtype=torch.float64, device="maia")
    indices = torch.empty(0, dtype=torch.long, device="maia")
    torch.kthvalue(x.to("maia"), 3, 1, out=(values, indices))
    expected = torch.kthvalue(x, 3, 1)
    assert_bits_equal(values, expected.values)
    assert torch.equal(indices.cpu(), expected.indices)
    torch.mode(x.to("maia"), 0, keepdim=True, out=(values, indices))
    expected = torch.mode(x, 0, keepdim=True)
    assert_bits_equal(values, expected.values)
    assert torch.equal(indices.cpu(), expected.indices)
