"""OpInfo sweep of the native reductions (runtime/torch/csrc/ops/Reduction.cpp on the
reduce kernel binary): PyTorch's own sample inputs (op_db) run on maia and on the CPU,
compared with torch.testing.assert_close, for every dtype maia supports; gradients in
float32/float64. Each (op, dtype) must run without the host fallback. Then targeted
cases: non-contiguous and permuted inputs, reductions over non-adjacent dims, empty
tensors (identities and errors), 0-d tensors, out= variants, NaN and tie rules of the
index reductions, large inputs that take several programs."""

import math

import pytest
import torch
from torch.testing._internal.common_methods_invocations import op_db

from opinfo_support import (LOW_PRECISION_TOLERANCES, assert_close_tree, cases,
                            check_forward_samples, check_gradient_samples, forbid_fallback,
                            to_maia)

# (op_db name, variant_test_name)
NATIVE = [
    ("sum", ""), ("mean", ""), ("prod", ""), ("amax", ""), ("amin", ""),
    ("max", "reduction_with_dim"), ("max", "reduction_no_dim"),
    ("min", "reduction_with_dim"), ("min", "reduction_no_dim"),
    ("argmax", ""), ("argmin", ""), ("var", ""), ("var", "unbiased"), ("std", ""),
    ("std", "unbiased"), ("var_mean", ""), ("var_mean", "unbiased"), ("std_mean", ""),
    ("std_mean", "unbiased"), ("linalg.vector_norm", ""), ("norm", ""), ("norm", "fro"),
    ("norm", "inf"), ("any", ""), ("all", ""), ("cumsum", ""), ("cumprod", ""), ("dist", ""),
    ("nansum", ""), ("nanmean", ""), ("cummax", ""), ("cummin", ""),
]
# norm.nuc is the nuclear norm (a sum of singular values from svd), not a vector norm:
# it does not go through linalg_vector_norm and stays on the host fallback.
SKIPPED = {("norm", "nuc"): "nuclear norm: svd, not a reduction kernel (host fallback)"}

# out= samples write through the functional result (covered by test_out_variants below).
UNSUPPORTED_SAMPLE_KWARGS = {"out"}

OPS = [op for op in op_db if (op.name, op.variant_test_name) in NATIVE]

# Half-precision results: maia accumulates in float32 and rounds once, as the CPU's
# reduction kernels do, but mean on the CPU rounds the sum to the storage type before
# dividing and the float32 accumulation order differs: PyTorch's own device-vs-CPU
# tolerances for float16, one bfloat16 ulp (2^-7 relative) for bfloat16.
# float32: maia sums with 16 interleaved accumulators, the CPU with its cascade sum; the
# rounding differs by a few ulps of the partial sums (default float32 tolerances, 1e-5
# absolute, cover the op_db samples).
TOLERANCES = LOW_PRECISION_TOLERANCES


def tolerances(dtype):
    return TOLERANCES.get(dtype, {})


@pytest.mark.parametrize("op,dtype", list(cases(OPS)))
def test_matches_cpu(op, dtype):
    check_forward_samples(op, dtype, UNSUPPORTED_SAMPLE_KWARGS, tolerances(dtype),
                          lambda before, sample: forbid_fallback(before, op.name))


def test_skipped_variants_are_stated():
    names = {(op.name, op.variant_test_name) for op in op_db}
    for key, reason in SKIPPED.items():
        assert key in names and reason


GRAD_OPS = [op for op in OPS if op.supports_autograd]


@pytest.mark.parametrize("op", GRAD_OPS, ids=lambda op: f"{op.name}.{op.variant_test_name}")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_gradients_match_cpu(op, dtype):
    check_gradient_samples(op, dtype, UNSUPPORTED_SAMPLE_KWARGS, upstream=torch.ones_like)


# ---------------------------------------------------------------- targeted cases

def check(fn, *inputs, **tol):
    expected = fn(*inputs)
    before = torch.maia.fallback_counts()
    actual = fn(*[to_maia(x) for x in inputs])
    forbid_fallback(before, "reduction")
    assert_close_tree(actual, expected, None, **tol)


