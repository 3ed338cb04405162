"""Compiled math on maia meets eager accuracy over the whole domain.

Each float op the plugin lowers is compiled on maia and run on a dense sweep
of its domain, edges included (a linear sweep of the interesting range, a
sweep of every binade of float32 from subnormals to the largest finite value,
both signs, and ±0, ±1, ±inf, nan, domain edges). The result is compared with
a float64 reference rounded to the output type, in ULP (distance between
the bit patterns read as ordered integers), and so is eager CPU's. Compiled
maia must satisfy  maia_ulp <= max(cpu_ulp, BOUND[op]):  never worse than
eager CPU, or within a small stated bound of the correctly rounded result
(1 ulp for all but the three ops whose eager results are far worse).
NaN where the reference is not NaN (or the converse) counts as an infinite
error.
"""

import math
import pathlib
import sys

import pytest
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tools" / "conformance"))
from math_ulp_sweep import BITS, HUGE_ERROR, ulp_distance  # noqa: E402

INF, NAN = float("inf"), float("nan")


def test_ulp_distance_helper():
    one = torch.tensor([1.0])
    next_up = torch.nextafter(one, torch.tensor([2.0]))
    assert ulp_distance(one, next_up).item() == 1
    assert ulp_distance(torch.tensor([0.0]), torch.tensor([-0.0])).item() == 0
    tiny = torch.tensor([1e-45])  # the smallest subnormal, on both sides of 0
    assert ulp_distance(tiny, -tiny).item() == 2
    assert ulp_distance(torch.tensor([NAN]), torch.tensor([NAN])).item() == 0
    assert ulp_distance(torch.tensor([NAN]), one).item() == HUGE_ERROR
    h = torch.tensor([1.0], dtype=torch.bfloat16)
    assert ulp_distance(h, torch.tensor([1.0078125], dtype=torch.bfloat16)).item() == 1


def sweep(lo, hi, dtype=torch.float32, n=1 << 16):
    """n/2 points evenly over [lo, hi], n/2 points evenly over the bit
    patterns of every finite value of dtype (every binade, both signs,
    subnormals and the largest values included), and the special values."""
    int_dtype, width = BITS[dtype]
    linear = torch.linspace(lo, hi, n // 2, dtype=torch.float64).to(dtype)
    max_finite = torch.finfo(dtype).max
    top = torch.tensor([max_finite], dtype=dtype).view(int_dtype).to(torch.int64).item()
    patterns = torch.linspace(0, top, n // 4, dtype=torch.float64).round().to(torch.int64)
    positive = patterns.to(int_dtype).view(dtype)
    specials = torch.tensor([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, lo, hi, INF, -INF, NAN,
                             max_finite, -max_finite, torch.finfo(dtype).tiny,
                             torch.finfo(dtype).smallest_normal / 2, math.pi / 2, math.pi,
                             -math.pi / 2, 1e-30, -1e-30, 1e30, -1e30],
                            dtype=torch.float64).to(dtype)
    edges = torch.cat([torch.nextafter(specials, torch.full_like(specials, INF)),
                       torch.nextafter(specials, torch.full_like(specials, -INF))])
    return torch.cat([linear, positive, -positive, specials, edges])


# op: (interesting range for the linear sweep, ULP bound).
# The bound is what maia must reach when eager CPU is less accurate; where
# eager is within 1 ulp, maia must be too. sinh and cosh are 2 ulp near
# overflow (eager loses millions there), and sigmoid follows eager, which
# flushes near the subnormals.
OPS = {
    "sin": ((-10.0, 10.0), 1), "cos": ((-10.0, 10.0), 1), "tan": ((-10.0, 10.0), 1),
    "asin": ((-1.0, 1.0), 1), "acos": ((-1.0, 1.0), 1), "atan": ((-10.0, 10.0), 1),
    "sinh": ((-90.0, 90.0), 2), "cosh": ((-90.0, 90.0), 2), "tanh": ((-10.0, 10.0), 1),
    "asinh": ((-10.0, 10.0), 1), "acosh": ((0.5, 10.0), 1), "atanh": ((-1.0, 1.0), 1),
    "exp": ((-104.0, 89.0), 1), "exp2": ((-150.0, 128.0), 1), "expm1": ((-20.0, 89.0), 1),
    "log": ((0.0, 10.0), 1), "log2": ((0.0, 10.0), 1), "log10": ((0.0, 10.0), 1),
    "log1p": ((-1.0, 10.0), 1), "sqrt": ((0.0, 10.0), 0), "rsqrt": ((0.0, 10.0), 1),
    "erf": ((-5.0, 5.0), 1), "erfc": ((-5.0, 11.0), 1), "sigmoid": ((-90.0, 90.0), 3),
}


def _compiled(fn, x):
    torch._dynamo.reset()
    return torch.compile(fn)(x.to("maia")).cpu()


def _worst(err, x):
    i = int(err.argmax())
    return f"{int(err[i])} ulp at x={x[i].item()!r}"


@pytest.mark.parametrize("name", sorted(OPS))
def test_float32_ulp(name):
    (lo, hi), bound = OPS[name]
    fn = getattr(torch, name)
    x = sweep(lo, hi)
    reference = fn(x.double()).to(torch.float32)
    cpu_err = ulp_distance(fn(x), reference)
    maia = _compiled(fn, x)
    maia_err = ulp_distance(maia, reference)
    limit = max(int(cpu_err.max()), bound)
    assert int(maia_err.max()) <= limit, (
        f"{name}: maia {_worst(maia_err, x)} (got {maia[int(maia_err.argmax())].item()!r}, "
        f"expected {reference[int(maia_err.argmax())].item()!r}); cpu {_worst(cpu_err, x)}; "
        f"bound {limit}")


@pytest.mark.parametrize("name", ["sin", "cos", "tan"])
def test_trigonometry_near_multiples_of_half_pi(name):
    # The hardest arguments of the range reduction: the floats nearest to
    # k pi/2 (and their neighbours) up to where libm takes over (2^17),
    # and a few beyond, mixed in the same vectors.
    k = torch.arange(1, 83500, dtype=torch.float64)
    near = torch.cat([(k * math.pi / 2), (k[::97] * 1e5 * math.pi / 2)]).to(torch.float32)
    x = torch.cat([near, torch.nextafter(near, near + 1), torch.nextafter(near, near - 1)])
    x = torch.cat([x, -x])
    fn = getattr(torch, name)
    reference = fn(x.double()).to(torch.float32)
    cpu_err = ulp_distance(fn(x), reference)
    maia_err = ulp_distance(_compiled(fn, x), reference)
    limit = max(int(cpu_err.max()), OPS[name][1])
    assert int(maia_err.max()) <= limit, f"{name}: maia {_worst(maia_err, x)}; bound {limit}"


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("name", ["exp", "log", "sin", "tanh", "erf", "asin", "sinh",
                                  "erfc", "sigmoid", "atan"])
def test_half_precision_ulp(name, dtype):
    # Half types compute in float32 and round once: within 1 ulp of the
    # correctly rounded result, or as good as eager CPU.
    (lo, hi), _ = OPS[name]
    fn = getattr(torch, name)
    x = sweep(max(lo, -60000.0), min(hi, 60000.0), dtype, n=1 << 14)
    reference = fn(x.double()).to(dtype)
    cpu_err = ulp_distance(fn(x), reference)
    maia_err = ulp_distance(_compiled(fn, x), reference)
    assert int(maia_err.max()) <= max(int(cpu_err.max()), 1), (
        f"{name} {dtype}: maia {_worst(maia_err, x)}; cpu {_worst(cpu_err, x)}")


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.float32])
def test_atan2_signed_zeros_and_integers(dtype):
    # Integers promote to float32; atan2(0, 0) is 0 (not NaN) as in C.
    y = torch.tensor([0, 0, 1, -1, 0, 5, -5, 3, -7], dtype=dtype)
    x = torch.tensor([0, 1, 0, 0, -1, 5, -5, -3, 2], dtype=dtype)
    expected = torch.atan2(y, x)
    torch._dynamo.reset()
    actual = torch.compile(torch.atan2)(y.to("maia"), x.to("maia")).cpu()
    assert actual.dtype == expected.dtype
    assert ulp_distance(actual, expected).max().item() <= 2, (actual, expected)


