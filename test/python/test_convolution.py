"""Convolution on maia: 1-D and 2-D, plain and transposed, on the device (im2col + GEMM,
col2im), forward and backward, against the CPU, integer ones too; 3-D ones as sums of 2-D ones
over the depth taps; transposed ones whose output padding is not below the stride have their
backward on the counted host path."""

import re

import pytest
import torch
import torch.nn.functional as F

CASES = [
    ((2, 3, 9, 9), (8, 3, 3, 3), dict(stride=1, padding=1)),
    ((2, 4, 10, 7), (6, 2, 3, 2), dict(stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2)),
    ((1, 8, 12, 12), (8, 1, 3, 3), dict(padding=1, groups=8)),  # depthwise
    ((2, 3, 9, 9), (4, 3, 1, 1), dict()),  # pointwise
    ((1, 2, 5, 5), (3, 2, 5, 5), dict(padding=2)),  # kernel as large as the input
    ((3, 5, 17), (7, 5, 4), dict(stride=2, padding=3)),  # 1-D
]


# channels_last: the 2-D cases again with NHWC inputs
LAYOUT_CASES = [(*case, False) for case in CASES] + [
    (*case, True) for case in CASES if len(case[0]) == 4]


@pytest.mark.parametrize("input_shape,weight_shape,options,channels_last", LAYOUT_CASES)
def test_convolution_forward_and_backward_on_device(input_shape, weight_shape, options,
                                                    channels_last):
    conv = F.conv2d if len(input_shape) == 4 else F.conv1d
    x = torch.randn(input_shape)
    if channels_last:
        x = x.to(memory_format=torch.channels_last)
    x.requires_grad_()
    w = torch.randn(weight_shape, requires_grad=True)
    b = torch.randn(weight_shape[0], requires_grad=True)
    y = conv(x, w, b, **options)
    grad = torch.randn_like(y)
    y.backward(grad)

    torch.maia.reset_fallback_counts()
    xm, wm, bm = (t.detach().to("maia").requires_grad_() for t in (x, w, b))
    ym = conv(xm, wm, bm, **options)
    ym.backward(grad.to("maia"))
    for actual, expected in [(ym, y), (xm.grad, x.grad), (wm.grad, w.grad), (bm.grad, b.grad)]:
        torch.testing.assert_close(actual.cpu(), expected, atol=1e-4, rtol=1e-4)
    assert torch.maia.fallback_counts() == {}


def test_half_precision_convolution():
    x, w = torch.randn(2, 4, 8, 8), torch.randn(6, 4, 3, 3)
    for dtype in (torch.bfloat16, torch.float16):
        actual = F.conv2d(x.to(dtype).to("maia"), w.to(dtype).to("maia"), padding=1)
        expected = F.conv2d(x.to(dtype).float(), w.to(dtype).float(), padding=1)
        torch.testing.assert_close(actual.cpu().float(), expected, atol=5e-2, rtol=2e-2)