FUNCTIONS = {
    "sum": lambda x, d, k: x.sum(d, keepdim=k),
    "mean": lambda x, d, k: x.mean(d, keepdim=k),
    "amax": lambda x, d, k: x.amax(d, keepdim=k),
    "amin": lambda x, d, k: x.amin(d, keepdim=k),
    "var": lambda x, d, k: x.var(d, keepdim=k, correction=0),
    "std": lambda x, d, k: x.std(d, keepdim=k),
    "norm2": lambda x, d, k: torch.linalg.vector_norm(x, 2, d, keepdim=k),
    "norm1": lambda x, d, k: torch.linalg.vector_norm(x, 1, d, keepdim=k),
    "norminf": lambda x, d, k: torch.linalg.vector_norm(x, math.inf, d, keepdim=k),
    "norm3": lambda x, d, k: torch.linalg.vector_norm(x, 3.5, d, keepdim=k),
    "any": lambda x, d, k: (x > 0.5).any(d, keepdim=k),
    "all": lambda x, d, k: (x > -0.5).all(d, keepdim=k),
}
LAYOUTS = {
    "contiguous": lambda: torch.randn(4, 5, 6, 7, dtype=torch.float64),
    "transposed": lambda: torch.randn(7, 5, 6, 4, dtype=torch.float64).transpose(0, 3),
    "sliced": lambda: torch.randn(8, 5, 12, 7, dtype=torch.float64)[::2, :, ::2],
    "expanded": lambda: torch.randn(1, 5, 6, 1, dtype=torch.float64).expand(4, 5, 6, 7),
}


@pytest.mark.parametrize("name", list(FUNCTIONS))
@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("dims", [(0,), (3,), (1, 2), (0, 2), (0, 3), (1, 3), (0, 1, 2, 3), (-1, 0, 2)])
def test_dims_and_layouts(name, layout, dims):
    torch.manual_seed(0)
    x = LAYOUTS[layout]()
    for keepdim in (False, True):
        check(lambda t: FUNCTIONS[name](t, dims, keepdim), x)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int32,
                                   torch.int64, torch.uint8, torch.bool])
def test_large_multi_program(dtype):
    torch.manual_seed(0)
    # 2^20 elements: split across programs; rows of 4096 and columns of 256.
    x = (torch.randn(256, 4096) * 4).to(dtype)
    # float32 sums of 2^20 terms: another summation order than the CPU's cascade sum.
    tol = {torch.float32: dict(atol=1e-3, rtol=1e-5)}.get(dtype, tolerances(dtype))
    check(lambda t: t.sum(), x, **tol)
    check(lambda t: t.sum(0), x, **tol)
    check(lambda t: t.sum(1), x, **tol)
    check(lambda t: t.amax(1), x)
    if dtype != torch.bool:  # argmax refuses bool (test_index_rules checks maia refuses too)
        check(lambda t: t.argmax(0), x)
    check(lambda t: t.cumsum(1), x, **tol)
    if dtype.is_floating_point:
        check(lambda t: t.float().var(1), x, atol=1e-3, rtol=1e-5)
        check(lambda t: torch.linalg.vector_norm(t.float(), 2, 0), x, atol=1e-3, rtol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int32, torch.int64])
def test_one_value_from_a_long_line(dtype):
    # A long line reduced to one value is split over the cores, then the partial
    # results are reduced: odd lengths (a remainder part), strided, 2-D and
    # transposed inputs, NaN propagation through the partials.
    torch.manual_seed(0)
    n = 3 * (1 << 17) + 5
    base = torch.randn(2 * n) * 4
    if not dtype.is_floating_point:
        base = base.round()
    x = base.to(dtype)
    tol = dict(atol=1e-2, rtol=1e-5) if dtype == torch.float32 else {}
    for view in (lambda t: t[:n], lambda t: t[::2], lambda t: t[: 1024 * 384].view(1024, 384),
                 lambda t: t[: 1024 * 384].view(384, 1024).t()):
        check(lambda t: view(t).sum(), x, **tol)
        check(lambda t: view(t).amax(), x)
        check(lambda t: view(t).amin(), x)
        check(lambda t: view(t).sum(dim=tuple(range(view(t).dim())), keepdim=True), x, **tol)
    # prod over values whose product stays finite and exact in the dtype
    ones = torch.ones(n, dtype=dtype)
    ones[::40000] = 2
    ones[17::50000] = -1
    check(lambda t: t.prod(), ones)
    if dtype.is_floating_point:
        with_nan = x.clone()
        with_nan[n - 1] = float("nan")  # the remainder part (n is odd)
        check(lambda t: t[:n].amax(), with_nan)
        with_nan[5] = float("nan")  # in the first part
        check(lambda t: t[:n].amin(), with_nan)


