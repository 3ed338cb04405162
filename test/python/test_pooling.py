"""2-D pooling on maia (max, avg, adaptive avg, adaptive max; forward and
backward) against the CPU: kernel/stride/padding/dilation/ceil_mode/
count_include_pad/divisor_override, odd sizes, 3-D inputs, channels-last
and sliced inputs, NaN, every float dtype and the integer dtypes the CPU
has; and that none of it reaches the host fallback.

float16/bfloat16 forwards are compared with the CPU in the same dtype;
their gradients with the CPU's float32 gradients of the same values (maia
accumulates them in float32, the CPU in the 16-bit type), both within
PyTorch's device-vs-CPU tolerances for the dtype."""

import re

import pytest
import torch
import torch.nn.functional as F

from opinfo_support import LOW_PRECISION_TOLERANCES

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
POOL_OPS = ("max_pool2d_with_indices", "max_pool2d_with_indices_backward", "avg_pool2d",
            "avg_pool2d_backward", "_adaptive_avg_pool2d", "_adaptive_avg_pool2d_backward",
            "adaptive_avg_pool2d", "adaptive_max_pool2d", "adaptive_max_pool2d_backward",
            "max_pool3d_with_indices", "max_pool3d_with_indices_backward", "avg_pool3d",
            "avg_pool3d_backward", "_adaptive_avg_pool3d", "_adaptive_avg_pool3d_backward",
            "adaptive_max_pool3d", "adaptive_max_pool3d_backward", "max_unpool2d",
            "max_unpool3d")


@pytest.fixture(autouse=True)
def no_pooling_fallback():
    """Every test: no pooling operator ran on the host fallback."""
    torch.maia.reset_fallback_counts()
    yield
    hits = {name: n for name, n in torch.maia.fallback_counts().items()
            if name.split(".")[0].removeprefix("aten::") in POOL_OPS}
    assert not hits, f"host fallbacks: {hits}"


def tolerances(dtype):
    return LOW_PRECISION_TOLERANCES.get(dtype, {})


def layout(x, kind):
    """x (values unchanged) as a contiguous, channels-last or sliced tensor."""
    if kind == "channels_last":
        return x.contiguous(memory_format=torch.channels_last)
    if kind == "sliced":  # every other column of a wider tensor, offset
        wide = torch.zeros(*x.shape[:-1], 2 * x.shape[-1] + 1, dtype=x.dtype)
        wide[..., 1::2] = x
        return wide[..., 1::2]
    return x


def make_input(shape, dtype, kind):
    x = torch.randn(shape, dtype=torch.float64).mul(4).to(dtype)
    return layout(x, kind)


def check_forward(fn, x, returns_indices=False):
    expected = fn(x)
    actual = fn(x.to("maia"))
    if returns_indices:
        (expected, expected_indices), (actual, actual_indices) = expected, actual
        assert torch.equal(actual_indices.cpu(), expected_indices)
        assert actual_indices.stride() == expected_indices.stride()
    torch.testing.assert_close(actual.cpu(), expected, equal_nan=True, **tolerances(x.dtype))
    assert actual.stride() == expected.stride()  # the layout compiled graphs expect


def check_backward(fn, x):
    """x's gradient through fn for a random output gradient, against the
    CPU's (in float32 for 16-bit dtypes)."""
    reference_dtype = torch.float32 if x.dtype in LOW_PRECISION_TOLERANCES else x.dtype
    xc = x.detach().to(reference_dtype).requires_grad_()
    yc = fn(xc)
    grad = torch.randn_like(yc).to(x.dtype)
    yc.backward(grad.to(reference_dtype))
    xm = x.detach().to("maia").requires_grad_()
    fn(xm).backward(grad.to("maia"))
    assert xm.grad.dtype == x.dtype
    torch.testing.assert_close(xm.grad.cpu(), xc.grad.to(x.dtype), **tolerances(x.dtype))


