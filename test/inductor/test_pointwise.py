"""Pointwise kernels: fusion, layouts, dtypes, integer semantics."""

import pytest
import torch
import torch.nn.functional as F
from compile_support import assert_compiled_matches, kernel_count


def test_chain_is_one_kernel():
    def chain(x, y):
        return ((x + y) * 2).sin().exp() - y.abs()

    x, y = torch.randn(1000), torch.randn(1000)
    assert_compiled_matches(chain, x, y)
    assert kernel_count(chain, x, y) == 1


def test_horizontal_fusion_of_siblings():
    def siblings(x):
        return x.sin(), x.cos()

    assert kernel_count(siblings, torch.randn(4096)) == 1


@pytest.mark.parametrize("shape", [(1,), (15,), (16,), (17,), (3, 5, 7), (1000, 33)])
def test_vector_tails(shape):
    assert_compiled_matches(lambda x: torch.tanh(x) * 3 + 1, torch.randn(shape))


def test_large_tensor_spans_many_programs():
    assert_compiled_matches(lambda x: x * 2 + 1, torch.randn(3_000_001))


def test_broadcast_transpose_slice_expand():
    x = torch.randn(37, 53)
    assert_compiled_matches(lambda x, c: x + c[:, None], x, torch.randn(37))
    assert_compiled_matches(lambda x, r: x * r, x, torch.randn(53))
    assert_compiled_matches(lambda x, y: x + y.t(), x, torch.randn(53, 37))
    assert_compiled_matches(lambda x: x[:, 1::3][:, :17] - x[:, ::3][:, :17], x)
    assert_compiled_matches(lambda s: s.expand(8, 5) * 2, torch.randn(1, 5))
    assert_compiled_matches(lambda x: x[5:, 2:40].exp(), x)


@pytest.mark.parametrize("fn,view", [
    (lambda t: t * 2, lambda b: b[1:]),
    (lambda t: t.sum(), lambda b: b[1:]),
    (lambda t: t.ravel() * 2, lambda b: b[2:4]),
    (lambda t: t.sum(-1), lambda b: b[1:, 2:, 3:]),
    (lambda t: t.t() + 1, lambda b: b[3, 1:]),
])
def test_inputs_with_a_storage_offset(fn, view):
    # Views that start inside their storage (slices, chunks, splits) are
    # read from their first element, not from the storage's; the view is
    # taken on maia (a copy to maia would start at offset 0).
    base = torch.arange(250.0).reshape(5, 5, 10)
    on_maia = view(base.to("maia"))
    assert on_maia.storage_offset() > 0
    torch._dynamo.reset()
    actual = torch.compile(fn)(on_maia)
    torch.testing.assert_close(actual.cpu(), fn(view(base)))


@pytest.mark.parametrize("parts", [
    lambda x: [x, x * 2],
    lambda x: [x * 2, x],
    lambda x: [x * 2, x * 3, x * 4, x],
    lambda x: [x * 2, x * 3],
])
def test_cat_of_inputs_and_pointwise_parts(parts):
    # An input copied into the output next to computed parts writes its
    # slice of the output (an offset view of the result buffer).
    assert_compiled_matches(lambda x: torch.cat(parts(x)), torch.randn(1000))
    assert_compiled_matches(lambda x: torch.cat(parts(x), dim=1), torch.randn(7, 33))


def test_channels_last_and_permuted_inputs():
    x = torch.randn(2, 8, 6, 5).to(memory_format=torch.channels_last)
    assert_compiled_matches(lambda x: F.relu(x) * 2, x)
    assert_compiled_matches(lambda x: x.permute(0, 3, 1, 2) + 1, torch.randn(2, 5, 6, 8))


def test_padding_uses_masked_loads():
    assert_compiled_matches(lambda x: F.pad(x, (2, 3, 1, 0), value=-1.5) * 2, torch.randn(4, 9))
    # Padding rows of a broadcast column: one address for all lanes, read
    # only where some lane is inside the input (row -3 is outside the buffer).
    assert_compiled_matches(lambda x: F.pad(x[:, None].expand(5, 40) * 2, (0, 0, 3, 0), value=-1.0),
                            torch.randn(5))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_float_dtypes(dtype):
    x = torch.randn(257).to(dtype)
    assert_compiled_matches(lambda x: (x * 1.5 + 0.25).sigmoid() * x, x, dtype=dtype)
    assert_compiled_matches(lambda x: F.gelu(x) + F.silu(x), x, dtype=dtype)


