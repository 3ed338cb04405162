"""Convolution on maia: 1-D and 2-D on the device (im2col + GEMM), forward
and backward, against the CPU; transposed convolutions on the host."""

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


def test_transposed_convolution_runs_on_the_host():
    x, w = torch.randn(1, 4, 5, 5), torch.randn(4, 2, 3, 3)
    torch.maia.reset_fallback_counts()
    actual = F.conv_transpose2d(x.to("maia"), w.to("maia"), stride=2)
    torch.testing.assert_close(actual.cpu(), F.conv_transpose2d(x, w, stride=2), atol=1e-4,
                               rtol=1e-4)
    assert torch.maia.fallback_counts() == {"aten::convolution_overrideable": 1}


@pytest.mark.parametrize("conv,shape", [(F.conv1d, (2, 3, 9)), (F.conv2d, (2, 3, 6, 6))])
def test_integer_convolution_runs_on_the_host(conv, shape):
    # The im2col kernels are floating point only; integer convolutions went
    # to the device and failed looking up 'im2col_i64' (found by the op_db
    # sweep, tools/conformance/opdb_sweep.py).
    g = torch.Generator().manual_seed(0)
    x = torch.randint(-5, 5, shape, generator=g)
    w = torch.randint(-3, 3, (4, 3) + (3,) * (len(shape) - 2), generator=g)
    torch.maia.reset_fallback_counts()
    assert torch.equal(conv(x.to("maia"), w.to("maia"), padding=1).cpu(), conv(x, w, padding=1))
    assert torch.maia.fallback_counts() == {"aten::convolution_overrideable": 1}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_channels_last_weight_and_double_convolution(dtype):
    # Inductor hands convolutions channels-last weights; float64 has no
    # device GEMM (the host computes the batched product, kernel broadcast).
    x = torch.randn(3, 4, 7, 6, dtype=dtype).to(memory_format=torch.channels_last)
    w = torch.randn(6, 2, 3, 3, dtype=dtype).to(memory_format=torch.channels_last)
    b = torch.randn(6, dtype=dtype)
    expected = F.conv2d(x, w, b, padding=1, groups=2)
    actual = F.conv2d(x.to("maia"), w.to("maia"), b.to("maia"), padding=1, groups=2)
    torch.testing.assert_close(actual.cpu(), expected)