MAX_CASES = [
    ((2, 3, 9, 11), dict(kernel_size=3)),  # stride defaults to the kernel
    ((2, 3, 9, 11), dict(kernel_size=3, stride=2, padding=1)),
    ((2, 3, 9, 11), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    # ceil_mode's last window would start in the right padding: dropped
    ((1, 2, 5, 5), dict(kernel_size=2, stride=2, padding=1, ceil_mode=True)),
    ((2, 2, 10, 10), dict(kernel_size=2, stride=3, ceil_mode=True)),
    ((2, 2, 13, 8), dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 0), dilation=(2, 3))),
    ((2, 3, 7, 7), dict(kernel_size=3, stride=1, padding=1, dilation=2, ceil_mode=True)),
    ((2, 3, 6, 5), dict(kernel_size=(5, 4), padding=2)),
    ((3, 9, 11), dict(kernel_size=2)),  # 3-D (C, H, W)
    ((4, 7, 1), dict(kernel_size=(3, 1), stride=(2, 1), padding=(1, 0))),  # 3-D, max_pool1d's
    ((1, 1, 1, 1), dict(kernel_size=1)),
]
AVG_CASES = [
    ((2, 3, 9, 11), dict(kernel_size=3)),
    ((2, 3, 9, 11), dict(kernel_size=3, stride=2, padding=1)),
    ((2, 3, 9, 11), dict(kernel_size=3, stride=2, padding=1, count_include_pad=False)),
    # ceil_mode windows past the padding: count_include_pad counts the
    # padding, not the positions beyond it
    ((2, 3, 8, 7), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    ((2, 3, 8, 7), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True,
                        count_include_pad=False)),
    ((1, 2, 5, 5), dict(kernel_size=2, stride=2, padding=1, ceil_mode=True)),
    ((2, 2, 10, 9), dict(kernel_size=(4, 2), stride=(3, 1), padding=(2, 1), ceil_mode=True)),
    ((2, 3, 9, 11), dict(kernel_size=2, divisor_override=3)),
    ((2, 3, 9, 11), dict(kernel_size=3, stride=2, padding=1, divisor_override=5,
                         count_include_pad=False)),
    ((3, 9, 11), dict(kernel_size=(2, 3), stride=1)),  # 3-D
    ((1, 1, 1, 1), dict(kernel_size=1)),
]
LAYOUTS = ["contiguous", "channels_last", "sliced"]


def layout_cases(cases):
    return [(shape, options, kind) for shape, options in cases for kind in LAYOUTS
            if kind != "channels_last" or len(shape) == 4]


def case_id(value):
    if isinstance(value, dict):
        return ",".join(f"{k}={v}" for k, v in value.items())
    return str(value)


def max_pool(options):
    return lambda t: F.max_pool2d(t, return_indices=True, **options)


def avg_pool(options):
    return lambda t: F.avg_pool2d(t, **options)


class TestMaxPool2d:
    @pytest.mark.parametrize("dtype", FLOATS, ids=str)
    @pytest.mark.parametrize("shape,options,kind", layout_cases(MAX_CASES), ids=case_id)
    def test_forward(self, shape, options, kind, dtype):
        check_forward(max_pool(options), make_input(shape, dtype, kind), returns_indices=True)

    @pytest.mark.parametrize("dtype", FLOATS, ids=str)
    @pytest.mark.parametrize("shape,options,kind", layout_cases(MAX_CASES), ids=case_id)
    def test_backward(self, shape, options, kind, dtype):
        check_backward(lambda t: F.max_pool2d(t, **options), make_input(shape, dtype, kind))

    @pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int16, torch.int8,
                                       torch.uint8], ids=str)
    def test_integer_dtypes(self, dtype):
        x = torch.randint(0, 100, (2, 3, 9, 11)).to(dtype)
        check_forward(max_pool(dict(kernel_size=3, stride=2, padding=1)), x,
                      returns_indices=True)

    def test_nan_wins_and_gives_the_index(self):
        x = torch.randn(2, 3, 8, 9)
        x[0, 0, 1, 1] = float("nan")
        x[1, 2, 4:6, 3:5] = float("nan")  # several in one window: the last one's index
        x[0, 1, 0, 0] = float("inf")
        x[1, 1] = float("-inf")  # a plane of -inf: the window's first index
        for dtype in FLOATS:
            for options in [dict(kernel_size=3, stride=2, padding=1),
                            dict(kernel_size=2, dilation=2, ceil_mode=True)]:
                check_forward(max_pool(options), x.to(dtype), returns_indices=True)

    @pytest.mark.parametrize("dtype", FLOATS + [torch.int32], ids=str)
    def test_channels_last_channel_blocks(self, dtype):
        # 37 channels: two full blocks of the channels-last kernel and a partial
        # one (float32: four blocks of 8 in AVX2, five channels generic).
        x = torch.randn(2, 37, 9, 10).mul(50).to(dtype)
        if dtype.is_floating_point:
            x[0, 5, 2, 3] = x[1, 20, 4:6, 4] = float("nan")
            x[1, 36] = x[0, 3] = float("-inf")
        x = x.contiguous(memory_format=torch.channels_last)
        for options in [dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
                        dict(kernel_size=(2, 3), dilation=(2, 1), padding=(1, 1))]:
            check_forward(max_pool(options), x, returns_indices=True)

    def test_max_pool1d(self):
        x = torch.randn(2, 5, 17)
        check_forward(lambda t: F.max_pool1d(t, 3, 2, 1, return_indices=True), x,
                      returns_indices=True)
        check_backward(lambda t: F.max_pool1d(t, 4, 3, 2, ceil_mode=True), x)

    def test_out_variants(self):
        x = torch.randn(2, 3, 9, 11)
        expected, expected_indices = F.max_pool2d(x, 3, 2, 1, return_indices=True)
        out = torch.empty(0, device="maia")
        indices = torch.empty(0, dtype=torch.long, device="maia")
        torch.ops.aten.max_pool2d_with_indices.out(x.to("maia"), [3, 3], [2, 2], [1, 1],
                                                   [1, 1], False, out=out, indices=indices)
        torch.testing.assert_close(out.cpu(), expected)
        assert torch.equal(indices.cpu(), expected_indices)
        grad = torch.randn_like(expected)
        grad_input = torch.empty(0, device="maia")
        torch.ops.aten.max_pool2d_with_indices_backward.grad_input(
            grad.to("maia"), x.to("maia"), [3, 3], [2, 2], [1, 1], [1, 1], False,
            indices, grad_input=grad_input)
        reference = torch.ops.aten.max_pool2d_with_indices_backward(
            grad, x, [3, 3], [2, 2], [1, 1], [1, 1], False, expected_indices)
        torch.testing.assert_close(grad_input.cpu(), reference)


