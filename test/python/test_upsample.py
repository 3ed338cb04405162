"""F.interpolate's nearest, nearest-exact, linear, bilinear, trilinear and
bicubic modes, and antialiased bilinear and bicubic, on maia
(upsample_nearest1d/2d/3d, _upsample_nearest_exact1d/2d/3d,
upsample_linear1d, upsample_bilinear2d, upsample_trilinear3d,
upsample_bicubic2d, _upsample_bilinear2d_aa, _upsample_bicubic2d_aa and
their backwards) against the CPU: up- and
downsampling, sizes and scale factors (recomputed or not), align_corners
both ways, channels-last and sliced inputs, every float dtype and uint8;
and that none of it reaches the host fallback (except uint8 bilinear, which
and bicubic, which are counted there on purpose).

Nearest modes copy: equal to the CPU bit for bit. Linear modes compare
within assert_close's tolerances (PyTorch's device-vs-CPU ones for
float16/bfloat16); gradients of 16-bit dtypes with the CPU's float32
gradients of the same values (maia accumulates them in float32)."""

import itertools

import pytest
import torch
import torch.nn.functional as F

from opinfo_support import LOW_PRECISION_TOLERANCES

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
UPSAMPLE_OPS = ("upsample_nearest1d", "upsample_nearest2d", "upsample_nearest3d",
                "_upsample_nearest_exact1d", "_upsample_nearest_exact2d",
                "_upsample_nearest_exact3d", "upsample_linear1d", "upsample_bilinear2d",
                "upsample_trilinear3d", "upsample_bicubic2d", "_upsample_bilinear2d_aa",
                "_upsample_bicubic2d_aa")


@pytest.fixture(autouse=True)
def no_upsample_fallback():
    torch.maia.reset_fallback_counts()
    yield
    hits = {name: n for name, n in torch.maia.fallback_counts().items()
            if name.split(".")[0].removeprefix("aten::").removesuffix("_backward")
            in UPSAMPLE_OPS}
    assert not hits, f"host fallbacks: {hits}"


def tolerances(dtype):
    return LOW_PRECISION_TOLERANCES.get(dtype, {})


def layout(x, kind):
    if kind == "channels_last":
        return x.contiguous(memory_format=torch.channels_last if x.dim() == 4
                            else torch.channels_last_3d)
    if kind == "sliced":
        wide = torch.zeros(*x.shape[:-1], 2 * x.shape[-1] + 1, dtype=x.dtype)
        wide[..., 1::2] = x
        return wide[..., 1::2]
    return x


NEAREST_CASES = [  # input shape, interpolate keywords
    ((2, 3, 5, 7), dict(size=(10, 14))),  # exactly 2x: the CPU's shift path
    ((2, 3, 5, 7), dict(size=(5, 7))),  # 1x
    ((1, 2, 6, 9), dict(size=(4, 13))),  # down in one dim, up in the other
    ((1, 2, 6, 9), dict(scale_factor=1.7)),
    ((1, 2, 6, 9), dict(scale_factor=(0.6, 2.3), recompute_scale_factor=True)),
    ((2, 2, 7), dict(size=11)),  # 1-D
    ((2, 2, 7), dict(scale_factor=2.5)),
    ((1, 2, 3, 4, 5), dict(size=(5, 3, 9))),  # 3-D
    ((2, 1, 4, 3, 6), dict(scale_factor=(2, 1.5, 0.7))),
]


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
@pytest.mark.parametrize("dtype", FLOATS + [torch.uint8], ids=str)
@pytest.mark.parametrize("case", NEAREST_CASES, ids=str)
def test_nearest_is_the_cpus_bit_for_bit(mode, dtype, case):
    shape, kwargs = case
    x = torch.randn(shape).mul(50).to(dtype)
    for kind in ("contiguous", "channels_last", "sliced") if len(shape) >= 4 else ("contiguous",):
        xi = layout(x, kind)
        expected = F.interpolate(xi, mode=mode, **kwargs)
        actual = F.interpolate(xi.to("maia"), mode=mode, **kwargs)
        assert torch.equal(actual.cpu(), expected)
        assert actual.stride() == expected.stride()


