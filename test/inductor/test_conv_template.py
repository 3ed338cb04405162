"""Convolution template kernels (maia_inductor/conv_template.py): 2-D fp32
convolutions in compiled graphs as one MLIR kernel calling the convolution
micro-kernel per block of the channels-last output, with the pointwise
epilogue (bias, BatchNorm, ReLU, residual) fused in, against eager CPU."""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from compile_support import assert_compiled_matches, to_maia
from torch._dynamo.utils import counters
from torch._inductor.utils import run_and_get_code

import maia_inductor.config as maia_config
from maia_inductor.testing import compiled_kernels

UKERNEL_CALL = "func.call @maia_ukernel_conv2d_f32("


def wrapper_and_kernels(fn, *args, **options):
    """The generated wrapper code and the MLIR of each kernel."""
    torch._dynamo.reset()
    result, kernels = compiled_kernels(
        lambda *a: run_and_get_code(torch.compile(fn, **options), *a), *to_maia(args))
    return result[1][0], kernels


def conv_kernels(kernels):
    return [k for k in kernels if k.name.startswith("maia_conv_")]


def then_pointwise_conv(y, w2):
    """A 1x1 convolution reading y: y is then an intermediate buffer (its
    layout the plugin's choice), not a graph output in eager's NCHW."""
    return F.conv2d(y, w2)


class ConvBnRelu(nn.Module):
    def __init__(self, c, o):
        super().__init__()
        self.conv = nn.Conv2d(c, o, 3, 1, 1, bias=False)
        self.bn = nn.BatchNorm2d(o)
        self.head = nn.Conv2d(o, 4, 1, bias=False)
        with torch.no_grad():  # running statistics that are not the identity
            self.bn.running_mean.uniform_(-1, 1)
            self.bn.running_var.uniform_(0.5, 2)
            self.bn.weight.uniform_(0.5, 2)
            self.bn.bias.uniform_(-1, 1)

    def forward(self, x):
        return self.head(F.relu(self.bn(self.conv(x))))


class TestOneKernel:
    def test_conv_bias_relu_is_one_kernel(self):
        def fn(x, w, b, w2):
            return then_pointwise_conv(F.relu(F.conv2d(x, w, b, padding=1)), w2)

        args = (torch.randn(2, 5, 9, 9), torch.randn(16, 5, 3, 3), torch.randn(16),
                torch.randn(4, 16, 1, 1))
        wrapper, kernels = wrapper_and_kernels(fn, *args)
        assert len(kernels) == 1 and kernels[0].name.startswith("maia_conv_")
        mlir = kernels[0].mlir
        call = mlir.index(UKERNEL_CALL)
        assert mlir.index("scf.for %rb", mlir.index("scf.for %cb")) < call
        assert "arith.maximumf" in mlir[call:] and "vector.maskedstore" in mlir[call:]
        # The 1x1 convolution has no pointwise consumer: the eager kernel.
        assert wrapper.count("extern_kernels.convolution(") == 1
        assert_compiled_matches(fn, *args)

    def test_batch_norm_relu_fuse(self):
        model = ConvBnRelu(8, 16).eval()
        x = torch.randn(2, 8, 12, 12)
        with torch.no_grad():
            expected = model(x)
            wrapper, kernels = wrapper_and_kernels(model.to("maia"), x)
        assert len(conv_kernels(kernels)) == 1
        # BatchNorm's affine and the ReLU run in the convolution's kernel:
        # no pointwise kernel reads its output.
        assert not [k for k in kernels if k.name.startswith("maia_poi_") and "relu" in k.name]
        assert "rsqrt" in conv_kernels(kernels)[0].mlir or "sqrt" in conv_kernels(kernels)[0].mlir
        with torch.no_grad():
            actual = torch.compile(model)(x.to("maia"))
        torch.testing.assert_close(actual.cpu(), expected, atol=1e-4, rtol=1e-4)

    def test_residual_add_fuses(self):
        def fn(x, w, r, w2):
            return then_pointwise_conv(F.relu(F.conv2d(x, w, stride=2, padding=1) + r), w2)

        args = (torch.randn(2, 6, 10, 10), torch.randn(16, 6, 3, 3), torch.randn(2, 16, 5, 5),
                torch.randn(4, 16, 1, 1))
        _, kernels = wrapper_and_kernels(fn, *args)
        assert len(kernels) == 1 and kernels[0].name.startswith("maia_conv_")
        assert kernels[0].name.startswith("maia_conv_fused_add_relu")
        assert_compiled_matches(fn, *args)

    def test_chained_convolutions_do_not_convert_layouts(self):
        # conv -> relu -> conv -> relu -> conv: every intermediate is the
        # channels-last buffer the templates write; nothing copies it.
        def fn(x, w1, w2, w3):
            y = F.relu(F.conv2d(x, w1, padding=1))
            y = F.relu(F.conv2d(y, w2, padding=1))
            return F.conv2d(y, w3)

        # Weights scaled by 1/sqrt(fan_in) as layers are initialized: with
        # unit-variance weights the third layer's outputs reach ~100, where
        # float32 rounding alone (of CPU and maia alike) can exceed the 1e-4
        # tolerance the comparison is meant to hold.
        args = (torch.randn(2, 8, 14, 14), torch.randn(16, 8, 3, 3) / 72**0.5,
                torch.randn(16, 16, 3, 3) / 144**0.5, torch.randn(4, 16, 1, 1) / 4)
        _, kernels = wrapper_and_kernels(fn, *args)
        assert len(conv_kernels(kernels)) == 2
        # Besides them, only the second weight's channels-last copy (the
        # eager kernel's policy for a small weight and a channels-last input).
        assert len(kernels) == 3
        assert_compiled_matches(fn, *args)

    def test_graph_output_in_eager_layout_runs_after_the_template(self):
        # conv + relu returned: the output has eager's NCHW strides, which
        # the epilogue iterates in; the template writes its channels-last
        # block, then a pointwise kernel reads it.
        def fn(x, w):
            return F.relu(F.conv2d(x, w, padding=1))

        args = torch.randn(2, 5, 9, 9), torch.randn(16, 5, 3, 3)
        _, kernels = wrapper_and_kernels(fn, *args)
        assert len(conv_kernels(kernels)) == 1
        actual = assert_compiled_matches(fn, *args)
        assert actual.stride() == fn(*args).stride()

    def test_convolution_without_pointwise_consumer_stays_extern(self):
        wrapper, kernels = wrapper_and_kernels(lambda x, w: F.conv2d(x, w),
                                               torch.randn(2, 5, 9, 9), torch.randn(7, 5, 3, 3))
        assert not conv_kernels(kernels) and "extern_kernels.convolution(" in wrapper

    @pytest.mark.parametrize("case", ["groups", "transposed", "float64"])
    def test_uncovered_convolutions_stay_extern(self, case):
        x, w = torch.randn(2, 8, 9, 9), torch.randn(8, 4 if case == "groups" else 8, 3, 3)
        if case == "groups":
            fn = lambda x, w: F.relu(F.conv2d(x, w, groups=2))  # noqa: E731
        elif case == "transposed":
            fn = lambda x, w: F.relu(F.conv_transpose2d(x, w))  # noqa: E731
        else:
            x, w = x.double(), w.double()
            fn = lambda x, w: F.relu(F.conv2d(x, w))  # noqa: E731
        wrapper, kernels = wrapper_and_kernels(fn, x, w)
        assert not conv_kernels(kernels) and "extern_kernels.convolution(" in wrapper
        assert_compiled_matches(fn, x, w, atol=1e-4, rtol=1e-4)