class TestAvgPool2d:
    @pytest.mark.parametrize("dtype", FLOATS, ids=str)
    @pytest.mark.parametrize("shape,options,kind", layout_cases(AVG_CASES), ids=case_id)
    def test_forward(self, shape, options, kind, dtype):
        check_forward(avg_pool(options), make_input(shape, dtype, kind))

    @pytest.mark.parametrize("dtype", FLOATS, ids=str)
    @pytest.mark.parametrize("shape,options,kind", layout_cases(AVG_CASES), ids=case_id)
    def test_backward(self, shape, options, kind, dtype):
        check_backward(avg_pool(options), make_input(shape, dtype, kind))

    @pytest.mark.parametrize("options", [dict(kernel_size=3, stride=2, padding=1),
                                         dict(kernel_size=2, divisor_override=3),
                                         dict(kernel_size=3, padding=1, ceil_mode=True,
                                              count_include_pad=False)], ids=case_id)
    def test_int64_truncates_like_the_cpu(self, options):
        x = torch.randint(-50, 50, (2, 3, 9, 11))
        check_forward(avg_pool(options), x)
        grad_output = torch.randint(-50, 50, avg_pool(options)(x).shape)
        args = ([options["kernel_size"]] * 2, [options.get("stride", options["kernel_size"])] * 2,
                [options.get("padding", 0)] * 2, options.get("ceil_mode", False),
                options.get("count_include_pad", True), options.get("divisor_override"))
        expected = torch.ops.aten.avg_pool2d_backward(grad_output, x, *args)
        actual = torch.ops.aten.avg_pool2d_backward(grad_output.to("maia"), x.to("maia"), *args)
        assert torch.equal(actual.cpu(), expected)

    @pytest.mark.parametrize("dtype", FLOATS + [torch.int64], ids=str)
    def test_channels_last_channel_blocks(self, dtype):
        # 37 channels: two full blocks of the channels-last kernel and a partial one.
        x = torch.randn(2, 37, 9, 10).mul(50).to(dtype)
        x = x.contiguous(memory_format=torch.channels_last)
        for options in [dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
                        dict(kernel_size=3, stride=2, padding=1, ceil_mode=True,
                             count_include_pad=False),
                        dict(kernel_size=(2, 3), padding=(1, 1), divisor_override=4)]:
            check_forward(avg_pool(options), x)

    def test_nan_propagates(self):
        x = torch.randn(2, 3, 8, 9)
        x[0, 0, 2, 2] = float("nan")
        check_forward(avg_pool(dict(kernel_size=3, stride=2, padding=1)), x)

    def test_avg_pool1d_and_out_variant(self):
        x = torch.randn(2, 5, 17)
        check_forward(lambda t: F.avg_pool1d(t, 4, 3, 2, ceil_mode=True), x)
        check_backward(lambda t: F.avg_pool1d(t, 3, 2, 1, count_include_pad=False), x)
        x = torch.randn(2, 3, 9, 11)
        out = torch.empty(0, device="maia")
        torch.ops.aten.avg_pool2d.out(x.to("maia"), [3, 3], [2, 2], [1, 1], out=out)
        torch.testing.assert_close(out.cpu(), F.avg_pool2d(x, 3, 2, 1))