TRANSPOSED_CASES = [
    ((1, 4, 5, 5), (4, 2, 3, 3), dict(stride=2)),
    ((2, 6, 7, 6), (6, 2, 3, 2), dict(stride=(2, 3), padding=(1, 0), output_padding=(1, 2),
                                      dilation=(2, 1), groups=3)),
    ((2, 3, 4, 4), (3, 5, 4, 4), dict(stride=2, padding=1)),  # the DCGAN/U-Net upsampler
    ((1, 8, 6, 6), (8, 1, 3, 3), dict(padding=1, groups=8)),  # depthwise
    ((3, 5, 9), (5, 4, 4), dict(stride=3, padding=2, output_padding=1)),  # 1-D
    ((0, 4, 5, 5), (4, 2, 3, 3), dict(stride=2)),  # no images
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("input_shape,weight_shape,options", TRANSPOSED_CASES)
def test_transposed_convolution_forward_and_backward_on_device(input_shape, weight_shape,
                                                               options, channels_last, dtype):
    conv = F.conv_transpose2d if len(input_shape) == 4 else F.conv_transpose1d
    torch.manual_seed(0)
    x = torch.randn(input_shape, dtype=dtype)
    if channels_last and x.dim() == 4:
        x = x.to(memory_format=torch.channels_last)
    x.requires_grad_()
    w = torch.randn(weight_shape, dtype=dtype, requires_grad=True)
    b = torch.randn(weight_shape[1] * options.get("groups", 1), dtype=dtype, requires_grad=True)
    y = conv(x, w, b, **options)
    grad = torch.randn_like(y)
    y.backward(grad)

    torch.maia.reset_fallback_counts()
    xm, wm, bm = (t.detach().to("maia").requires_grad_() for t in (x, w, b))
    ym = conv(xm, wm, bm, **options)
    ym.backward(grad.to("maia"))
    for actual, expected in [(ym, y), (xm.grad, x.grad), (wm.grad, w.grad), (bm.grad, b.grad)]:
        torch.testing.assert_close(actual.cpu(), expected, atol=1e-4, rtol=1e-4)
    assert torch.maia.fallback_counts() == {}


@pytest.mark.parametrize("options", [dict(stride=1, dilation=2, output_padding=1),
                                     dict(stride=1, dilation=3, output_padding=2, padding=1),
                                     dict(stride=(2, 1), dilation=(1, 3), output_padding=(1, 2),
                                          padding=(0, 3))])
def test_transposed_convolution_with_output_padding_beyond_stride(options):
    # PyTorch allows an output padding below the dilation: not the input gradient of any
    # convolution. The forward runs on the device (the full transposed convolution cropped
    # by the padding, extended with zeros and the bias); the backward takes the host path.
    x = torch.randn(1, 4, 5, 5, requires_grad=True)
    w, b = torch.randn(4, 2, 3, 3), torch.randn(2)
    xm = x.detach().to("maia").requires_grad_()
    torch.maia.reset_fallback_counts()
    actual = F.conv_transpose2d(xm, w.to("maia"), b.to("maia"), **options)
    assert torch.maia.fallback_counts() == {}
    expected = F.conv_transpose2d(x, w, b, **options)
    torch.testing.assert_close(actual.cpu(), expected, atol=1e-4, rtol=1e-4)
    grad = torch.randn_like(expected)
    actual.backward(grad.to("maia"))
    expected.backward(grad)
    torch.testing.assert_close(xm.grad.cpu(), x.grad, atol=1e-4, rtol=1e-4)
    assert torch.maia.fallback_counts() == {"aten::convolution_backward_overrideable": 1}


INTEGER_DTYPES = [torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8]


@pytest.mark.parametrize("dtype", INTEGER_DTYPES)
@pytest.mark.parametrize("conv,shape", [(F.conv1d, (2, 3, 9)), (F.conv2d, (2, 3, 6, 7))])
def test_integer_convolution_runs_on_the_device(conv, shape, dtype):
    # im2col + the integer GEMM: exact (and wrapping) as the CPU's; grouped,
    # strided, padded, channels-last.
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 9, (shape[0], 4) + shape[2:], generator=g, dtype=dtype)
    w = torch.randint(0, 5, (6, 2) + (3,) * (len(shape) - 2), generator=g, dtype=dtype)
    b = torch.randint(0, 5, (6,), generator=g, dtype=dtype)
    if len(shape) == 4:
        x = x.to(memory_format=torch.channels_last)
    torch.maia.reset_fallback_counts()
    for options in [dict(padding=1, groups=2), dict(stride=2, groups=2)]:
        actual = conv(x.to("maia"), w.to("maia"), b.to("maia"), **options)
        assert torch.equal(actual.cpu(), conv(x, w, b, **options))
    assert torch.maia.fallback_counts() == {}


@pytest.mark.parametrize("dtype", INTEGER_DTYPES[1:])
def test_integer_convolutions_the_cpu_lacks_raise_its_error(dtype):
    # The CPU has dilated and transposed integer convolutions for int64 only:
    # maia raises the same error (through the host path) rather than answer.
    x, w = torch.ones(1, 2, 6, 6, dtype=dtype), torch.ones(2, 2, 3, 3, dtype=dtype)
    for conv, options in [(F.conv2d, dict(dilation=2)), (F.conv_transpose2d, {})]:
        with pytest.raises(NotImplementedError) as cpu_error:
            conv(x, w, **options)
        with pytest.raises(NotImplementedError, match=re.escape(str(cpu_error.value))):
            conv(x.to("maia"), w.to("maia"), **options)


def test_int64_transposed_and_dilated_convolutions_run_on_the_device():
    g = torch.Generator().manual_seed(0)
    x = torch.randint(-5, 5, (2, 3, 7, 6), generator=g)
    w = torch.randint(-3, 3, (3, 4, 3, 3), generator=g)
    torch.maia.reset_fallback_counts()
    assert torch.equal(F.conv_transpose2d(x.to("maia"), w.to("maia"), stride=2).cpu(),
                       F.conv_transpose2d(x, w, stride=2))
    w = w.transpose(0, 1).contiguous()
    assert torch.equal(F.conv2d(x.to("maia"), w.to("maia"), dilation=2, padding=2).cpu(),
                       F.conv2d(x, w, dilation=2, padding=2))
    assert torch.maia.fallback_counts() == {}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_channels_last_weight_and_double_convolution(dtype):
    # Inductor hands convolutions channels-last weights; float64 takes the
    # wide device GEMM (the kernel broadcast over the batch).
    x = torch.randn(3, 4, 7, 6, dtype=dtype).to(memory_format=torch.channels_last)
    w = torch.randn(6, 2, 3, 3, dtype=dtype).to(memory_format=torch.channels_last)
    b = torch.randn(6, dtype=dtype)
    expected = F.conv2d(x, w, b, padding=1, groups=2)
    actual = F.conv2d(x.to("maia"), w.to("maia"), b.to("maia"), padding=1, groups=2)
    torch.testing.assert_close(actual.cpu(), expected)


