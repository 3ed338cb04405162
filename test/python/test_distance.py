"""torch.cdist on maia against the CPU: _cdist_forward runs on the device
(runtime/kernels/nn/distance.h) for every p, batch broadcasting, NaN, empty
shapes; the matrix-product Euclidean path is a composite of native ops."""

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