ADAPTIVE_CASES = [
    ((2, 3, 9, 11), (4, 5)),  # windows of varying sizes, overlapping
    ((2, 3, 9, 11), (9, 11)),  # identity
    ((2, 3, 5, 4), (7, 9)),  # larger than the input
    ((2, 3, 9, 11), (None, 3)),  # keep the height
    ((2, 3, 9, 11), (1, 2)),
    ((3, 10, 7), (3, 3)),  # 3-D
]


def adaptive_cases():
    return [(shape, size, kind) for shape, size in ADAPTIVE_CASES for kind in LAYOUTS
            if kind != "channels_last" or len(shape) == 4]


class TestAdaptivePool2d:
    @pytest.mark.parametrize("dtype", FLOATS, ids=str)
    @pytest.mark.parametrize("shape,size,kind", adaptive_cases(), ids=case_id)
    def test_avg(self, shape, size, kind, dtype):
        x = make_input(shape, dtype, kind)
        check_forward(lambda t: F.adaptive_avg_pool2d(t, size), x)
        check_backward(lambda t: F.adaptive_avg_pool2d(t, size), x)

    @pytest.mark.parametrize("dtype", FLOATS, ids=str)
    @pytest.mark.parametrize("shape,size,kind", adaptive_cases(), ids=case_id)
    def test_max(self, shape, size, kind, dtype):
        x = make_input(shape, dtype, kind)
        check_forward(lambda t: F.adaptive_max_pool2d(t, size, return_indices=True), x,
                      returns_indices=True)
        check_backward(lambda t: F.adaptive_max_pool2d(t, size), x)

    def test_nan(self):
        x = torch.randn(2, 3, 9, 11)
        x[1, 2, 3, 4] = float("nan")
        check_forward(lambda t: F.adaptive_max_pool2d(t, (4, 5), return_indices=True), x,
                      returns_indices=True)
        check_forward(lambda t: F.adaptive_avg_pool2d(t, (4, 5)), x)

    def test_1d_area_interpolation_and_out_variants(self):
        x = torch.randn(2, 5, 17)
        check_forward(lambda t: F.adaptive_avg_pool1d(t, 6), x)
        check_forward(lambda t: F.adaptive_max_pool1d(t, 6, return_indices=True), x,
                      returns_indices=True)
        x = torch.randn(2, 3, 9, 11)
        check_forward(lambda t: F.interpolate(t, size=(4, 7), mode="area"), x)
        out = torch.empty(0, device="maia")
        torch._C._nn.adaptive_avg_pool2d(x.to("maia"), [4, 5], out=out)
        torch.testing.assert_close(out.cpu(), F.adaptive_avg_pool2d(x, (4, 5)))
        out, indices = torch.empty(0, device="maia"), torch.empty(0, dtype=torch.long,
                                                                  device="maia")
        torch._C._nn.adaptive_max_pool2d(x.to("maia"), [4, 5], out=(out, indices))
        expected, expected_indices = F.adaptive_max_pool2d(x, (4, 5), return_indices=True)
        torch.testing.assert_close(out.cpu(), expected)
        assert torch.equal(indices.cpu(), expected_indices)


