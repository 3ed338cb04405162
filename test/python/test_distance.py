"""torch.cdist and torch.pdist on maia against the CPU: _cdist_forward,
_cdist_backward, _pdist_forward and _pdist_backward run on the device
(runtime/kernels/nn/distance.h) for every p, batch broadcasting, NaN,
zero distances, empty shapes; the matrix-product Euclidean path is a
composite of native ops."""

import math
import re

import pytest
import torch

P_VALUES = [0.0, 1.0, 2.0, 0.5, 3.5, math.inf]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("p", P_VALUES)
def test_cdist_matches_cpu(dtype, p):
    torch.manual_seed(0)
    x1 = torch.randn(2, 1, 7, 33, dtype=dtype)
    x2 = torch.randn(3, 9, 33, dtype=dtype)
    x1[0, 0, 2, 5] = float("nan")
    x2[1, 4] = x1[1, 0, 3]  # a zero distance
    mode = "donot_use_mm_for_euclid_dist"  # the direct kernel for p = 2 too
    expected = torch.cdist(x1, x2, p, compute_mode=mode)
    torch.maia.reset_fallback_counts()
    actual = torch.cdist(x1.to("maia"), x2.to("maia"), p, compute_mode=mode)
    assert torch.maia.fallback_counts() == {}
    torch.testing.assert_close(actual.cpu(), expected, equal_nan=True)


def test_cdist_euclidean_by_matrix_products_and_empty_shapes():
    x1, x2 = torch.randn(40, 8), torch.randn(30, 8)
    torch.maia.reset_fallback_counts()
    actual = torch.cdist(x1.to("maia"), x2.to("maia"))  # > 25 rows: the mm path
    assert torch.maia.fallback_counts() == {}
    torch.testing.assert_close(actual.cpu(), torch.cdist(x1, x2), atol=1e-5, rtol=1e-5)
    for a, b in [((0, 4), (3, 4)), ((3, 0), (5, 0)), ((2, 0, 4), (2, 3, 4))]:
        expected = torch.cdist(torch.randn(a), torch.randn(b), 1.0)
        actual = torch.cdist(torch.randn(a).to("maia"), torch.randn(b).to("maia"), 1.0)
        assert actual.shape == expected.shape and torch.equal(actual.cpu(), expected)


def test_cdist_errors_are_the_cpus():
    forward = torch.ops.aten._cdist_forward
    cases = [lambda d: forward(torch.rand(3, 4, device=d), torch.rand(5, 3, device=d), 2.0, None),
             lambda d: forward(torch.rand(3, 4, device=d), torch.rand(5, 4, device=d), -1.0, None),
             lambda d: forward(torch.rand(4, device=d), torch.rand(5, 4, device=d), 2.0, None),
             lambda d: forward(torch.ones(3, 4, dtype=torch.long, device=d),
                               torch.ones(5, 4, dtype=torch.long, device=d), 2.0, None),
             lambda d: forward(torch.rand(3, 4, device=d).half(), torch.rand(5, 4, device=d).half(),
                               2.0, None)]
    for case in cases:
        with pytest.raises((RuntimeError, NotImplementedError)) as cpu_error:
            case("cpu")
        with pytest.raises(type(cpu_error.value), match=re.escape(str(cpu_error.value))):
            case("maia")


def run_backward(fn, inputs, generator):
    """fn's result and its inputs' gradients for one random upstream gradient."""
    leaves = [x.clone().requires_grad_() for x in inputs]
    result = fn(*leaves)
    if result.numel():
        result.backward(torch.randn(result.shape, generator=generator,
                                    dtype=result.dtype).to(result.device))
    grads = [x.grad if x.grad is not None else torch.zeros_like(x) for x in leaves]
    return result.detach(), grads


def assert_native_gradients_match(fn, *inputs):
    expected, expected_grads = run_backward(fn, inputs, torch.Generator().manual_seed(1))
    torch.maia.reset_fallback_counts()
    actual, grads = run_backward(fn, [x.to("maia") for x in inputs],
                                 torch.Generator().manual_seed(1))
    assert torch.maia.fallback_counts() == {}
    torch.testing.assert_close(actual.cpu(), expected)
    for mine, cpu in zip(grads, expected_grads):
        torch.testing.assert_close(mine.cpu(), cpu)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("p", P_VALUES + [1.5])
def test_cdist_backward_matches_cpu(dtype, p):
    g = torch.Generator().manual_seed(0)
    mode = "donot_use_mm_for_euclid_dist"
    for shape1, shape2 in [((2, 5, 3), (2, 4, 3)), ((5, 3), (2, 4, 3)), ((3, 6, 2), (6, 2))]:
        x1 = torch.randn(shape1, generator=g, dtype=dtype)
        x2 = torch.randn(shape2, generator=g, dtype=dtype)
        if shape1 == (2, 5, 3):
            x2[:, 0] = x1[:, 0]  # a zero distance
        assert_native_gradients_match(lambda a, b: torch.cdist(a, b, p, compute_mode=mode),
                                      x1, x2)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("p", P_VALUES + [1.5])
def test_pdist_and_its_backward_match_cpu(dtype, p):
    g = torch.Generator().manual_seed(0)
    for shape in [(6, 4), (1, 3), (5, 0), (7, 1)]:
        x = torch.randn(shape, generator=g, dtype=dtype)
        if shape == (6, 4):
            x[2] = x[4]  # a zero distance
        assert_native_gradients_match(lambda t: torch.pdist(t, p), x)


def test_pdist_errors_are_the_cpus():
    for bad in [torch.ones(2, 3, 4), torch.ones(3, 2, dtype=torch.int64)]:
        with pytest.raises(RuntimeError) as cpu:
            torch.pdist(bad)
        with pytest.raises(RuntimeError, match=re.escape(str(cpu.value).splitlines()[0])):
            torch.pdist(bad.to("maia"))
    with pytest.raises(RuntimeError, match="pdist only supports non-negative p values"):
        torch.pdist(torch.ones(3, 2, device="maia"), -1.0)
