"""The torch.special functions computed by the eager kernel binary
(runtime/kernels/eager/bessel_ops.h, normal_ops.h, gamma_ops.h): Bessel J, Y,
K, spherical j0, Airy Ai, erfcx, log_ndtr, ndtri, zeta, polygamma, igamma and
igammac. Values against mpmath (test/python/exact_reference.py) where the
CPU's own float64 results are off by up to ~1e-6; the special values, dtype
rules and errors against the CPU exactly."""

import math

import pytest
import torch
from exact_reference import exact
from opinfo_support import LOW_PRECISION_TOLERANCES

S = torch.special
INF, NAN = math.inf, math.nan
SPECIAL_VALUES = [-INF, -30.0, -5.0, -1e-300, -0.0, 0.0, 1e-300, 1e-8, 0.5, 2.0, 5.0, 25.0,
                  800.0, 1e10, INF, NAN]
UNARY = ["bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_k0",
         "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
         "spherical_bessel_j0", "airy_ai", "erfcx", "log_ndtr", "ndtri"]


def native(fn, *args):
    """fn on maia copies of args (tensors), checked not to use the host fallback."""
    torch.maia.reset_fallback_counts()
    result = fn(*[a.to("maia") if isinstance(a, torch.Tensor) else a for a in args])
    assert torch.maia.fallback_counts() == {}
    return result.cpu()


def grid(name):
    """Arguments across every branch of the implementations: dense in
    [-40, 40] (the Bessel/Airy range boundaries at 5, 8, 2.09, 1, 25) and
    logarithmic out to 1e3; probabilities for ndtri down to 1e-300."""
    if name == "ndtri":
        return torch.cat([torch.linspace(0, 1, 501, dtype=torch.float64)[1:-1],
                          torch.logspace(-300, -1, 150, dtype=torch.float64),
                          1 - torch.logspace(-16, -1, 60, dtype=torch.float64)])
    magnitudes = torch.logspace(-10, 3, 120, dtype=torch.float64)
    return torch.cat([torch.linspace(-40, 40, 481, dtype=torch.float64), magnitudes, -magnitudes])


@pytest.mark.parametrize("name", UNARY)
def test_float64_matches_exact_values(name):
    x = grid(name)
    actual = native(getattr(S, name), x)
    reference = exact(f"special.{name}", x)
    finite = reference.isfinite()
    # Relative 1e-13, and absolute 1e-13 times the condition of the phase:
    # near the zeros of J, Y and Ai the value is a difference of O(1) terms,
    # and Ai(-x)'s phase 2/3 x^1.5 carries its rounding (~x^1.5 ulps).
    error = (actual - reference)[finite].abs()
    bound = 1e-13 * reference[finite].abs() + 1e-13 * (1 + x[finite].abs() ** 1.5)
    assert (error <= bound).all(), (x[finite][error > bound], error[error > bound])