class TestErrorsAndEdges:
    @pytest.mark.parametrize("call", [
        lambda t: F.max_pool2d(t, 3, padding=2),  # padding over half the kernel
        lambda t: F.max_pool2d(t, 7),  # output too small
        lambda t: F.max_pool2d(t, 2, stride=0),
        lambda t: F.max_pool2d(t.bool(), 2),
        lambda t: F.max_pool2d(t[0, 0], 2),  # 2-D input
        lambda t: F.avg_pool2d(t, 2, divisor_override=0),
        lambda t: F.avg_pool2d(t.int(), 2),
        lambda t: F.adaptive_avg_pool2d(t.long(), 2),
        lambda t: F.adaptive_avg_pool2d(t[..., :0], 2),
        lambda t: F.adaptive_max_pool2d(t.long(), 2),
        lambda t: F.adaptive_max_pool2d(t[0, 0], 2),
    ])
    def test_errors_match_the_cpu(self, call):
        x = torch.randn(2, 3, 5, 5)
        with pytest.raises(Exception) as expected:
            call(x)
        with pytest.raises(type(expected.value)) as actual:
            call(x.to("maia"))
        assert str(actual.value) == str(expected.value)

    def test_empty_batch(self):
        x = torch.randn(0, 3, 8, 8)
        check_forward(max_pool(dict(kernel_size=2)), x, returns_indices=True)
        check_forward(avg_pool(dict(kernel_size=2)), x)
        check_forward(lambda t: F.adaptive_avg_pool2d(t, 3), x)
        check_forward(lambda t: F.adaptive_max_pool2d(t, 3, return_indices=True), x,
                      returns_indices=True)

    def test_large_input_splits_over_programs(self):
        # Big enough for several programs: each program's rows/planes must
        # not step on another's.
        x = torch.randn(4, 16, 64, 64)
        check_forward(max_pool(dict(kernel_size=3, stride=2, padding=1)), x,
                      returns_indices=True)
        check_backward(lambda t: F.max_pool2d(t, 3, 1, 1), x)
        check_backward(avg_pool(dict(kernel_size=3, stride=2, padding=1)), x)
        check_backward(lambda t: F.adaptive_avg_pool2d(t, (7, 9)), x)
        check_backward(lambda t: F.adaptive_max_pool2d(t, (7, 9)), x)

    def test_resnet_stem_and_head_train_step(self):
        conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        x = torch.randn(2, 3, 16, 16)

        def model(m, t):
            y = F.max_pool2d(F.relu(m(t)), 3, 2, 1)
            return F.adaptive_avg_pool2d(y, (1, 1)).flatten(1).sum()

        model(conv, x).backward()
        conv_m = torch.nn.Conv2d(3, 8, 3, padding=1).to("maia")
        conv_m.load_state_dict(conv.state_dict())
        model(conv_m, x.to("maia")).backward()
        torch.testing.assert_close(conv_m.weight.grad.cpu(), conv.weight.grad, atol=1e-4,
                                   rtol=1e-4)


# max_unpool: the scatter of pooled values back to the positions their
# indices name (ops/MaxUnpool.cpp), against the CPU, then its gradient.
UNPOOL_CASES = [
    (F.max_pool1d, F.max_unpool1d, (2, 3, 11), dict(kernel_size=3, stride=2)),
    (F.max_pool2d, F.max_unpool2d, (2, 3, 9, 8), dict(kernel_size=2)),
    (F.max_pool2d, F.max_unpool2d, (3, 7, 6), dict(kernel_size=3, stride=2, padding=1)),
    (F.max_pool3d, F.max_unpool3d, (1, 2, 6, 5, 4), dict(kernel_size=2)),
]


@pytest.mark.parametrize("pool,unpool,shape,options", UNPOOL_CASES,
                         ids=lambda v: v.__name__ if callable(v) else str(v))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
def test_max_unpool_matches_cpu(pool, unpool, shape, options, dtype):
    torch.manual_seed(0)
    x = torch.randn(shape)
    pooled, indices = pool(x, return_indices=True, **options)
    pooled = pooled.to(dtype)
    spatial = {F.max_unpool1d: 1, F.max_unpool2d: 2, F.max_unpool3d: 3}[unpool]
    size = shape[-spatial:]
    expected = unpool(pooled, indices, options["kernel_size"], options.get("stride"),
                      options.get("padding", 0), output_size=size)
    torch.maia.reset_fallback_counts()
    actual = unpool(pooled.to("maia"), indices.to("maia"), options["kernel_size"],
                    options.get("stride"), options.get("padding", 0), output_size=size)
    assert torch.maia.fallback_counts() == {}
    assert actual.shape == expected.shape and torch.equal(actual.cpu(), expected)


