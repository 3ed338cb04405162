"""Elementwise operators that ran on the host fallback until issue 15: log2,
log10, sgn/sign, clamp_min/clamp_max (Scalar and Tensor bounds) and
_efficientzerotensor (sgn's gradient). Each is compared with the CPU for
every dtype it has there, on contiguous, transposed, strided, empty and
0-dim tensors, functional, out= and in-place, and none may reach the host
fallback."""

import contextlib
import math

import pytest
import torch

from opinfo_support import LOW_PRECISION_TOLERANCES

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INTS = [torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8]

# Views taken alike of the CPU tensor and of its maia copy.
LAYOUTS = {
    "contiguous": lambda t: t,
    "transposed": lambda t: t.t(),
    "strided": lambda t: t[::2, 1::3],
    "empty": lambda t: t[:0],
    "0-dim": lambda t: t[1, 2],
}


@contextlib.contextmanager
def no_host_fallback():
    """Asserts that the body runs no operator on the host."""
    torch.maia.reset_fallback_counts()
    yield
    counts = torch.maia.fallback_counts()
    assert not counts, f"host fallbacks: {counts}"


def sample(dtype, shape=(6, 10), special=True):
    """A CPU tensor of dtype; floats with inf, -inf, NaN, 0 and -0 in it."""
    torch.manual_seed(0)
    if dtype == torch.bool:
        return torch.rand(shape) > 0.5
    if not dtype.is_floating_point:
        low = 0 if dtype == torch.uint8 else -50
        return torch.randint(low, 100, shape, dtype=dtype)
    x = torch.randn(shape, dtype=torch.float64) * 10
    if special:
        x.view(-1)[:5] = torch.tensor([math.inf, -math.inf, math.nan, 0.0, -0.0])
    return x.to(dtype)


def to_maia(value):
    return value.to("maia") if isinstance(value, torch.Tensor) else value


def compare(op, x, *args, tol=None):
    """torch.<op>(view, *args) on maia against the CPU for each layout of x:
    functional, out= (a strided out), and in-place, which must be refused
    where the CPU refuses it (a result dtype or shape that is not x's)."""
    tol = tol or LOW_PRECISION_TOLERANCES.get(x.dtype, {})
    f = getattr(torch, op)
    maia_args = [to_maia(a) for a in args]
    with no_host_fallback():
        for name, view in LAYOUTS.items():
            expected = f(view(x), *args)
            actual = f(view(x.to("maia")), *maia_args)
            assert actual.dtype == expected.dtype, name
            torch.testing.assert_close(actual.cpu(), expected, equal_nan=True, **tol)
            out = torch.empty(expected.shape + (2,), dtype=expected.dtype, device="maia")[..., 0]
            f(view(x.to("maia")), *maia_args, out=out)
            torch.testing.assert_close(out.cpu(), expected, equal_nan=True, **tol)
            y, cpu_y = x.to("maia"), x.clone()
            try:
                getattr(view(cpu_y), op + "_")(*args)
            except RuntimeError as error:
                with pytest.raises(type(error)):
                    getattr(view(y), op + "_")(*maia_args)
                continue
            getattr(view(y), op + "_")(*maia_args)
            torch.testing.assert_close(view(y).cpu(), view(cpu_y), equal_nan=True, **tol)


class TestLogBases:
    @pytest.mark.parametrize("dtype", FLOATS + INTS + [torch.bool])
    @pytest.mark.parametrize("op", ["log2", "log10"])
    def test_matches_cpu(self, op, dtype):
        # Integer and bool tensors give the default float dtype.
        x = sample(dtype)
        compare(op, x if dtype in (torch.bool, torch.uint8) else x.abs())

    @pytest.mark.parametrize("op", ["log2", "log10"])
    def test_negative_and_exact_powers(self, op):
        x = torch.tensor([[-1.0, 0.5, 1.0, 2.0, 8.0, 10.0, 1000.0, 1e-30, 1e30]])
        with no_host_fallback():
            actual = getattr(torch, op)(x.to("maia")).cpu()
        torch.testing.assert_close(actual, getattr(torch, op)(x), equal_nan=True)


