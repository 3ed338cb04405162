"""Native elementwise arithmetic on complex64/complex128 maia tensors: the
eager kernels compute it (no host fallback) and match the CPU, including
zeros, infinities, NaNs, huge and tiny magnitudes and the branch cuts on the
negative real axis: add/sub/mul/div, neg/reciprocal/conj_physical, abs and
angle (real results), sgn, exp/log/sqrt/sigmoid, comparisons, where and
masked_fill. Complex operators without kernels still reach the host fallback
(test_complex_unsigned.py)."""

import pytest
import torch

DTYPES = [torch.complex64, torch.complex128]
INF, NAN = float("inf"), float("nan")
SPECIAL = [0, 1e30, -1e30, INF, -INF, NAN, 1.5, -2.0]


def sample(dtype, shape, seed):
    """Random values with the special ones mixed into both parts."""
    g = torch.Generator().manual_seed(seed)
    parts = torch.randn(*shape, 2, generator=g, dtype=torch.float64)
    flat = parts.view(-1, 2)
    special = torch.tensor(SPECIAL, dtype=torch.float64)
    for i in range(0, flat.shape[0], 3):
        flat[i, 0] = special[(i + seed) % len(SPECIAL)]
        flat[i, 1] = special[(i // 3 + 2 * seed) % len(SPECIAL)]
    return torch.view_as_complex(parts).to(dtype)


def operands(dtype, layout):
    """(a, b) CPU tensors of one layout: the second may be a Python scalar."""
    if layout == "contiguous":
        return sample(dtype, (6, 9), 1), sample(dtype, (6, 9), 2)
    if layout == "noncontiguous":
        return sample(dtype, (9, 6), 1).t(), sample(dtype, (6, 18), 2)[:, ::2]
    if layout == "broadcast":
        return sample(dtype, (6, 9), 1), sample(dtype, (1, 9), 2)
    if layout == "zero_size":
        return sample(dtype, (0, 9), 1), sample(dtype, (0, 9), 2)
    if layout == "zero_dim":
        return sample(dtype, (6, 9), 1), sample(dtype, (), 2)
    assert layout == "python_scalar"
    return sample(dtype, (6, 9), 1), complex(1.5, -0.25)


OPS = {
    "add": lambda a, b: a + b,
    "add_alpha": lambda a, b: torch.add(a, b, alpha=2),
    "add_complex_alpha": lambda a, b: torch.add(a, b, alpha=1 - 2j),
    "sub": lambda a, b: a - b,
    "sub_alpha": lambda a, b: torch.sub(a, b, alpha=-0.5),
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "rdiv": lambda a, b: b / a,
    "div_real_scalar": lambda a, b: a / 2.5,
    "real_scalar_div": lambda a, b: -3.0 / a,
    "where": lambda a, b: torch.where(a.real > 0, a, b),
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "neg": lambda a, b: -a,
    "mul_real_scalar": lambda a, b: a * 2.5,
}
# Unary operators: name -> function (their out= and in-place forms below).
UNARY = {
    "reciprocal": torch.reciprocal,
    "abs": torch.abs,  # real result
    "angle": torch.angle,  # real result
    "sgn": torch.sgn,
    "conj_physical": torch.conj_physical,
    "exp": torch.exp,
    "log": torch.log,
    "sqrt": torch.sqrt,
    "sigmoid": torch.sigmoid,
}
OPS.update({name: (lambda fn: lambda a, b: fn(a))(fn) for name, fn in UNARY.items()})
INPLACE = {
    "add_": lambda a, b: a.add_(b),
    "sub_": lambda a, b: a.sub_(b),
    "mul_": lambda a, b: a.mul_(b),
    "neg_": lambda a, b: a.neg_(),
    "div_": lambda a, b: a.div_(b),
    "reciprocal_": lambda a, b: a.reciprocal_(),
    "sgn_": lambda a, b: a.sgn_(),
    "conj_physical_": lambda a, b: a.conj_physical_(),
    "exp_": lambda a, b: a.exp_(),
    "log_": lambda a, b: a.log_(),
    "sqrt_": lambda a, b: a.sqrt_(),
    "sigmoid_": lambda a, b: a.sigmoid_(),
    "masked_fill_": lambda a, b: a.masked_fill_(a.imag < 0, 2 - 1j),
}
LAYOUTS = ["contiguous", "noncontiguous", "broadcast", "zero_size", "zero_dim", "python_scalar"]


def to_maia(x):
    return x.to("maia") if isinstance(x, torch.Tensor) else x


def run_natively(fn, *args):
    """fn on maia copies of args, asserting no operator ran on the host."""
    maia_args = [to_maia(x) for x in args]
    torch.maia.reset_fallback_counts()
    result = fn(*maia_args)
    counts = torch.maia.fallback_counts()
    assert not counts, f"host fallback ran: {counts}"
    assert result.device.type == "maia"
    return result.cpu()


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", OPS)
def test_matches_the_cpu_without_fallback(name, dtype, layout):
    a, b = operands(dtype, layout)
    fn = OPS[name]
    expected = fn(a, b)
    torch.testing.assert_close(run_natively(fn, a, b), expected, equal_nan=True)


@pytest.mark.parametrize("layout", ["contiguous", "noncontiguous", "broadcast", "python_scalar"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", INPLACE)
def test_inplace_matches_the_cpu_without_fallback(name, dtype, layout):
    a, b = operands(dtype, layout)
    a = a.contiguous()
    fn = INPLACE[name]
    expected = fn(a.clone(), b)
    torch.testing.assert_close(run_natively(fn, a, b), expected, equal_nan=True)


# Every pair of these as (real, imaginary) parts: zeros of both signs (the
# branch cuts of log and sqrt on the negative real axis), huge and tiny
# magnitudes (overflow of |z|^2 in abs and division; 1e300 and 1e-300 are
# inf and 0 in complex64, 1e-40 is subnormal there), infinities and NaN.
GRID_PARTS = [0.0, -0.0, 1.5, -2.0, 1e30, -1e30, 3e38, 1e-30, -1e-40, 1e300, -1e-300,
              INF, -INF, NAN]


def special_grid(dtype):
    parts = torch.cartesian_prod(*[torch.tensor(GRID_PARTS, dtype=torch.float64)] * 2)
    return torch.view_as_complex(parts.contiguous()).to(dtype)


@pytest.mark.parametrize("strided", [False, True], ids=["contiguous", "strided"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", UNARY)
def test_unary_special_values_match_the_cpu(name, dtype, strided):
    """Both layouts against the CPU's contiguous (vectorized) result: its
    strided scalar loop gets sgn of complex64 subnormals wrong (|z| = 0)."""
    z = special_grid(dtype)
    fn = UNARY[name]
    expected = fn(z)
    if strided:
        z = torch.stack([z, z], dim=1)[:, 1]
    torch.testing.assert_close(run_natively(fn, z), expected, equal_nan=True)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_division_of_special_values_matches_the_cpu(dtype):
    """Every grid value by every grid value: scaled (Smith's) division as the
    CPU's, no overflow for huge divisors, a / 0 and infinities as there."""
    z = special_grid(dtype)
    a, b = z.repeat_interleave(z.numel()), z.repeat(z.numel())
    torch.testing.assert_close(run_natively(torch.div, a, b), a / b, equal_nan=True)
    for scalar in (2.0, -0.5, 1e-30 + 3j, complex(0, -1e30), 0.0):
        fn = lambda x, s=scalar: x / s
        torch.testing.assert_close(run_natively(fn, z), fn(z), equal_nan=True)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_branch_cuts_follow_the_sign_of_zero(dtype):
    z = torch.tensor([complex(-4.0, 0.0), complex(-4.0, -0.0), complex(-1.0, 0.0),
                      complex(-1.0, -0.0)], dtype=dtype)
    assert torch.equal(run_natively(torch.sqrt, z),
                       torch.tensor([2j, -2j, 1j, -1j], dtype=dtype))
    angle = run_natively(torch.angle, z)
    assert (angle[0::2] > 3.14).all() and (angle[1::2] < -3.14).all()
    torch.testing.assert_close(run_natively(torch.log, z), torch.log(z))


@pytest.mark.parametrize("layout", ["contiguous", "noncontiguous"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", UNARY)
def test_unary_out_matches_the_cpu_without_fallback(name, dtype, layout):
    a, _ = operands(dtype, layout)
    fn = UNARY[name]
    expected = fn(a)
    out = torch.empty(0, dtype=expected.dtype)  # resized, as on the CPU
    torch.testing.assert_close(run_natively(lambda x, o: fn(x, out=o), a, out), expected,
                               equal_nan=True)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_binary_out_matches_the_cpu_without_fallback(dtype):
    a, b = operands(dtype, "noncontiguous")
    for fn in (torch.div, lambda x, y, out: torch.where(x.real > y.real, x, y, out=out)):
        out = torch.empty(6, 9, dtype=dtype)
        torch.testing.assert_close(run_natively(lambda x, y, o: fn(x, y, out=o), a, b, out),
                                   fn(a, b, out=out.clone()), equal_nan=True)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_abs_and_angle_into_complex_out_match_the_cpu(dtype):
    """A complex out= gets the real result with a zero imaginary part."""
    a, _ = operands(dtype, "contiguous")
    for fn in (torch.abs, torch.angle):
        out = torch.empty(6, 9, dtype=dtype)
        torch.testing.assert_close(run_natively(lambda x, o: fn(x, out=o), a, out),
                                   fn(a, out=out.clone()), equal_nan=True)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_div_with_rounding_mode_none_is_native_and_other_modes_raise(dtype):
    a, b = operands(dtype, "noncontiguous")
    fn = lambda x, y: torch.div(x, y, rounding_mode=None)
    torch.testing.assert_close(run_natively(fn, a, b), fn(a, b), equal_nan=True)
    for mode in ("trunc", "floor"):
        for x, y in ((a, b), (a.to("maia"), b.to("maia"))):
            with pytest.raises(NotImplementedError, match=f"div_{mode}.* not implemented for"):
                torch.div(x, y, rounding_mode=mode)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_inplace_abs_raises_as_on_the_cpu(dtype):
    a = sample(dtype, (3,), 1)
    for x in (a.clone(), a.to("maia")):
        with pytest.raises(RuntimeError, match="In-place abs is not supported for complex"):
            x.abs_()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_masked_fill_matches_the_cpu_without_fallback(dtype):
    a = sample(dtype, (6, 9), 1)
    mask = torch.randn(6, 9, generator=torch.Generator().manual_seed(3)) > 0
    for value in (1.5 - 2j, -0.5, torch.tensor(3j, dtype=dtype), complex(NAN, INF)):
        for x in (a, a.t()):
            m = mask if x.shape == mask.shape else mask.t()
            fn = lambda t, mk, v=value: t.masked_fill(mk, v)
            torch.testing.assert_close(run_natively(fn, x, m), fn(x, m), equal_nan=True)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_mixed_with_real_tensor_promotes_natively(dtype):
    a = sample(dtype, (6, 9), 1)
    real = torch.randn(6, 9, dtype=a.real.dtype)
    mask = real > 0
    for fn in (lambda x, y: x * y, lambda x, y: y + x, lambda x, y: x - y,
               lambda x, y: x / y, lambda x, y: y / x, lambda x, y: x + y[0],
               lambda x, y: torch.where(y > 0, x, y), lambda x, y: torch.where(y > 0, y, 2j)):
        torch.testing.assert_close(run_natively(fn, a, real), fn(a, real), equal_nan=True)
    fn = lambda x, m: x.masked_fill_(m, torch.tensor(0.25, dtype=a.real.dtype))
    torch.testing.assert_close(run_natively(fn, a, mask), fn(a.clone(), mask), equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64], ids=str)
def test_angle_and_conj_physical_of_real_tensors_are_native(dtype):
    x = torch.tensor([-2, 0, 3, 7], dtype=dtype)
    if dtype.is_floating_point:
        x = torch.cat([x, torch.tensor([NAN, -INF, -0.0], dtype=dtype)])
    for fn in (torch.angle, torch.conj_physical, lambda t: t.clone().conj_physical_()):
        torch.testing.assert_close(run_natively(fn, x), fn(x), equal_nan=True)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_operators_without_kernels_still_use_the_host(dtype):
    """tan, sin, pow, ... are not native for complex yet: correct values
    through the counted fallback, never a TypeError."""
    a, b = sample(dtype, (4, 5), 1), sample(dtype, (4, 5), 2)
    for fn in (lambda x, y: x.tan(), lambda x, y: x.sin(), lambda x, y: x ** y,
               lambda x, y: torch.log10(x)):
        torch.maia.reset_fallback_counts()
        actual = fn(a.to("maia"), b.to("maia"))
        assert torch.maia.fallback_counts()
        torch.testing.assert_close(actual.cpu(), fn(a, b), equal_nan=True)