def test_max_unpool_duplicates_layout_gradient_and_out():
    # Duplicate indices: the last value in input order wins, as on the CPU.
    values = torch.arange(1.0, 9.0).view(1, 2, 2, 2)
    indices = torch.tensor([[[[0, 0], [3, 0]], [[5, 5], [1, 2]]]])
    expected = torch.ops.aten.max_unpool2d(values, indices, [3, 2])
    actual = torch.ops.aten.max_unpool2d(values.to("maia"), indices.to("maia"), [3, 2])
    assert torch.equal(actual.cpu(), expected)
    # A channels-last input gives a channels-last output.
    x = torch.randn(2, 4, 6, 6).to(memory_format=torch.channels_last)
    pooled, idx = F.max_pool2d(x, 2, return_indices=True)
    out = F.max_unpool2d(pooled.to("maia"), idx.to("maia"), 2)
    expected = F.max_unpool2d(pooled, idx, 2)
    assert out.is_contiguous(memory_format=torch.channels_last) == expected.is_contiguous(
        memory_format=torch.channels_last)
    assert torch.equal(out.cpu(), expected)
    # The gradient gathers through the indices.
    pm = pooled.to("maia").requires_grad_()
    F.max_unpool2d(pm, idx.to("maia"), 2).pow(2).sum().backward()
    pc = pooled.clone().requires_grad_()
    F.max_unpool2d(pc, idx, 2).pow(2).sum().backward()
    torch.testing.assert_close(pm.grad.cpu(), pc.grad)
    result = torch.empty(3, device="maia")
    torch.ops.aten.max_unpool2d.out(pooled.to("maia"), idx.to("maia"), [6, 6], out=result)
    assert torch.equal(result.cpu(), expected)


def test_max_unpool_errors_are_the_cpus():
    x, idx = torch.randn(1, 2, 3, 3), torch.zeros(1, 2, 3, 3, dtype=torch.long)
    cases = [lambda x, i: torch.ops.aten.max_unpool2d(x, i.int(), [6, 6]),
             lambda x, i: torch.ops.aten.max_unpool2d(x, i[..., :2], [6, 6]),
             lambda x, i: torch.ops.aten.max_unpool2d(x[0, 0, 0], i[0, 0, 0], [6, 6]),
             lambda x, i: torch.ops.aten.max_unpool3d(x, i, [1, 6, 6], [1, 1], [0, 0, 0]),
             lambda x, i: torch.ops.aten.max_unpool2d(x.long(), i, [6, 6])]
    for case in cases:
        with pytest.raises(RuntimeError) as cpu_error:
            case(x, idx)
        with pytest.raises(type(cpu_error.value), match=re.escape(str(cpu_error.value)[:30])):
            case(x.to("maia"), idx.to("maia"))


# 3-D pooling (pooling3d.h): forward bit for bit the CPU's in float32/float64
# and int64 (the same windows, order and divisions), gradients, layouts.
POOL3D_CASES = {
    "max": (lambda x: F.max_pool3d(x, (2, 3, 2), stride=(1, 2, 2), padding=(1, 1, 0),
                                   dilation=(2, 1, 1), return_indices=True),
            [torch.float32, torch.float64, torch.bfloat16, torch.int64]),
    "max_ceil": (lambda x: F.max_pool3d(x, 2, ceil_mode=True, return_indices=True),
                 [torch.float32, torch.int32]),
    "avg": (lambda x: F.avg_pool3d(x, (3, 2, 2), stride=2, padding=1), [torch.float32,
                                                                         torch.float64,
                                                                         torch.int64]),
    "avg_exclude_pad": (lambda x: F.avg_pool3d(x, 3, stride=2, padding=1,
                                               count_include_pad=False, ceil_mode=True),
                        [torch.float32, torch.float64]),
    "avg_divisor": (lambda x: F.avg_pool3d(x, 2, divisor_override=3), [torch.float64]),
    "adaptive_avg": (lambda x: F.adaptive_avg_pool3d(x, (3, 2, 4)),
                     [torch.float32, torch.float64, torch.bfloat16]),
    "adaptive_max": (lambda x: F.adaptive_max_pool3d(x, (3, 2, 4), return_indices=True),
                     [torch.float32, torch.float64, torch.float16]),
}


def pool3d_input(dtype, channels_last=False, batch=True):
    torch.manual_seed(0)
    x = torch.randint(-50, 50, (2, 3, 7, 6, 9)) if not dtype.is_floating_point else (
        torch.randn(2, 3, 7, 6, 9))
    x = x.to(dtype)
    if dtype.is_floating_point and dtype != torch.bfloat16:
        x.view(-1)[::37] = float("nan")
    x = x if batch else x[0]
    return x.to(memory_format=torch.channels_last_3d) if channels_last else x