# The implicit-GEMM kernel (fp32, one group; runtime/kernels/gemm/conv.h):
# (input, weight, stride, padding, dilation). With AVX-512 its A panels are
# 14 pixels: output rows of 56/112 pixels hold whole panels (the masked-load,
# strided-permute and transpose packings), rows of 7 or 13 pixels make
# panels straddle rows and images (the gathers); 64 x 9 = 576 reduction
# steps are two blocks; 40 and 70 output channels leave partial 32-column
# tiles; 3 channels (the ResNet stem) a transpose tail.
IMPLICIT_CASES = [
    ((2, 3, 40, 38), (16, 3, 7, 7), 2, 3, 1),            # the stem: C = 3, 7x7, stride 2
    ((1, 16, 58, 58), (40, 16, 3, 3), 1, 0, 1),          # 56-pixel rows, no padding
    ((2, 8, 20, 30), (16, 8, 3, 3), 1, 1, 1),            # padded ends of one-row panels
    ((2, 64, 9, 13), (70, 64, 3, 3), 1, 1, 1),           # two reduction blocks, odd rows
    ((2, 32, 14, 14), (48, 32, 3, 3), 2, 1, 1),          # stride 2
    ((3, 20, 7, 7), (33, 20, 1, 1), 1, 0, 1),            # pointwise, 7-pixel rows
    ((1, 24, 30, 30), (32, 24, 1, 1), 2, 0, 1),          # pointwise, stride 2
    ((1, 5, 11, 9), (33, 5, 3, 2), (2, 1), (1, 0), (2, 1)),  # asymmetric everything
    ((1, 2, 3, 3), (1, 2, 3, 3), 1, 1, 1),               # tiny: one pixel tile, one channel
    ((2, 7, 5, 4), (9, 7, 5, 4), 1, 0, 1),               # kernel as large as the input
    ((1, 4, 6, 6), (5, 4, 3, 3), 3, 4, 2),               # padding wider than the kernel
]


@pytest.mark.parametrize("input_shape,weight_shape,stride,padding,dilation", IMPLICIT_CASES)
@pytest.mark.parametrize("input_format,weight_format", [
    (torch.contiguous_format, torch.contiguous_format),
    (torch.channels_last, torch.contiguous_format),
    (torch.contiguous_format, torch.channels_last),
    (torch.channels_last, torch.channels_last),
])
@pytest.mark.parametrize("with_bias", [True, False])
def test_implicit_gemm_convolution(input_shape, weight_shape, stride, padding, dilation,
                                   input_format, weight_format, with_bias):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(input_shape, generator=g).to(memory_format=input_format)
    w = torch.randn(weight_shape, generator=g).to(memory_format=weight_format)
    b = torch.randn(weight_shape[0], generator=g) if with_bias else None
    expected = F.conv2d(x, w, b, stride, padding, dilation)
    torch.maia.reset_fallback_counts()
    actual = F.conv2d(x.to("maia"), w.to("maia"), None if b is None else b.to("maia"), stride,
                      padding, dilation)
    torch.testing.assert_close(actual.cpu(), expected, atol=1e-4, rtol=1e-4)
    assert torch.maia.fallback_counts() == {}


def test_implicit_gemm_reads_broadcast_inputs():
    # Stride-0 dimensions (expand on the device): every pixel of a row, or
    # every channel, reads the same elements.
    g = torch.Generator().manual_seed(1)
    column, plane = torch.randn(2, 4, 20, 1, generator=g), torch.randn(2, 1, 20, 30, generator=g)
    w, b = torch.randn(16, 4, 3, 3, generator=g), torch.randn(16, generator=g)
    for host in (column.expand(2, 4, 20, 30), plane.expand(2, 4, 20, 30)):
        device = (column if host.stride(3) == 0 else plane).to("maia").expand(2, 4, 20, 30)
        assert device.stride() == host.stride()
        torch.testing.assert_close(F.conv2d(device, w.to("maia"), b.to("maia"), padding=1).cpu(),
                                   F.conv2d(host, w, b, padding=1), atol=1e-4, rtol=1e-4)