def chain(x, w, b, r, stride, padding, dilation, w2):
    y = F.conv2d(x, w, b, stride=stride, padding=padding, dilation=dilation)
    return then_pointwise_conv(F.relu(y + r if r is not None else y), w2)


# (N, C, H, W, O, kernel, stride, padding, dilation)
SHAPES = [
    (2, 3, 32, 32, 16, 7, 2, 3, 1),    # a stem: 3 channels, 7x7, stride 2
    (1, 16, 17, 13, 24, 3, 1, 1, 1),   # odd sizes
    (2, 32, 12, 12, 40, 3, 2, 1, 1),   # stride 2
    (3, 24, 10, 10, 48, 1, 1, 0, 1),   # 1x1
    (2, 20, 16, 16, 36, 3, 1, 2, 2),   # dilation 2
    (1, 64, 7, 7, 520, 3, 1, 1, 1),    # more output channels than a column block
    (2, 8, 11, 11, 16, (3, 5), (1, 2), (1, 0), (2, 1)),  # rectangular everything
]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(str(v) for v in s))
@pytest.mark.parametrize("layout", ["nchw", "channels_last"])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
def test_matches_cpu(shape, layout, bias):
    n, c, h, w, o, k, stride, padding, dilation = shape
    kh, kw = (k, k) if isinstance(k, int) else k
    torch.manual_seed(0)
    x = torch.randn(n, c, h, w)
    if layout == "channels_last":
        x = x.contiguous(memory_format=torch.channels_last)
    weight = torch.randn(o, c, kh, kw) / (c * kh * kw) ** 0.5
    b = torch.randn(o) if bias else None
    y = F.conv2d(x, weight, b, stride=stride, padding=padding, dilation=dilation)
    r = torch.randn(y.shape)
    w2 = torch.randn(5, o, 1, 1)
    args = (x, weight, b, r, stride, padding, dilation, w2)
    _, kernels = wrapper_and_kernels(chain, *args)
    assert len(conv_kernels(kernels)) == 1
    assert_compiled_matches(chain, *args, atol=2e-4, rtol=2e-4)


def sliced_input(x, w, w2):
    # The input is a view at a storage offset (a slice of channels and rows).
    return then_pointwise_conv(F.relu(F.conv2d(x[:, 2:, 1:, :], w, padding=1)) * 2, w2)


def transposed_weight(x, w, w2):
    # A weight that is a non-contiguous view: made contiguous for the kernel.
    return then_pointwise_conv(F.relu(F.conv2d(x, w.transpose(2, 3), padding=(1, 2))), w2)