@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8, torch.int16, torch.int32,
                                   torch.int64])
def test_integer_semantics(dtype):
    low = 0 if dtype == torch.uint8 else -100
    x = torch.randint(low, 100, (200,), dtype=dtype)
    y = torch.randint(1, 9, (200,), dtype=dtype)
    assert_compiled_matches(lambda x, y: x // y, x, y)
    assert_compiled_matches(lambda x, y: torch.remainder(x, y), x, y)
    assert_compiled_matches(lambda x, y: torch.fmod(x, y), x, y)
    assert_compiled_matches(lambda x, y: (x & y) | (x ^ 3), x, y)
    assert_compiled_matches(lambda x, y: torch.maximum(x, y) - torch.minimum(x, y), x, y)
    assert_compiled_matches(lambda x: x.abs() * 2, x)


def test_casts_between_dtypes():
    x = torch.randn(300) * 100
    for target in (torch.int32, torch.int64, torch.int8, torch.uint8, torch.bool,
                   torch.float16, torch.bfloat16, torch.float64):
        assert_compiled_matches(lambda x: x.to(target), x.clamp(0, 120), atol=0, rtol=0)
    i = torch.randint(-5, 5, (300,))
    assert_compiled_matches(lambda i: i.to(torch.float32) / 3, i)
    assert_compiled_matches(lambda i: (i > 0).to(torch.float32) * 2, i)


def test_bool_logic_and_where():
    x, y = torch.randn(500), torch.randn(500)
    assert_compiled_matches(lambda x, y: (x > 0) & ~(y < 0.5) | (x == y), x, y)
    assert_compiled_matches(lambda x, y: torch.where(x > y, x, y * 0.1), x, y)
    assert_compiled_matches(lambda x: torch.logical_xor(x > 0, x < 1), x)


def test_special_values():
    x = torch.tensor([0.0, -0.0, 1.0, -1.0, float("inf"), float("-inf"), float("nan"), 3.5])
    assert_compiled_matches(lambda x: torch.maximum(x, torch.zeros_like(x)), x)
    assert_compiled_matches(lambda x: torch.isnan(x) | torch.isinf(x), x)
    assert_compiled_matches(lambda x: torch.signbit(x), x)
    assert_compiled_matches(lambda x: torch.clamp(x, -2, 2), x)
    assert_compiled_matches(lambda x: x.sign(), x)


def test_math_functions():
    x = torch.rand(300) * 4 + 0.1
    for fn in (torch.log, torch.log1p, torch.expm1, torch.sqrt, torch.rsqrt, torch.log2,
               torch.erf, torch.atan, torch.cos, torch.floor, torch.ceil, torch.round,
               torch.trunc, torch.reciprocal):
        assert_compiled_matches(lambda x: fn(x), x, atol=1e-4, rtol=1e-4)
    assert_compiled_matches(lambda x: torch.pow(x, 2.5) + torch.atan2(x, x - 1), x)


def test_dynamic_shapes_reuse_the_kernel():
    def fn(x, y):
        return (x * y).softmax(-1)

    compiled = torch.compile(fn, dynamic=True)
    frames = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    for rows, cols in [(5, 10), (7, 33), (2, 100), (11, 3)]:  # sizes 0 and 1 specialize
        x, y = torch.randn(rows, cols), torch.randn(cols)
        torch.testing.assert_close(compiled(x.to("maia"), y.to("maia")).cpu(), fn(x, y),
                                   atol=1e-5, rtol=1e-5)
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] - frames == 1


def test_no_host_fallback_inside_compiled_graph():
    torch.maia.reset_fallback_counts()
    assert_compiled_matches(lambda x: (x.exp() + 1).log().sum(-1), torch.randn(64, 64))
    assert torch.maia.fallback_counts() == {}


@pytest.mark.parametrize("name", ["sinh", "cosh", "tan", "asin", "acos", "atan", "asinh",
                                  "acosh", "atanh", "tanh", "erf", "erfc", "exp", "log1p"])
def test_float64_math(name):
    # No polynomial for float64: these are libm calls (maia-math-to-libm),
    # as exact as eager. erfc is the plugin's own expansion, whose polynomial
    # is fitted for float32: it meets torch's float64 tolerance only.
    fn = getattr(torch, name)
    x = torch.rand(300, dtype=torch.float64) * 0.9 + (1.05 if name == "acosh" else 0.01)
    tol = 1e-7 if name == "erfc" else 1e-12
    assert_compiled_matches(fn, x, dtype=torch.float64, atol=tol, rtol=tol)