def test_atan2_float32_ulp():
    g = torch.Generator().manual_seed(0)
    y = sweep(-10.0, 10.0, n=1 << 12)
    x = y[torch.randperm(y.numel(), generator=g)]
    y, x = y.repeat(4), torch.cat([x, x.flip(0), -x, x.roll(7)])
    reference = torch.atan2(y.double(), x.double()).to(torch.float32)
    cpu_err = ulp_distance(torch.atan2(y, x), reference)
    torch._dynamo.reset()
    maia = torch.compile(torch.atan2)(y.to("maia"), x.to("maia")).cpu()
    maia_err = ulp_distance(maia, reference)
    i = int(maia_err.argmax())
    assert int(maia_err.max()) <= max(int(cpu_err.max()), 3), (
        f"atan2: maia {int(maia_err[i])} ulp at y={y[i].item()!r} x={x[i].item()!r}")


def test_asin_acos_at_plus_minus_one():
    x = torch.tensor([-1.0, 1.0, -0.99999994, 0.99999994, -0.9999, 0.9999])
    for fn in (torch.asin, torch.acos):
        torch._dynamo.reset()
        actual = torch.compile(fn)(x.to("maia")).cpu()
        torch.testing.assert_close(actual, fn(x), atol=2.4e-7, rtol=0)  # 2 ulp at pi/2


def test_float64_erfc_is_as_accurate_as_eager():
    # MLIR 19 has no math.erfc: float64 calls libm lane by lane (the float32
    # approximation would be off by ~1e9 float64 ulp).
    x = torch.cat([torch.linspace(-6.0, 28.0, 20001, dtype=torch.float64),
                   torch.tensor([0.0, -0.0, INF, -INF, NAN, 1e-300, 26.5, 27.3],
                                dtype=torch.float64)])
    maia = _compiled(torch.erfc, x)
    cpu = torch.erfc(x)
    finite = cpu.isfinite() & (cpu != 0)
    torch.testing.assert_close(maia[~finite], cpu[~finite], equal_nan=True, rtol=0, atol=0)
    spacing = torch.nextafter(cpu[finite].abs(), torch.tensor(INF, dtype=torch.float64)) - \
        cpu[finite].abs()
    assert int(((maia[finite] - cpu[finite]).abs() / spacing).max()) <= 4