def bits_equal(actual, expected):
    actual = actual.cpu()
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    assert actual.stride() == expected.stride()
    if actual.dtype.is_floating_point:
        torch.testing.assert_close(actual, expected, rtol=0, atol=0, equal_nan=True)
    else:
        assert torch.equal(actual, expected)


@pytest.mark.parametrize("case", POOL3D_CASES)
@pytest.mark.parametrize("kind", ["contiguous", "channels_last", "unbatched"])
def test_pool3d_matches_cpu(case, kind):
    fn, dtypes = POOL3D_CASES[case]
    for dtype in dtypes:
        x = pool3d_input(dtype, kind == "channels_last", kind != "unbatched")
        expected = fn(x)
        actual = fn(x.to("maia"))
        for a, e in zip(actual, expected) if isinstance(expected, tuple) else [(actual,
                                                                                  expected)]:
            if dtype in (torch.bfloat16, torch.float16):
                torch.testing.assert_close(a.cpu(), e, equal_nan=True, **tolerances(dtype))
            else:
                bits_equal(a, e)


@pytest.mark.parametrize("case", [c for c in POOL3D_CASES if c != "avg_divisor"])
@pytest.mark.parametrize("channels_last", [False, True])
def test_pool3d_gradients_match_cpu(case, channels_last):
    fn, _ = POOL3D_CASES[case]
    x = torch.randn(2, 3, 7, 6, 9, dtype=torch.float64)
    if channels_last:
        x = x.to(memory_format=torch.channels_last_3d)
    xc = x.clone().requires_grad_()
    xm = x.to("maia").requires_grad_()
    yc, ym = fn(xc), fn(xm)
    yc, ym = (yc[0], ym[0]) if isinstance(yc, tuple) else (yc, ym)
    grad = torch.randn_like(yc)
    yc.backward(grad)
    ym.backward(grad.to("maia"))
    torch.testing.assert_close(xm.grad.cpu(), xc.grad)
    assert xm.grad.stride() == xc.grad.stride()


def test_pool3d_errors_are_the_cpus():
    x = torch.randn(1, 2, 4, 4, 4)
    cases = [lambda t: F.max_pool3d(t, 5), lambda t: F.max_pool3d(t, 2, padding=2),
             lambda t: F.avg_pool3d(t.half(), 2), lambda t: F.avg_pool3d(t.int(), 2),
             lambda t: F.adaptive_avg_pool3d(t.long(), 2),
             lambda t: F.adaptive_max_pool3d(t.long(), 2),
             lambda t: F.adaptive_avg_pool3d(t[:, :, :0], 2),
             lambda t: torch.ops.aten.max_pool3d_with_indices(t[0, 0, 0], [2], [], [0], [1])]
    for case in cases:
        with pytest.raises((RuntimeError, NotImplementedError)) as cpu_error:
            case(x)
        with pytest.raises(type(cpu_error.value), match=re.escape(str(cpu_error.value)[:40])):
            case(x.to("maia"))


@pytest.mark.parametrize("pool,shape", [
    (lambda t: F.max_pool2d(t, 2, 1, 1, 2), (3, 1, 3)),         # height 1: taps at -1, 1
    (lambda t: F.max_pool2d(t, (1, 2), 1, (0, 1), (1, 3)), (2, 5, 2)),  # width 2: -1, 2
    (lambda t: F.max_pool3d(t, 2, 1, 1, 2), (1, 2, 1, 3, 4)),
])
def test_backward_of_a_window_in_the_padding_is_a_clear_error(pool, shape):
    # ATen's checks let dilation put a whole window in the padding: the
    # forward gives -inf (the CPU's values and indices), the CPU's backward
    # then writes out of bounds (heap corruption, found by tools/fuzz).
    # maia refuses the backward on the host; the device stays usable.
    x = torch.randn(shape)
    xm = x.to("maia").requires_grad_()
    values = pool(xm)
    torch.testing.assert_close(values.detach().cpu(), pool(x))
    assert values.detach().isinf().any()
    with pytest.raises(ValueError, match="lies entirely in the padding .*dilation"):
        values.sum().backward()
    assert (xm.detach() * 2).cpu().equal(x * 2)
