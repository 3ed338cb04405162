"""OpInfo sweep of the elementwise math functions (ops/MathElementwise.cpp) and the pointwise
losses (ops/PointwiseLoss.cpp), kernels in runtime/kernels/eager/{math_ops,loss_ops}.h:
PyTorch's own sample inputs on maia and on the CPU, compared with
torch.testing.assert_close for every dtype maia supports, without any host fallback in the
forward or the backward; gradients in float32/float64. Special values (NaN, infinities,
the ends of erfinv's and logit's domains, nextafter's steps in float16/bfloat16) and a
binary_cross_entropy input outside [0, 1] (a sticky device error) are tested by hand, the
Bessel functions over their whole float64 range."""


import pytest
import torch
import torch.nn.functional as F
from torch.testing._internal.common_methods_invocations import op_db

from opinfo_support import (LOW_PRECISION_TOLERANCES, cases, check_forward_samples,
                            check_gradient_samples, forbid_fallback)
from sticky_support import expect_sticky_error

MATH = ["erfc", "erfinv", "exp2", "frac", "sinc", "special.entr", "logit", "nan_to_num",
        "nn.functional.hardshrink", "nn.functional.softshrink", "nn.functional.threshold",
        "copysign", "hypot", "heaviside", "logaddexp2", "special.xlog1py", "nextafter", "gcd",
        "lcm", "i0", "special.i0e", "special.i1", "special.i1e", "special.modified_bessel_i0",
        "special.modified_bessel_i1"]
LOSSES = ["nn.functional.mse_loss", "nn.functional.smooth_l1_loss", "nn.functional.huber_loss",
          "nn.functional.binary_cross_entropy"]
OPS = [op for op in op_db if op.name in MATH + LOSSES]
UNSUPPORTED_SAMPLE_KWARGS = {"out"}
# Losses reduce: maia sums in another order than the CPU's vectorized reduction.
LOSS_TOLERANCES = {torch.float32: dict(atol=1e-5, rtol=1e-5),
                   torch.float16: dict(atol=1e-2, rtol=1e-2),
                   torch.bfloat16: dict(atol=5e-2, rtol=2e-2)}


# The CPU's float32 Bessel polynomials are a few ulps off (maia computes in double).
BESSEL = {"special.i1", "special.i1e", "special.modified_bessel_i1"}


def tolerances(op, dtype):
    if op.name in BESSEL and dtype == torch.float32:
        return dict(atol=1e-5, rtol=2e-6)
    table = LOSS_TOLERANCES if op.name in LOSSES else LOW_PRECISION_TOLERANCES
    return table.get(dtype, {})


def test_every_listed_op_is_in_op_db():
    assert {op.name for op in OPS} == set(MATH + LOSSES)


@pytest.mark.parametrize("op,dtype", list(cases(OPS)))
def test_matches_cpu(op, dtype):
    check_forward_samples(op, dtype, UNSUPPORTED_SAMPLE_KWARGS, tolerances(op, dtype),
                          lambda before, sample: forbid_fallback(before, op.name))


GRAD_OPS = [op for op in OPS if op.supports_autograd]


@pytest.mark.parametrize("op", GRAD_OPS, ids=lambda op: f"{op.name}.{op.variant_test_name}")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_gradients_match_cpu(op, dtype):
    check_gradient_samples(op, dtype, UNSUPPORTED_SAMPLE_KWARGS,
                           check_fallback=lambda before, sample: forbid_fallback(
                               before, f"{op.name} backward"),
                           **tolerances(op, dtype))


SPECIAL = torch.tensor([float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1.0, -1.0, 0.5,
                        -0.5, 1e-30, 0.999999, -0.999999, 1 - 1e-12, 3.0, 1e300])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("fn", [torch.erfc, torch.erfinv, torch.exp2, torch.frac, torch.sinc,
                                torch.special.entr, torch.logit,
                                lambda x: torch.logit(x, eps=1e-3), torch.nan_to_num,
                                lambda x: torch.nan_to_num(x, 1.0, 2.0, -3.0),
                                lambda x: F.softshrink(x, 0.5), lambda x: F.hardshrink(x, 0.5),
                                lambda x: F.threshold(x, 0.5, -7.0)],
                         ids=["erfc", "erfinv", "exp2", "frac", "sinc", "entr", "logit",
                              "logit_eps", "nan_to_num", "nan_to_num_values", "softshrink",
                              "hardshrink", "threshold"])
def test_special_values(fn, dtype):
    x = SPECIAL.to(dtype)
    before = torch.maia.fallback_counts()
    actual = fn(x.to("maia")).cpu()
    forbid_fallback(before, "special values")
    # float16/bfloat16: one rounding step (the CPU rounds intermediates, e.g. entr's log).
    tol = LOW_PRECISION_TOLERANCES.get(dtype, dict(atol=0, rtol=2e-6))
    torch.testing.assert_close(actual, fn(x), equal_nan=True, **tol)


@pytest.mark.parametrize("fn", [torch.i0, torch.special.i0e, torch.special.i1,
                                torch.special.i1e, torch.special.modified_bessel_i0,
                                torch.special.modified_bessel_i1])