LINEAR_CASES = [
    ((2, 3, 5, 7), dict(size=(10, 14))),
    ((2, 3, 5, 7), dict(size=(5, 7))),
    ((1, 4, 6, 9), dict(size=(4, 13))),
    ((1, 4, 6, 9), dict(size=(1, 1))),
    ((1, 2, 6, 9), dict(scale_factor=1.7)),
    ((1, 2, 6, 9), dict(scale_factor=(0.6, 2.3), recompute_scale_factor=True)),
    ((2, 2, 7), dict(size=11)),
    ((2, 2, 7), dict(scale_factor=0.5)),
    ((2, 3, 4, 5, 6), dict(size=(7, 9, 11))),  # trilinear
    ((1, 2, 5, 6, 7), dict(scale_factor=(0.6, 1.5, 2.2))),
    ((1, 2, 3, 4, 5), dict(size=(3, 4, 5))),
]
LINEAR_MODES = {3: ["linear"], 4: ["bilinear", "bicubic"], 5: ["trilinear"]}


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("case", LINEAR_CASES, ids=str)
def test_linear_modes(align_corners, dtype, case):
    shape, kwargs = case
    x = torch.randn(shape).mul(4).to(dtype)
    kinds = ("contiguous", "channels_last", "sliced") if len(shape) >= 4 else ("contiguous",)
    for mode, kind in itertools.product(LINEAR_MODES[len(shape)], kinds):
        xi = layout(x, kind)
        expected = F.interpolate(xi, mode=mode, align_corners=align_corners, **kwargs)
        actual = F.interpolate(xi.to("maia"), mode=mode, align_corners=align_corners, **kwargs)
        torch.testing.assert_close(actual.cpu(), expected, **tolerances(dtype))
        assert actual.stride() == expected.stride()


def check_backward(fn, x):
    reference_dtype = torch.float32 if x.dtype in LOW_PRECISION_TOLERANCES else x.dtype
    xc = x.detach().to(reference_dtype).requires_grad_()
    yc = fn(xc)
    grad = torch.randn_like(yc).to(x.dtype)
    yc.backward(grad.to(reference_dtype))
    xm = x.detach().to("maia").requires_grad_()
    fn(xm).backward(grad.to("maia"))
    assert xm.grad.dtype == x.dtype
    torch.testing.assert_close(xm.grad.cpu(), xc.grad.to(x.dtype), **tolerances(x.dtype))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("case", NEAREST_CASES + LINEAR_CASES, ids=str)
def test_backward(dtype, case):
    shape, kwargs = case
    x = torch.randn(shape).to(dtype)
    modes = ["nearest", "nearest-exact"] + LINEAR_MODES[len(shape)]
    for mode in modes:
        for align in ((None,) if "nearest" in mode else (False, True)):
            extra = {} if align is None else dict(align_corners=align)
            check_backward(lambda t: F.interpolate(t, mode=mode, **kwargs, **extra), x)
    if len(shape) >= 4:
        for mode in LINEAR_MODES[len(shape)]:
            check_backward(lambda t: F.interpolate(t, mode=mode, **kwargs),
                           layout(x, "channels_last"))


def test_gradcheck_in_float64():
    x = torch.randn(1, 2, 3, 4, dtype=torch.float64, device="maia", requires_grad=True)
    for mode, extra in [("nearest", {}), ("bilinear", dict(align_corners=False)),
                        ("bilinear", dict(align_corners=True)),
                        ("bicubic", dict(align_corners=False))]:
        assert torch.autograd.gradcheck(
            lambda t: F.interpolate(t, size=(5, 7), mode=mode, **extra), (x,))
    x = torch.randn(1, 1, 2, 3, 2, dtype=torch.float64, device="maia", requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda t: F.interpolate(t, size=(3, 4, 3), mode="trilinear"), (x,))


def test_large_input_splits_over_programs():
    x = torch.randn(4, 16, 64, 64)
    for mode, extra in [("nearest", {}), ("bilinear", dict(align_corners=False))]:
        expected = F.interpolate(x, scale_factor=2, mode=mode, **extra)
        actual = F.interpolate(x.to("maia"), scale_factor=2, mode=mode, **extra)
        torch.testing.assert_close(actual.cpu(), expected)
        check_backward(lambda t: F.interpolate(t, size=(96, 80), mode=mode, **extra), x)


def test_out_variants():
    x = torch.randn(1, 2, 3, 4)
    expected = torch.ops.aten.upsample_bilinear2d(x, [5, 6], False)
    out = torch.empty(0, device="maia")
    torch.ops.aten.upsample_bilinear2d.out(x.to("maia"), [5, 6], False, out=out)
    torch.testing.assert_close(out.cpu(), expected)
    out = torch.empty(0, device="maia")
    torch.ops.aten.upsample_nearest2d.out(x.to("maia"), [5, 6], out=out)
    assert torch.equal(out.cpu(), torch.ops.aten.upsample_nearest2d(x, [5, 6]))


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_uint8_images_are_the_cpus_through_the_counted_fallback(mode):
    x = torch.randint(0, 256, (1, 3, 5, 7), dtype=torch.uint8)
    expected = F.interpolate(x, size=(9, 4), mode=mode)
    actual = F.interpolate(x.to("maia"), size=(9, 4), mode=mode)
    assert torch.equal(actual.cpu(), expected)
    assert torch.maia.fallback_counts() == {f"aten::upsample_{mode}2d": 1}
    torch.maia.reset_fallback_counts()  # the one expected