def pointwise_and_reduction_consumers(x, w):
    y = F.conv2d(x, w, padding=1)
    return F.relu(y), torch.sigmoid(y).sum((2, 3))


def one_output_pixel(x, w, w2):
    return then_pointwise_conv(F.relu(F.conv2d(x, w)), w2)


@pytest.mark.parametrize("fn, shapes", [
    (sliced_input, [(2, 10, 9, 9), (12, 8, 3, 3), (3, 12, 1, 1)]),
    (transposed_weight, [(2, 6, 9, 9), (12, 6, 5, 3), (3, 12, 1, 1)]),
    (pointwise_and_reduction_consumers, [(2, 6, 9, 9), (12, 6, 3, 3)]),
    (one_output_pixel, [(1, 4, 3, 3), (7, 4, 3, 3), (2, 7, 1, 1)]),
], ids=lambda v: getattr(v, "__name__", ""))
def test_operand_views_and_consumers_match_cpu(fn, shapes):
    torch.manual_seed(0)
    args = [torch.randn(shape) for shape in shapes]
    _, kernels = compiled_kernels(fn, *to_maia(args))
    assert len(conv_kernels(kernels)) == 1
    assert_compiled_matches(fn, *args, atol=1e-4, rtol=1e-4)


def test_knob_turns_templates_off():
    def fn(x, w, w2):
        return then_pointwise_conv(F.relu(F.conv2d(x, w, padding=1)), w2)

    args = torch.randn(2, 5, 9, 9), torch.randn(16, 5, 3, 3), torch.randn(4, 16, 1, 1)
    with maia_config.patch(conv_templates=False):
        wrapper, kernels = wrapper_and_kernels(fn, *args)
        assert not conv_kernels(kernels)
        assert wrapper.count("extern_kernels.convolution(") == 2
        assert_compiled_matches(fn, *args)


def test_knob_is_part_of_the_fx_graph_cache_key(tmp_path, monkeypatch):
    # Compiled with the templates, then without: the second must not be
    # served the first's graph; back with them, the first's is a hit.
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))

    def fn(x, w):
        return F.relu(F.conv2d(x, w, padding=1)) * 2

    x, w = torch.randn(2, 5, 9, 9, device="maia"), torch.randn(16, 5, 3, 3, device="maia")
    outcomes = []
    with torch._inductor.config.patch(fx_graph_cache=True, force_disable_caches=False):
        for templates in (True, False, True):
            torch._dynamo.reset()
            hits = counters["inductor"]["fxgraph_cache_hit"]
            with maia_config.patch(conv_templates=templates):
                torch.compile(fn)(x, w)
            outcomes.append(counters["inductor"]["fxgraph_cache_hit"] - hits)
    assert outcomes == [0, 0, 1]


def test_resnet_basic_block_matches_cpu():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools" / "bench"))
    from realistic_zoo import BasicBlock

    torch.manual_seed(0)
    block = nn.Sequential(BasicBlock(16, 32, 2), BasicBlock(32, 32, 1), nn.Conv2d(32, 4, 1)).eval()
    x = torch.randn(2, 16, 20, 20)
    with torch.no_grad():
        expected = block(x)
        actual, kernels = compiled_kernels(block.to("maia"), x.to("maia"))
    # Per block conv1 + bn1 + relu, and conv2 + bn2 + add + relu; the first
    # block's downsampling convolution is a template of its own, its bn read
    # by conv2's epilogue. Nothing else but the head's bias.
    assert [k.name for k in kernels if not k.name.startswith("maia_conv_")] == [
        "maia_poi_fused__native_batch_norm_legit_no_training_add_convolution_relu_5"]
    assert len(conv_kernels(kernels)) == 5
    torch.testing.assert_close(actual.cpu(), expected, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("groups", [1, 4])
def test_16bit_convolution_with_bias_rounds_once(dtype, groups):
    """Inductor's lowering for non-CPU devices splits a convolution with a
    bias into the convolution, rounded to 16 bits, and an add of the bias,
    rounded again (a third of the elements 1 ulp off the correctly rounded
    value, and a zero where a gradient through sqrt(|y|) then is NaN); maia
    calls the eager kernel whole, which rounds once, as the CPU does."""
    g = torch.Generator().manual_seed(groups)
    x = torch.randn(2, 8, 9, 7, generator=g).to(dtype).transpose(-1, -2)
    weight = torch.randn(8, 8 // groups, 3, 3, generator=g).to(dtype)
    bias = torch.randn(8, generator=g).to(dtype)

    def fn(x, weight, bias):
        return F.conv2d(x, weight, bias, padding=2, groups=groups).relu()

    torch._dynamo.reset()
    actual = torch.compile(fn)(*to_maia((x, weight, bias)))
    rounded_once = fn(x.double(), weight.double(), bias.double()).to(dtype)
    assert torch.equal(actual.cpu(), rounded_once)
    assert torch.equal(fn(x, weight, bias), rounded_once)  # the CPU, for the record