def test_bessel_functions_in_float64_everywhere(fn):
    # The series and the asymptotic expansion meet at |x| = 20; exp overflows past 709.
    x = torch.cat([torch.linspace(-60, 60, 4001, dtype=torch.float64),
                   torch.tensor([0.0, -0.0, 19.999, 20.0, 20.001, 700.0, 709.0, 712.0, 1e4,
                                 float("inf"), -float("inf"), float("nan")],
                                dtype=torch.float64)])
    torch.testing.assert_close(fn(x.to("maia")).cpu(), fn(x), rtol=1e-13, atol=0,
                               equal_nan=True)


def test_erfinv_inverts_erf_in_float64():
    y = torch.linspace(-1, 1, 20001, dtype=torch.float64)[1:-1]
    x = torch.erfinv(y.to("maia")).cpu()
    torch.testing.assert_close(torch.erf(x), y, atol=1e-15, rtol=0)
    torch.testing.assert_close(x, torch.erfinv(y), atol=0, rtol=1e-13)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_nextafter_steps_one_representable_value(dtype):
    a = torch.tensor([0.0, -0.0, 1.0, 1.0, -1.0, -1.0, 65504.0 if dtype == torch.float16 else 3.0,
                      float("nan"), 2.0], dtype=dtype)
    b = torch.tensor([1.0, -1.0, 2.0, 0.0, 0.0, -2.0, float("inf"), 1.0, 2.0], dtype=dtype)
    torch.testing.assert_close(torch.nextafter(a.to("maia"), b.to("maia")).cpu(),
                               torch.nextafter(a, b), equal_nan=True, atol=0, rtol=0)


def test_integer_and_dtype_errors_match_cpu():
    for fn in (torch.gcd, torch.nextafter):
        for a in (torch.ones(3), torch.ones(3, dtype=torch.int64)):
            try:
                fn(a, a)
            except Exception as error:  # the CPU refuses: maia refuses the same way
                with pytest.raises(type(error)):
                    fn(a.to("maia"), a.to("maia"))
    with pytest.raises(RuntimeError, match="different dtypes"):
        torch.heaviside(torch.ones(2, device="maia"), torch.ones(2, device="maia",
                                                                  dtype=torch.float64))
    with pytest.raises(RuntimeError, match="lambda must be greater or equal to 0"):
        F.softshrink(torch.ones(2, device="maia"), -1.0)


def test_gcd_lcm_int64_extremes():
    a = torch.tensor([0, 0, -12, 2**62, -(2**40), 7, 1], dtype=torch.int64)
    b = torch.tensor([0, 5, 18, 2**61, 2**20, -21, -1], dtype=torch.int64)
    for fn in (torch.gcd, torch.lcm):
        torch.testing.assert_close(fn(a.to("maia"), b.to("maia")).cpu(), fn(a, b))


LOSS_FNS = {
    "mse": lambda x, t, w, r: F.mse_loss(x, t, reduction=r),
    "smooth_l1": lambda x, t, w, r: F.smooth_l1_loss(x, t, reduction=r, beta=0.5),
    "smooth_l1_beta0": lambda x, t, w, r: F.smooth_l1_loss(x, t, reduction=r, beta=0.0),
    "huber": lambda x, t, w, r: F.huber_loss(x, t, reduction=r, delta=0.7),
    "bce_weighted": lambda x, t, w, r: F.binary_cross_entropy(x.sigmoid(), t.sigmoid(),
                                                              weight=w, reduction=r),
}


@pytest.mark.parametrize("name", list(LOSS_FNS))
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_losses_and_gradients_on_large_inputs(name, reduction):
    """Multi-program launches, a broadcast weight, ties (the kinks of smooth_l1 and huber at
    x == target), every reduction; the backward without host fallback."""
    torch.manual_seed(0)
    x = torch.randn(257, 129, dtype=torch.float64, requires_grad=True)
    t = torch.randn(257, 129, dtype=torch.float64)
    t[::7] = x.detach()[::7]
    w = torch.rand(129, dtype=torch.float64)
    expected = LOSS_FNS[name](x, t, w, reduction)
    xm = x.detach().to("maia").requires_grad_()
    before = torch.maia.fallback_counts()
    actual = LOSS_FNS[name](xm, t.to("maia"), w.to("maia"), reduction)
    grad = torch.randn_like(expected)
    (actual_grad,) = torch.autograd.grad(actual, xm, grad.to("maia"))
    forbid_fallback(before, name)
    (expected_grad,) = torch.autograd.grad(expected, x, grad)
    torch.testing.assert_close(actual.cpu(), expected)
    torch.testing.assert_close(actual_grad.cpu(), expected_grad)


def test_binary_cross_entropy_input_outside_0_1_is_a_sticky_error():
    torch.maia.synchronize(0)
    x = torch.tensor([0.5, 1.5, 0.2], device="maia")
    target = torch.ones(3, device="maia")
    with expect_sticky_error("binary_cross_entropy_f32"):
        F.binary_cross_entropy(x, target)
    y = torch.tensor([0.5, 0.25], device="maia")
    torch.testing.assert_close(F.binary_cross_entropy(y, torch.ones(2, device="maia")).cpu(),
                               F.binary_cross_entropy(y.cpu(), torch.ones(2)))