def test_errors_are_the_cpus():
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        F.interpolate(torch.ones(1, 1, 2, 2, dtype=torch.int64, device="maia"), size=3)
    for mode, shape in [("bilinear", (1, 1, 2, 2)), ("bicubic", (1, 1, 2, 2)),
                        ("trilinear", (1, 1, 2, 2, 2))]:
        x = torch.ones(shape, dtype=torch.int64)
        with pytest.raises(NotImplementedError) as cpu_error:
            F.interpolate(x, size=3, mode=mode)
        with pytest.raises(NotImplementedError, match=str(cpu_error.value).splitlines()[0]):
            F.interpolate(x.to("maia"), size=3, mode=mode)
    with pytest.raises(RuntimeError, match="Input and output sizes should be greater than 0"):
        torch.ops.aten.upsample_nearest2d(torch.ones(1, 1, 2, 2, device="maia"), [0, 3])


@pytest.mark.parametrize("shape, size", [((1, 2, 9), 13), ((1, 2, 5, 9), (5, 13)),
                                         ((1, 5, 60, 70), (60, 90))])
def test_infinities_and_nan_propagate_as_on_the_cpu(shape, size):
    """An infinite input times a zero weight is NaN where the CPU
    multiplies by it (a 2-D kernel's kept height), and not where it has no
    such weight (1-D: no height at all); gradients likewise."""
    x = torch.randn(shape)
    x.view(-1)[[0, 5, 17]] = torch.tensor([float("inf"), -float("inf"), float("nan")])
    mode = "linear" if len(shape) == 3 else "bilinear"
    expected = F.interpolate(x, size=size, mode=mode)
    actual = F.interpolate(x.to("maia"), size=size, mode=mode)
    torch.testing.assert_close(actual.cpu(), expected, equal_nan=True)
    grad = torch.randn(expected.shape)
    grad.view(-1)[[1, 8]] = torch.tensor([float("inf"), float("nan")])
    op = torch.ops.aten.upsample_linear1d_backward if len(shape) == 3 else \
        torch.ops.aten.upsample_bilinear2d_backward
    sizes = [size] if len(shape) == 3 else list(size)
    expected = op(grad, sizes, list(shape), False)
    actual = op(grad.to("maia"), sizes, list(shape), False)
    torch.testing.assert_close(actual.cpu(), expected, equal_nan=True)


ANTIALIAS_CASES = [  # input shape, interpolate keywords
    ((2, 3, 17, 13), dict(size=(5, 7))),  # downsampling: windows wider than the filter
    ((1, 2, 8, 9), dict(size=(16, 20))),  # upsampling
    ((1, 2, 8, 9), dict(size=(3, 20))),  # down in one dimension, up in the other
    ((1, 3, 6, 9), dict(size=(6, 4))),  # one dimension unchanged: not resampled
    ((2, 2, 30, 31), dict(scale_factor=(0.3, 0.45))),
    ((1, 1, 7, 5), dict(size=(7, 5))),  # nothing resampled: a copy
]


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("case", ANTIALIAS_CASES, ids=str)
def test_antialias_forward_and_backward(mode, dtype, case):
    shape, kwargs = case
    x = torch.randn(shape, dtype=dtype)
    for align in (False, True):
        fn = lambda t: F.interpolate(t, mode=mode, antialias=True, align_corners=align, **kwargs)
        torch.maia.reset_fallback_counts()
        for kind in ("contiguous", "channels_last", "sliced"):
            source = layout(x, kind)
            expected, actual = fn(source), fn(source.to("maia"))
            torch.testing.assert_close(actual.cpu(), expected)
            assert actual.stride() == expected.stride()
        check_backward(fn, x)
        check_backward(fn, layout(x, "channels_last"))
        assert torch.maia.fallback_counts() == {}


def test_antialias_gradcheck_and_errors():
    x = torch.randn(1, 2, 7, 6, dtype=torch.float64, device="maia", requires_grad=True)
    torch.autograd.gradcheck(lambda t: F.interpolate(t, size=(3, 4), mode="bicubic",
                                                     antialias=True), (x,))
    for dtype in (torch.float16, torch.bfloat16):
        with pytest.raises(RuntimeError, match="compute_index_ranges_weights.* not implemented"):
            F.interpolate(torch.ones(1, 1, 4, 4, dtype=dtype, device="maia"), size=2,
                          mode="bilinear", antialias=True)