class TestSign:
    @pytest.mark.parametrize("dtype", FLOATS + INTS + [torch.bool])
    @pytest.mark.parametrize("op", ["sgn", "sign"])
    def test_matches_cpu(self, op, dtype):
        # NaN and -0 give 0; bool is itself; the dtype is kept.
        compare(op, sample(dtype))

    def test_complex_sgn_is_native_and_sign_refuses_complex(self):
        """sgn of a complex tensor is z / |z| on the device (the complex sign
        kernels; test_complex_arith.py has its special values); sign has no
        complex meaning and raises the CPU's error."""
        z = torch.randn(5, dtype=torch.complex64)
        torch.maia.reset_fallback_counts()
        actual = torch.sgn(z.to("maia")).cpu()
        torch.testing.assert_close(actual, torch.sgn(z))
        assert not torch.maia.fallback_counts()
        with pytest.raises(RuntimeError, match="torch.sgn instead"):
            torch.sign(z.to("maia"))


class TestClampBounds:
    @pytest.mark.parametrize("dtype", FLOATS + INTS)
    @pytest.mark.parametrize("op", ["clamp_min", "clamp_max"])
    def test_scalar_bounds(self, op, dtype):
        x = sample(dtype)
        for bound in [0, 7, 0.5, -2.5]:  # a float bound promotes integer tensors
            compare(op, x, bound)

    @pytest.mark.parametrize("dtype", FLOATS)
    @pytest.mark.parametrize("op", ["clamp_min", "clamp_max", "clamp"])
    def test_nan_and_infinite_bounds(self, op, dtype):
        # A NaN bound makes every element NaN, as on the CPU.
        for bound in [math.nan, math.inf, -math.inf]:
            compare(op, sample(dtype), bound)

    @pytest.mark.parametrize("dtype", FLOATS + INTS + [torch.bool])
    @pytest.mark.parametrize("op", ["clamp_min", "clamp_max"])
    def test_tensor_bounds(self, op, dtype):
        x = sample(dtype)
        # A broadcast one-element bound of another dtype, a 0-dim CPU bound.
        compare(op, x, sample(dtype, (1,), special=False))
        compare(op, x, sample(torch.float32, (1,), special=False))
        compare(op, x, sample(dtype, (), special=False))
        full = sample(dtype, (6, 10), special=False)
        with no_host_fallback():
            actual = getattr(torch, op)(x.to("maia"), full.to("maia"))
        torch.testing.assert_close(actual.cpu(), getattr(torch, op)(x, full), equal_nan=True)

    def test_clamp_follows_the_same_rules(self):
        # clamp with Scalar bounds promotes integer tensors and propagates
        # NaN bounds as clamp_min/clamp_max do.
        x = sample(torch.int16)
        compare("clamp", x, 0.5)
        compare("clamp", x, -3, 40)
        compare("clamp", sample(torch.float32), 1.0, math.nan)
        big = torch.tensor([[2**62 + 1, 5, -(2**62)], [2**62 + 7, 2**62 + 3, 0]])
        compare("clamp", big, 2**62 + 3)  # int64 bounds keep every bit

    @pytest.mark.parametrize("op", ["clamp_min", "clamp_max", "clamp"])
    def test_errors_as_on_the_cpu(self, op):
        cases = [(torch.tensor([1, 2], dtype=torch.int8), 1000),
                 (torch.tensor([1.0], dtype=torch.float16), 1e6),
                 (torch.tensor([True, False]), True)]
        for x, bound in cases:
            with pytest.raises(RuntimeError) as cpu_error:
                getattr(torch, op)(x, bound)
            with pytest.raises(cpu_error.type):
                getattr(torch, op)(x.to("maia"), bound)

    def test_uint8_negative_bound_wraps_as_on_the_cpu(self):
        compare("clamp_max", torch.tensor([[1, 200, 254], [0, 3, 255]], dtype=torch.uint8), -3)