@pytest.mark.parametrize("name", ["bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "airy_ai"])
def test_where_the_cpu_differs_maia_is_the_exact_one(name):
    # ATen's float64 J/Y lose ~1e-7 absolute near x = 5, its Ai ~3e-6 near
    # -2.09 (range boundaries of their rational approximations).
    x = torch.linspace(-12, 12, 4801, dtype=torch.float64)
    cpu, maia = getattr(S, name)(x), native(getattr(S, name), x)
    differ = ~torch.isclose(maia, cpu, rtol=1e-7, atol=1e-7, equal_nan=True)
    assert differ.any(), "the CPU became exact: compare with it directly"
    reference = exact(f"special.{name}", x[differ])
    assert ((maia[differ] - reference).abs() < (cpu[differ] - reference).abs()).all()


@pytest.mark.parametrize("name", UNARY)
def test_float32_is_the_rounded_exact_value(name):
    x = grid(name).float()
    actual = native(getattr(S, name), x)
    assert actual.dtype == torch.float32
    reference = exact(f"special.{name}", x.double()).float()
    finite = reference.isfinite()
    torch.testing.assert_close(actual[finite], reference[finite], rtol=2e-7, atol=1e-30)


@pytest.mark.parametrize("name", UNARY)
def test_special_values_dtypes_and_errors_as_the_cpu(name):
    fn = getattr(S, name)
    for dtype in (torch.float64, torch.float32):
        x = torch.tensor(SPECIAL_VALUES + [-1.0, 1.0, 1.5], dtype=dtype)
        expected, actual = fn(x), native(fn, x)
        special = ~expected.isfinite() | (expected == 0)
        torch.testing.assert_close(actual[special], expected[special], equal_nan=True,
                                   rtol=0, atol=0)
    for dtype in (torch.int64, torch.bool, torch.uint8):  # promoted to float32
        x = torch.arange(-3, 5).to(dtype) if dtype == torch.int64 else torch.ones(4, dtype=dtype)
        actual = native(fn, x)
        assert actual.dtype == torch.float32
        torch.testing.assert_close(actual, fn(x), equal_nan=True)
    out = torch.empty(3, dtype=torch.float64, device="maia")
    fn(torch.tensor([0.25, 0.5, 0.75], dtype=torch.float64, device="maia"), out=out)
    torch.testing.assert_close(out.cpu(), fn(torch.tensor([0.25, 0.5, 0.75], dtype=torch.float64)))
    for dtype in (torch.float16, torch.bfloat16):
        with pytest.raises(NotImplementedError, match=f'"{name}_cpu" not implemented for'):
            fn(torch.ones(2, dtype=dtype, device="maia"))


@pytest.mark.parametrize("fn,name", [(torch.igamma, "igamma"), (torch.igammac, "igammac")])
def test_incomplete_gamma(fn, name):
    # Tiny a, where Q = 1 - P would cancel (the CPU's Q(1e-300, 1e-300) is
    # 9e-4 off), and a up to 1e3 (near x = a the prefactor loses ~a ulps).
    points = torch.cat([torch.tensor([1e-300, 1e-20, 1e-5, 0.09, 0.11], dtype=torch.float64),
                        torch.logspace(-3, 3, 40, dtype=torch.float64)])
    a, x = torch.meshgrid(points, points, indexing="ij")
    torch.testing.assert_close(native(fn, a, x), exact(name, a, x), rtol=1e-11, atol=1e-300)
    # The boundary rules, NaN order included, exactly as the CPU.
    edges = torch.tensor([0.0, 1.0, 2.0, -1.0, INF, NAN], dtype=torch.float64)
    a, x = torch.meshgrid(edges, edges, indexing="ij")
    torch.testing.assert_close(native(fn, a, x), fn(a, x), equal_nan=True, rtol=1e-12, atol=0)
    g = torch.Generator().manual_seed(0)
    a, x = torch.rand(500, generator=g) * 20, torch.rand(500, generator=g) * 20
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        tol = LOW_PRECISION_TOLERANCES.get(dtype, {})
        torch.testing.assert_close(native(fn, a.to(dtype), x.to(dtype)),
                                   fn(a.to(dtype), x.to(dtype)), **tol)
    inplace = a.double().to("maia")
    getattr(inplace, f"{name}_")(x.double().to("maia"))
    torch.testing.assert_close(inplace.cpu(), fn(a.double(), x.double()))
    with pytest.raises(NotImplementedError, match=f'"{name}_cpu" not implemented for \'Long\''):
        fn(torch.ones(2, dtype=torch.int64, device="maia"), torch.ones(2, device="maia").long())


def test_zeta_matches_the_cpu():
    s = torch.cat([torch.linspace(1, 12, 45), torch.tensor([INF, 0.5, NAN])]).double()
    q = torch.cat([torch.linspace(-10, 30, 161),
                   torch.tensor([INF, -INF, 1e-300, -1e-300, NAN])]).double()
    s, q = torch.meshgrid(s, q, indexing="ij")
    for dtype in (torch.float64, torch.float32):
        torch.testing.assert_close(native(S.zeta, s.to(dtype), q.to(dtype)),
                                   S.zeta(s.to(dtype), q.to(dtype)), equal_nan=True)
    # Scalars on either side, integers promoted to float32.
    torch.testing.assert_close(native(S.zeta, 2.0, q[0]), S.zeta(2.0, q[0]), equal_nan=True)
    ints = torch.arange(1, 6)
    assert native(S.zeta, ints, ints).dtype == torch.float32
    torch.testing.assert_close(native(S.zeta, ints, ints), S.zeta(ints, ints))
    half = torch.ones(2, dtype=torch.half, device="maia")
    with pytest.raises(NotImplementedError, match='"zeta_cpu" not implemented for \'Half\''):
        S.zeta(half, half)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 7])
def test_polygamma_matches_the_cpu(n):
    # Through the poles (the negative integers and 0) and both infinities.
    x = torch.cat([torch.linspace(-10, 10, 2001), torch.tensor([INF, -INF, NAN, 1e-8])])
    for dtype in (torch.float64, torch.float32, torch.float16, torch.bfloat16):
        tol = LOW_PRECISION_TOLERANCES.get(dtype, {})
        torch.testing.assert_close(native(lambda t: torch.polygamma(n, t), x.to(dtype)),
                                   torch.polygamma(n, x.to(dtype)), equal_nan=True, **tol)
    ints = torch.arange(-3, 6)
    torch.testing.assert_close(native(lambda t: S.polygamma(n, t), ints), S.polygamma(n, ints),
                               equal_nan=True)
    inplace = x.double().to("maia").polygamma_(n)
    torch.testing.assert_close(inplace.cpu(), torch.polygamma(n, x.double()), equal_nan=True)


def test_polygamma_refuses_negative_orders():
    with pytest.raises(RuntimeError, match=r"polygamma\(n, x\) does not support negative n"):
        torch.polygamma(-1, torch.ones(2, device="maia"))