def test_empty():
    e = torch.empty(0, 3)
    check(lambda t: t.sum(), e)
    check(lambda t: t.sum(0), e)
    check(lambda t: t.prod(0), e)
    check(lambda t: t.mean(0), e)
    check(lambda t: t.var(0), e)
    check(lambda t: t.any(0), e)
    check(lambda t: t.all(0), e)
    check(lambda t: t.amax(1), e)
    check(lambda t: t.cumsum(0), e)
    check(lambda t: torch.linalg.vector_norm(t, 2, 0), e)
    m = e.to("maia")
    with pytest.raises(IndexError):
        m.amax(0)
    with pytest.raises(RuntimeError):
        m.amax()
    with pytest.raises(RuntimeError):
        m.max()
    with pytest.raises(IndexError):
        m.max(0)
    with pytest.raises(IndexError):
        m.argmax()
    with pytest.raises(RuntimeError):
        torch.linalg.vector_norm(m, math.inf)
    with pytest.raises(RuntimeError):
        torch.ones(2, dtype=torch.bool, device="maia").argmax()


def test_zero_dim():
    x = torch.tensor(2.5)
    for fn in (lambda t: t.sum(), lambda t: t.sum(0), lambda t: t.amax(-1, keepdim=True),
               lambda t: t.max(0), lambda t: t.argmin(), lambda t: t.var(0, correction=0),
               lambda t: t.cumsum(0), lambda t: t.prod(), lambda t: t.any(),
               lambda t: torch.linalg.vector_norm(t), lambda t: t.mean()):
        check(fn, x)


def test_index_rules():
    nan = float("nan")
    x = torch.tensor([[1.0, 3.0, 3.0, nan, 2.0, nan], [0.0, -1.0, -1.0, 5.0, 5.0, 0.0]])
    for fn in (lambda t: t.argmax(1), lambda t: t.argmin(1), lambda t: t.max(1),
               lambda t: t.min(1), lambda t: t.amax(1), lambda t: t.amin(0), lambda t: t.max(),
               lambda t: t.argmax(), lambda t: t.argmax(keepdim=True),
               lambda t: torch.linalg.vector_norm(t, math.inf, 1)):
        check(fn, x)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
def test_index_rules_long_lines(dtype):
    # Lines long enough for the vectorized float32 max/min path (then a scan for the first
    # occurrence): ties, a NaN in the middle, signed zeros, infinities.
    torch.manual_seed(0)
    x = torch.randint(-3, 4, (4, 1000)).to(dtype)
    x[1, 517] = float("nan")
    x[1, 800] = float("nan")
    x[2] = 0.0
    x[2, 10] = -0.0
    x[3, 300] = float("inf")
    x[3, 301] = -float("inf")
    for fn in (lambda t: t.argmax(1), lambda t: t.argmin(1), lambda t: t.max(1),
               lambda t: t.min(1), lambda t: t.amax(1), lambda t: t.amin(1), lambda t: t.max(),
               lambda t: t.min(), lambda t: t[0].argmax(), lambda t: t[::2].argmin(1)):
        check(fn, x)


def test_dtype_rules():
    x = torch.tensor([[100, 100, 100]], dtype=torch.int8)
    check(lambda t: t.sum(), x)  # int64 accumulation and result
    check(lambda t: t.sum(1, dtype=torch.int8), x)
    check(lambda t: t.prod(1), x)
    check(lambda t: t.cumsum(1), x)
    check(lambda t: t.mean(1, dtype=torch.float32), x)
    check(lambda t: t.float().half().sum(dtype=torch.float32), x)
    check(lambda t: torch.linalg.vector_norm(t.float(), dtype=torch.float64), x)
    check(lambda t: t.to(torch.uint8).any(1), x)
    check(lambda t: t.bool().sum(1), x)
    with pytest.raises(RuntimeError):
        x.to("maia").mean()
    with pytest.raises(RuntimeError):
        x.to("maia").var()