class TestZeroTensor:
    @pytest.mark.parametrize("dtype", FLOATS + [torch.int64])
    def test_factory(self, dtype):
        with no_host_fallback():
            z = torch._efficientzerotensor((2, 3), dtype=dtype, device="maia")
            other = torch._efficientzerotensor(4, device="maia:1")
        assert z._is_zerotensor() and z.device == torch.device("maia:0")
        assert z.dtype == dtype and z.shape == (2, 3)
        assert other._is_zerotensor() and other.device == torch.device("maia:1")
        assert torch.equal(z.cpu(), torch.zeros(2, 3, dtype=dtype))
        # Reading it materializes zeros; it is immutable, as on the CPU.
        assert torch.equal((z + 1).cpu(), torch.ones(2, 3, dtype=dtype))
        with pytest.raises(RuntimeError, match="immutable"):
            z.add_(1)

    def test_dot_of_a_zero_tensor(self):
        # dot passes the ZeroTensor key through to the backend's kernel.
        z = torch._efficientzerotensor(4, device="maia")
        x = torch.arange(4.0, device="maia")
        with no_host_fallback():
            result = torch.dot(z, x)
        assert result._is_zerotensor() and result.shape == ()
        with pytest.raises(RuntimeError, match="same number of elements"):
            torch.dot(z, torch.ones(3, device="maia"))

    @pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
    def test_sgn_backward(self, dtype):
        x = torch.randn(7, dtype=dtype, device="maia", requires_grad=True)
        with no_host_fallback():
            torch.sgn(x).sum().backward()
        expected = torch.randn(7, dtype=dtype, requires_grad=True)
        torch.sgn(expected).sum().backward()
        assert x.grad._is_zerotensor() and expected.grad._is_zerotensor()
        assert torch.equal(x.grad.cpu(), torch.zeros(7, dtype=dtype))

    @pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
    def test_backward_chains(self, dtype):
        # abs, log of abs, addcdiv and sgn in one graph: sgn's zero gradient
        # is added to the others.
        def loss(x, y, z):
            return (torch.log(x.abs()) + torch.addcdiv(x, y, z, value=0.5) * x.sgn()
                    + x.abs() * y).sum()

        torch.manual_seed(0)
        leaves = [torch.randn(5, 4, dtype=dtype) for _ in range(3)]
        cpu = [t.clone().requires_grad_() for t in leaves]
        maia = [t.to("maia").requires_grad_() for t in leaves]
        loss(*cpu).backward()
        with no_host_fallback():
            loss(*maia).backward()
        for c, m in zip(cpu, maia):
            torch.testing.assert_close(m.grad.cpu(), c.grad)


@pytest.mark.parametrize("op,dtype", [(torch.bitwise_not, torch.float32),
                                      (lambda x: torch.logaddexp(x, x), torch.int64),
                                      (lambda x: torch.remainder(x, x), torch.bool)],
                         ids=["bitwise_not-float32", "logaddexp-int64", "remainder-bool"])
def test_a_dtype_without_a_kernel_is_not_implemented_like_the_cpu(op, dtype):
    x = torch.ones(3, dtype=dtype)
    with pytest.raises(NotImplementedError):
        op(x)
    with pytest.raises(NotImplementedError, match="not implemented for '.*' on maia"):
        op(x.to("maia"))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_frexp_splits_like_the_cpu(dtype):
    # Bit-exact: subnormals normalized, zeros/inf/NaN with exponent 0.
    x = sample(dtype)
    x.view(-1)[5:8] = torch.tensor([1e-40, -6e-8, 2.0**20]).to(dtype)
    with no_host_fallback():
        for name, view in LAYOUTS.items():
            mantissa, exponent = torch.frexp(view(x))
            m, e = torch.frexp(view(x.to("maia")))
            assert m.dtype == dtype and e.dtype == torch.int32, name
            assert m.stride() == mantissa.stride() or m.numel() <= 1, name
            torch.testing.assert_close(m.cpu(), mantissa, equal_nan=True, rtol=0, atol=0)
            assert torch.equal(e.cpu(), exponent), name
            m_out = torch.empty(0, dtype=dtype, device="maia")
            e_out = torch.empty(0, dtype=torch.int32, device="maia")
            torch.frexp(view(x.to("maia")), out=(m_out, e_out))
            torch.testing.assert_close(m_out.cpu(), mantissa, equal_nan=True, rtol=0, atol=0)
            assert torch.equal(e_out.cpu(), exponent), name
    with pytest.raises(RuntimeError, match="only supports floating-point dtypes"):
        torch.frexp(torch.arange(3, device="maia"))
    with pytest.raises(RuntimeError, match="expects exponent to have int dtype"):
        torch.frexp(x.to("maia"), out=(torch.empty(0, dtype=dtype, device="maia"),
                                       torch.empty(0, dtype=torch.int64, device="maia")))