def test_implicit_gemm_reads_strided_inputs_in_place():
    # A slice of a larger tensor (offset, row stride) and a transposed
    # width/height view: the kernel reads any strides, no copy first.
    big = torch.randn(2, 8, 20, 30)
    x = big[:, 2:7, 3:17, 5:25]
    xt = torch.randn(2, 5, 16, 12).transpose(2, 3)
    w, b = torch.randn(12, 5, 3, 3), torch.randn(12)
    for inp in (x, xt):
        expected = F.conv2d(inp, w, b, padding=1)
        actual = F.conv2d(inp.to("maia") if inp is xt else big.to("maia")[:, 2:7, 3:17, 5:25],
                          w.to("maia"), b.to("maia"), padding=1)
        torch.testing.assert_close(actual.cpu(), expected, atol=1e-4, rtol=1e-4)


def test_implicit_gemm_one_dimensional_and_empty():
    x, w, b = torch.randn(3, 6, 50), torch.randn(40, 6, 5), torch.randn(40)
    torch.testing.assert_close(F.conv1d(x.to("maia"), w.to("maia"), b.to("maia"), 2, 2).cpu(),
                               F.conv1d(x, w, b, 2, 2), atol=1e-4, rtol=1e-4)
    # no images, then no input channels: out = bias
    for shape, wshape in [((0, 3, 8, 8), (4, 3, 3, 3)), ((2, 0, 5, 5), (4, 0, 3, 3))]:
        x, w = torch.randn(shape), torch.randn(wshape)
        b = torch.randn(4)
        torch.testing.assert_close(F.conv2d(x.to("maia"), w.to("maia"), b.to("maia")).cpu(),
                                   F.conv2d(x, w, b))


CASES_3D = [
    ((2, 4, 5, 6, 7), (6, 4, 3, 2, 3), dict()),
    ((2, 4, 5, 6, 7), (6, 4, 3, 2, 3), dict(stride=2, padding=1)),
    ((1, 4, 6, 5, 7), (6, 4, 3, 2, 3), dict(stride=(1, 2, 1), padding=(2, 0, 1),
                                            dilation=(2, 1, 1))),
    ((2, 4, 5, 6, 7), (6, 2, 3, 2, 3), dict(padding=1, groups=2)),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("input_shape,weight_shape,options", CASES_3D)
def test_3d_convolution_forward_and_backward_on_device(input_shape, weight_shape, options,
                                                       transposed, dtype):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(input_shape, generator=g)
    if transposed:  # (C_in, C_out / groups, kd, kh, kw)
        groups = options.get("groups", 1)
        weight_shape = (input_shape[1], weight_shape[0] // groups, *weight_shape[2:])
    w = torch.randn(weight_shape, generator=g)
    b = torch.randn(weight_shape[1] * options.get("groups", 1) if transposed else weight_shape[0],
                    generator=g)
    conv = F.conv_transpose3d if transposed else F.conv3d
    # bfloat16 against the CPU's float32 of the same values (maia sums the taps in float).
    values = [t.to(dtype).to(torch.float32 if dtype == torch.bfloat16 else dtype)
              for t in (x, w, b)]
    leaves = [t.clone().requires_grad_() for t in values]
    expected = conv(*leaves, **options)
    upstream = torch.randn(expected.shape, generator=g).to(dtype)
    expected.backward(upstream.to(expected.dtype))
    on_maia = [t.to(dtype).to("maia").requires_grad_() for t in (x, w, b)]
    torch.maia.reset_fallback_counts()
    actual = conv(*on_maia, **options)
    actual.backward(upstream.to("maia"))
    assert torch.maia.fallback_counts() == {}
    tol = dict(atol=5e-2, rtol=2e-2) if dtype == torch.bfloat16 else dict(atol=1e-4, rtol=1e-5)
    torch.testing.assert_close(actual.detach().cpu(), expected.detach().to(dtype), **tol)
    for mine, cpu in zip(on_maia, leaves):
        torch.testing.assert_close(mine.grad.cpu(), cpu.grad.to(dtype), **tol)


@pytest.mark.parametrize("output_padding", [(1, 0, 1), (1, 1, 1)])
def test_3d_transposed_convolution_output_padding(output_padding):
    x, w = torch.randn(1, 2, 3, 4, 5), torch.randn(2, 3, 2, 2, 2)
    expected = F.conv_transpose3d(x, w, stride=2, output_padding=output_padding)
    torch.maia.reset_fallback_counts()
    actual = F.conv_transpose3d(x.to("maia"), w.to("maia"), stride=2,
                                output_padding=output_padding)
    assert torch.maia.fallback_counts() == {}
    torch.testing.assert_close(actual.cpu(), expected, atol=1e-5, rtol=1e-5)