def test_out_variants():
    torch.manual_seed(0)
    x = torch.randn(4, 6)
    m = x.to("maia")
    for fn in (lambda t, o: torch.sum(t, 1, out=o), lambda t, o: torch.mean(t, 0, out=o),
               lambda t, o: torch.amax(t, 1, out=o), lambda t, o: torch.cumsum(t, 1, out=o),
               lambda t, o: torch.var(t, 1, out=o), lambda t, o: torch.std(t, 1, out=o),
               lambda t, o: torch.prod(t, 1, out=o),
               lambda t, o: torch.linalg.vector_norm(t, 2, 1, out=o)):
        expected = fn(x, torch.empty(0))
        out = torch.empty(0, device="maia")
        before = torch.maia.fallback_counts()
        result = fn(m, out)
        forbid_fallback(before, "out=")
        assert result is out
        torch.testing.assert_close(out.cpu(), expected)
    values, indices = torch.empty(0, device="maia"), torch.empty(0, dtype=torch.long, device="maia")
    torch.max(m, 1, out=(values, indices))
    torch.testing.assert_close(values.cpu(), x.max(1).values)
    torch.testing.assert_close(indices.cpu(), x.max(1).indices)
    out = torch.empty(0, dtype=torch.long, device="maia")
    torch.argmax(m, 1, out=out)
    torch.testing.assert_close(out.cpu(), x.argmax(1))
    out = torch.empty(0, dtype=torch.bool, device="maia")
    torch.any(m > 0, 1, out=out)
    torch.testing.assert_close(out.cpu(), (x > 0).any(1))


@pytest.mark.parametrize("scan", ["cumsum", "cumprod"])
def test_scans_inplace_and_dims(scan):
    torch.manual_seed(0)
    x = torch.randn(3, 4, 5).transpose(0, 2)
    for d in range(-3, 3):
        check(lambda t: getattr(t, scan)(d), x)
    m = x.to("maia").contiguous()
    getattr(m, scan + "_")(1)
    torch.testing.assert_close(m.cpu(), getattr(x, scan)(1))


@pytest.mark.parametrize("scan", ["cummax", "cummin"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.bool])
def test_cummax_cummin_ties_nans_dims_and_out(scan, dtype):
    """Ties take the later index, a NaN is kept until the next NaN (as on the CPU), every dim of
    a strided input with rows longer than a block, and out= tensors that are not contiguous."""
    torch.manual_seed(0)
    x = torch.randint(-3, 4, (40, 7, 33)).to(dtype).transpose(0, 2)
    if dtype.is_floating_point:
        x[5, 2, ::3] = float("nan")
        x[9, 4, 1::5] = float("nan")
    before = torch.maia.fallback_counts()
    for d in range(-3, 3):
        values, indices = getattr(x.to("maia"), scan)(d)
        expected = getattr(x, scan)(d)
        torch.testing.assert_close(values.cpu(), expected.values, equal_nan=True)
        torch.testing.assert_close(indices.cpu(), expected.indices)
    forbid_fallback(before, scan)
    values = torch.empty(33, 7, 80, dtype=dtype, device="maia")[..., ::2]
    indices = torch.empty(33, 7, 80, dtype=torch.long, device="maia")[..., ::2]
    getattr(torch, scan)(x.to("maia"), 1, out=(values, indices))
    expected = getattr(x, scan)(1)
    torch.testing.assert_close(values.cpu(), expected.values, equal_nan=True)
    torch.testing.assert_close(indices.cpu(), expected.indices)


@pytest.mark.parametrize("shape,dim", [((100000, 4), 0), ((4, 100000), 1), ((200000,), 0),
                                       ((3000, 70, 3), (0, 2))])
@pytest.mark.parametrize("op", ["sum", "mean", "norm"])
def test_long_float32_sums_are_as_accurate_as_the_cpus(shape, dim, op):
    """Sums add in a cascade, as the CPU's do (tools/fuzz --eager found a
    linear's bias gradient, a 2050-row column sum, 4e-4 off): one chain of
    adds per column put a 100000-row float32 sum 1.66 from the exact one
    (the CPU's: 0.04, ulp 0.03)."""
    torch.manual_seed(0)
    x = torch.randn(shape) + 3
    reduce = {"sum": lambda t: t.sum(dim), "mean": lambda t: t.mean(dim),
              "norm": lambda t: torch.linalg.vector_norm(t, dim=dim)}[op]
    exact = reduce(x.double())
    cpu_error = (reduce(x).double() - exact).abs().max().item()
    maia_error = (reduce(x.to("maia")).cpu().double() - exact).abs().max().item()
    ulp = torch.finfo(torch.float32).eps * exact.abs().max().item()
    assert maia_error <= 4 * max(cpu_error, ulp), (maia_error, cpu_error, ulp)
