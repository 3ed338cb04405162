"""Index expressions of dynamic sizes that kernels print: float scalars
computed from sizes, torch's Mod (roll) and Where (pad of a roll).

When a graph is recompiled with dynamic shapes (automatic dynamic: the same
function called with a second shape), Python arithmetic on sizes becomes
sympy expressions that Inductor hands to `ops.index_expr` as float values:
ToFloat(ks0), FloatTrueDiv(1.0, ToFloat(ks0)), IntTrueDiv(ks1, ks0), or
float constants such as 0.5*ks0. The index printer emits them as f64.
"""

import pytest
import torch

SHAPES = [(5, 7), (6, 9), (3, 16)]  # the second call recompiles with dynamic sizes

CASES = {
    "masked_fill_float_of_size": lambda x: x.masked_fill(x > 0, float(x.shape[1])),
    "masked_fill_reciprocal_size": lambda x: x.masked_fill(x > 0, 1.0 / x.shape[1]),
    "masked_fill_scaled_size": lambda x: x.masked_fill(x > 0, x.shape[1] * 0.5),
    "where_size_ratio": lambda x: torch.where(x > 0, x.shape[0] / x.shape[1], x),
    "add_size_ratio": lambda x: x + x.shape[0] / x.shape[1],
    "full_like_scaled_size": lambda x: torch.full_like(x, x.shape[1] * 0.25) + x,
    "min_max_of_float_sizes": lambda x: x.clamp(max=min(x.shape[0] / 2, 3.0)),
    "negative_power_of_size": lambda x: x * (x.shape[1] * 1.0) ** -2,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_float_size_expressions_under_automatic_dynamic(name):
    fn = CASES[name]
    compiled = torch.compile(fn)
    for shape in SHAPES:
        x = torch.randn(shape)
        torch.testing.assert_close(compiled(x.to("maia")).cpu(), fn(x), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("fn", [lambda x: x.var(-1), lambda x: x.std(0), lambda x: x.norm(dim=-1)],
                         ids=["var", "std", "norm"])
def test_reductions_dividing_by_dynamic_sizes(fn):
    compiled = torch.compile(fn, dynamic=True)
    for shape in SHAPES:
        x = torch.randn(shape)
        torch.testing.assert_close(compiled(x.to("maia")).cpu(), fn(x), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("shift,dim", [(1, 1), (-2, 0)])
def test_roll_with_dynamic_sizes(shift, dim):
    # The rolled index is Mod(ks0 - shift, ks0) (torch's Mod, not sympy's).
    def fn(x):
        return torch.roll(x, shift, dim) * 2

    compiled = torch.compile(fn, dynamic=True)
    for shape in SHAPES:
        x = torch.randn(shape)
        torch.testing.assert_close(compiled(x.to("maia")).cpu(), fn(x))


@pytest.mark.parametrize("shift", [5, -2])
def test_pad_of_roll_with_dynamic_sizes(shift):
    # Padding a rolled 1-D tensor indexes through Where(i < 0, ks0 + i, i).
    def fn(x):
        return torch.nn.functional.pad(torch.roll(x, shift, 0), (2, 1), value=0)

    compiled = torch.compile(fn, dynamic=True)
    for n in (100, 7, 33):
        x = torch.randn(n)
        torch.testing.assert_close(compiled(x.to("maia")).cpu(), fn(x))


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_non_constant_pads(mode, dynamic):
    # Reflection indexes through Abs: x[ks0 - 1 - Abs(ks0 - 1 - Abs(i - 2))].
    def fn(x):
        return torch.nn.functional.pad(x, (2, 3, 1, 1), mode=mode) + 1

    compiled = torch.compile(fn, dynamic=dynamic)
    for shape in ((2, 6, 9), (1, 5, 4), (3, 4, 7)):
        x = torch.randn(shape)
        torch.testing.assert_close(compiled(x.to("maia")).cpu(), fn(x))


# Not "area": Inductor's adaptive_avg_pool2d lowering cannot decide its
# window-size test on symbolic sizes, on the CPU too (docs/conformance.md).
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact", "bilinear", "bicubic"])
def test_interpolate_by_a_scale_factor_with_dynamic_sizes(mode):
    # The output size is TruncToInt(1.7*ToFloat(ks0)) inside the kernels.
    def fn(x):
        return torch.nn.functional.interpolate(x, scale_factor=1.7, mode=mode) * 2

    compiled = torch.compile(fn, dynamic=True)
    for shape in ((1, 2, 5, 6), (2, 3, 4, 9), (1, 1, 7, 3)):
        x = torch.randn(shape)
        torch.testing.assert_close(compiled(x.to("maia")).cpu(), fn(x))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_attention_scale_of_a_dynamic_head_size(dtype):
    # The decomposition scales q and k by FloatPow(FloatTrueDiv(1.0,
    # FloatPow(ToFloat(ks0), 0.5)), 0.5): sqrt(1 / sqrt(E)) each (fuzzer
    # seed 54 of --nn --float64).
    def fn(q, k, v):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v)

    compiled = torch.compile(fn, dynamic=True)
    for heads, length, size in ((2, 5, 8), (3, 7, 13)):
        q, k, v = (torch.randn(2, heads, length, size, dtype=dtype) for _ in range(3))
        tolerance = {"atol": 1e-10, "rtol": 1e-10} if dtype == torch.float64 else {}
        torch.testing.assert_close(compiled(q.to("maia"), k.to("maia"), v.to("maia")).cpu(),
                                   fn(q, k, v), **tolerance)



@pytest.mark.parametrize("channels", [3, 4, 5])
def test_epilogue_over_a_length_that_shrinks_as_a_size_grows(channels):
    # The output length is 6 - s (s: the channel count), so the row split of
    # the fused minimum is gcd(6 - s, 6 * (6 - s)); sympy's gcd returned
    # s - 6, a negative row length (wrong values at s = 3).
    def fn(x, weight, other):
        y = torch.nn.functional.conv1d(x, weight, None, padding=2, dilation=2, groups=x.shape[1])
        return torch.minimum(y, other)

    torch.manual_seed(channels)
    x = torch.randn(1, channels, 6 - channels)
    weight = torch.randn(2 * channels, 1, 3)
    other = torch.randn(1, 1, 6 - channels)
    compiled = torch.compile(fn, dynamic=True)
    got = compiled(x.to("maia"), weight.to("maia"), other.to("maia"))
    torch.testing.assert_close(got.cpu(), fn(x, weight, other), atol=1e-5, rtol=1e-5)
