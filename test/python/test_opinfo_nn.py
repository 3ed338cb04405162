"""OpInfo sweep of the native NN and indexing operators (runtime/torch/csrc/ops/: Softmax,
LayerNorm, Loss, IndexSelect, Embedding, ScatterGather, Cat, Indexing, Unfold; kernels in
runtime/kernels/nn) and of the activations (ops/Elementwise.cpp, kernels in
runtime/kernels/eager): PyTorch's own sample inputs run on maia and
on the CPU, compared with torch.testing.assert_close for every dtype maia supports,
gradients in float32/float64, and an out-of-range index reported as a sticky device error.
nn.functional.dropout is not swept (its samples are random: no CPU reference);
test_dropout.py tests it.

Forward: the ATen operators listed in FORWARD_NATIVE for each OpInfo must not fall back
to the host (other operators a sample needs, e.g. the sum of cross_entropy's label
smoothing, may). Gradients: the backward operators listed in BACKWARD_NATIVE must not
fall back either."""


import pytest
import torch
from torch.testing._internal.common_methods_invocations import op_db

from opinfo_support import (cases, check_forward_samples, check_gradient_samples,
                            new_fallbacks, to_maia)
from sticky_support import expect_sticky_error

SOFTMAX = {"aten::_softmax"}
LOG_SOFTMAX = {"aten::_log_softmax"}
NLL = {"aten::nll_loss_forward", "aten::nll_loss2d_forward"}
# The activations (ops/Elementwise.cpp, kernels in runtime/kernels/eager): the functional
# and in-place operators each OpInfo reaches, and the backward operators of each.
ELU, HARDTANH = {"aten::elu", "aten::elu_"}, {"aten::hardtanh", "aten::hardtanh_"}
ACTIVATIONS_FORWARD = {
    "nn.functional.leaky_relu": {"aten::leaky_relu", "aten::leaky_relu_"},
    "nn.functional.elu": ELU,
    "nn.functional.selu": ELU,
    "nn.functional.celu": ELU,
    "nn.functional.hardtanh": HARDTANH,
    "nn.functional.relu6": HARDTANH,
    "nn.functional.softplus": {"aten::softplus"},
    "nn.functional.mish": {"aten::mish", "aten::mish_"},
    "nn.functional.hardswish": {"aten::hardswish", "aten::hardswish_"},
    "nn.functional.hardsigmoid": {"aten::hardsigmoid", "aten::hardsigmoid_"},
    "nn.functional.logsigmoid": {"aten::log_sigmoid_forward"},
}
ACTIVATIONS_BACKWARD = {
    "nn.functional.leaky_relu": {"aten::leaky_relu_backward"},
    "nn.functional.elu": {"aten::elu_backward"},
    "nn.functional.selu": {"aten::elu_backward"},
    "nn.functional.celu": {"aten::elu_backward"},
    "nn.functional.hardtanh": {"aten::hardtanh_backward"},
    "nn.functional.relu6": {"aten::hardtanh_backward"},
    "nn.functional.softplus": {"aten::softplus_backward"},
    "nn.functional.mish": {"aten::mish_backward", "aten::softplus"},
    "nn.functional.hardswish": {"aten::hardswish_backward"},
    "nn.functional.hardsigmoid": {"aten::hardsigmoid_backward"},
    "nn.functional.logsigmoid": {"aten::log_sigmoid_backward"},
}
# reflect/replicate (the constant and circular variants are views, cat and fills).
PADS = {f"aten::{kind}_pad{dims}d" for kind in ("reflection", "replication") for dims in (1, 2, 3)}
FORWARD_NATIVE = {
    "softmax": SOFTMAX,
    "log_softmax": LOG_SOFTMAX,
    "nn.functional.softmax": SOFTMAX,
    "nn.functional.log_softmax": LOG_SOFTMAX,
    "nn.functional.layer_norm": {"aten::native_layer_norm"},
    "nn.functional.nll_loss": NLL,
    "nn.functional.cross_entropy": LOG_SOFTMAX | NLL,
    "nn.functional.embedding": {"aten::index_select"},
    "index_select": {"aten::index_select"},
    "index_add": {"aten::index_add"},
    "gather": {"aten::gather"},
    "scatter": {"aten::scatter"},
    "scatter_add": {"aten::scatter_add"},
    "scatter_reduce": {"aten::scatter_reduce", "aten::scatter_reduce_"},
    "index_reduce": {"aten::index_reduce", "aten::index_reduce_"},
    "cat": {"aten::cat"},
    "stack": {"aten::cat"},
    "nn.functional.pad": PADS,
    "nn.functional.channel_shuffle": {"aten::channel_shuffle", "aten::native_channel_shuffle"},
    "index_put": {"aten::_index_put_impl_"},
    "__getitem__": {"aten::index"},
    "nonzero": {"aten::nonzero"},
    "argwhere": {"aten::nonzero"},
    "masked_select": {"aten::masked_select", "aten::nonzero", "aten::index"},
    "nn.functional.unfold": {"aten::im2col"},
    **ACTIVATIONS_FORWARD,
}
BACKWARD_NATIVE = {
    "softmax": {"aten::_softmax_backward_data"},
    "log_softmax": {"aten::_log_softmax_backward_data"},
    "nn.functional.softmax": {"aten::_softmax_backward_data"},
    "nn.functional.log_softmax": {"aten::_log_softmax_backward_data"},
    "nn.functional.layer_norm": {"aten::native_layer_norm_backward"},
    "nn.functional.nll_loss": {"aten::nll_loss_backward", "aten::nll_loss2d_backward"},
    "nn.functional.cross_entropy": {"aten::_log_softmax_backward_data",
                                    "aten::nll_loss_backward", "aten::nll_loss2d_backward"},
    # embedding_dense_backward with scale_grad_by_freq=True is computed on the host
    # (counted as a fallback); those samples are not checked for it.
    "nn.functional.embedding": {"aten::embedding_dense_backward"},
    "index_select": {"aten::index_add", "aten::index_add_"},
    "index_add": {"aten::index_select"},
    "gather": {"aten::scatter_add", "aten::scatter_add_"},
    "scatter": {"aten::gather"},
    "scatter_add": {"aten::gather"},
    "scatter_reduce": {"aten::gather", "aten::scatter_reduce", "aten::scatter_add"},
    "index_reduce": {"aten::index_select", "aten::scatter_reduce", "aten::index_reduce"},
    "nn.functional.pad": {f"{pad}_backward" for pad in PADS},
    "nn.functional.channel_shuffle": {"aten::channel_shuffle", "aten::native_channel_shuffle"},
    "cat": set(),  # slices of the gradient
    "stack": set(),
    "index_put": {"aten::index", "aten::_index_put_impl_"},
    "__getitem__": {"aten::_index_put_impl_"},
    "masked_select": {"aten::_index_put_impl_"},
    "nn.functional.unfold": {"aten::col2im"},
    **ACTIVATIONS_BACKWARD,
}
UNSUPPORTED_SAMPLE_KWARGS = {"out"}

OPS = [op for op in op_db if op.name in FORWARD_NATIVE]

# float16/bfloat16 compute in float32 like the CPU, but sums accumulate in another order
# (the CPU's vectorized reductions, Welford for layer_norm), and results round to the
# 16-bit type: the tolerances of PyTorch's own device-vs-CPU comparison for float16 and
# two bfloat16 ulps for bfloat16. float32 sums accumulate in float64 here, in float32
# on the CPU: a few float32 ulps on long rows.
TOLERANCES = {torch.float32: dict(atol=1e-5, rtol=1e-5),
              torch.float16: dict(atol=1e-3, rtol=1e-3),
              torch.bfloat16: dict(atol=1.6e-2, rtol=1.6e-2)}
# The CPU's nll_loss2d accumulates the weighted loss and the total weight in float16
# itself; maia accumulates in float32 and is the closer one to a float64 reference
# (sample seen: CPU -3.1992, maia -3.1934, float64 -3.1932).
LOSS_OPS = {"nn.functional.nll_loss", "nn.functional.cross_entropy"}
LOSS_TOLERANCES = {torch.float16: dict(atol=1e-2, rtol=1e-2)}
# layer_norm's CPU backward computes dx = a*dy*w + b*x + c in float32, cancelling terms
# of size rstd*|dy*w| (rstd = 1/sqrt(eps) ~ 316 for a one-element row): noise up to
# ~1e-4 where the exact gradient is 0; maia computes rstd*(g - mean(g) - xhat*mean(g*xhat)).
GRAD_TOLERANCES = {("nn.functional.layer_norm", torch.float32): dict(atol=1e-3, rtol=1e-4)}


def tolerances(op, dtype, grad=False):
    if grad and (op.name, dtype) in GRAD_TOLERANCES:
        return GRAD_TOLERANCES[(op.name, dtype)]
    if op.name in LOSS_OPS and dtype in LOSS_TOLERANCES:
        return LOSS_TOLERANCES[dtype]
    return TOLERANCES.get(dtype, {})


def fallbacks_since(before, required):
    return {k: v for k, v in new_fallbacks(before).items() if k.split(".")[0] in required}


# The im2col/col2im kernels are floating point: unfold of integers and bool runs on the host.
HOST_FOR_NON_FLOATING = {"nn.functional.unfold"}


@pytest.mark.parametrize("op,dtype", list(cases(OPS)))
def test_matches_cpu(op, dtype):
    required = FORWARD_NATIVE[op.name]

    def check_fallback(before, sample):
        grew = fallbacks_since(before, required)
        assert not grew, f"{op.name} fell back to the host for {grew}: {sample}"

    if op.name in HOST_FOR_NON_FLOATING and not dtype.is_floating_point:
        required = set()  # the counted host path (no integer kernels)
    check_forward_samples(op, dtype, UNSUPPORTED_SAMPLE_KWARGS, tolerances(op, dtype),
                          check_fallback)


GRAD_OPS = [op for op in OPS if op.supports_autograd]


@pytest.mark.parametrize("op", GRAD_OPS, ids=lambda op: f"{op.name}.{op.variant_test_name}")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_gradients_match_cpu(op, dtype):
    def check_fallback(before, sample):
        required = BACKWARD_NATIVE[op.name]
        if sample.kwargs.get("scale_grad_by_freq"):
            required = required - {"aten::embedding_dense_backward"}
        grew = fallbacks_since(before, required)
        assert not grew, f"{op.name} backward fell back to the host for {grew}: {sample}"

    # A non-uniform upstream gradient: ones would hide errors in softmax's backward.
    check_gradient_samples(op, dtype, UNSUPPORTED_SAMPLE_KWARGS, check_fallback=check_fallback,
                           **tolerances(op, dtype, grad=True))


def test_large_rows_and_any_dim():
    """Multi-program launches (rows split across cores), odd sizes, every dim."""
    torch.manual_seed(0)
    x = torch.randn(257, 33, 130) * 10
    xm = x.to("maia")
    for dim in range(3):
        torch.testing.assert_close(torch.softmax(xm, dim).cpu(), torch.softmax(x, dim))
        torch.testing.assert_close(torch.log_softmax(xm.transpose(0, 2), dim).cpu(),
                                   torch.log_softmax(x.transpose(0, 2), dim))
    w, b = torch.randn(130), torch.randn(130)
    torch.testing.assert_close(
        torch.nn.functional.layer_norm(xm, (130,), w.to("maia"), b.to("maia")).cpu(),
        torch.nn.functional.layer_norm(x, (130,), w, b), atol=1e-5, rtol=1e-5)
    table = torch.randn(1000, 70)
    idx = torch.randint(0, 1000, (4096,))
    torch.testing.assert_close(table.to("maia").index_select(0, idx.to("maia")).cpu(),
                               table.index_select(0, idx))


def test_scatter_add_and_gather_large():
    """Multi-program launches with many duplicate indices: scatter_add sums them in a fixed
    order; gather reads them back; cat of mixed dtypes promotes like the CPU."""
    torch.manual_seed(0)
    src = torch.randn(3000, 64, dtype=torch.float64)
    index = torch.randint(0, 50, (3000, 64))
    out = torch.zeros(50, 64, dtype=torch.float64)
    expected = out.scatter_add(0, index, src)
    actual = out.to("maia").scatter_add(0, index.to("maia"), src.to("maia"))
    torch.testing.assert_close(actual.cpu(), expected)
    torch.testing.assert_close(torch.gather(actual, 0, index.to("maia")).cpu(),
                               torch.gather(expected, 0, index))
    a, b = torch.randn(3, 4), torch.arange(8, dtype=torch.int32).view(2, 4)
    torch.testing.assert_close(torch.cat([a.to("maia"), b.to("maia")]).cpu(), torch.cat([a, b]))


SIXTEEN_BIT_SUMS = {
    "scatter_add": lambda out, i, s: out.scatter_add(0, i, s),
    "scatter_add_": lambda out, i, s: out.clone().scatter_add_(0, i, s),
    "scatter_reduce_sum": lambda out, i, s: out.scatter_reduce(0, i, s, "sum"),
    "scatter_reduce_mean": lambda out, i, s: out.scatter_reduce(0, i, s, "mean",
                                                                include_self=False),
    "scatter__reduce_add": lambda out, i, s: out.clone().scatter_(0, i, s, reduce="add"),
    "index_add": lambda out, i, s: out.index_add(0, i[:, 0], s),
}


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("name", sorted(SIXTEEN_BIT_SUMS))
def test_sixteen_bit_scattered_sums_accumulate_in_float32(name, dtype):
    """Hundreds of values scattered into one position: the CPU sums them in
    float32 and rounds once; rounding at every add (maia before) put a
    bfloat16 sum 27% and a mean 12x off the exact value (found by
    tools/fuzz --eager through cummax's backward). Also: no host fallback
    (scatter_ with reduce= was one)."""
    torch.manual_seed(0)
    src = torch.randn(3000, 2)
    index = (torch.arange(3000) % 7 == 0).long().unsqueeze(1).expand(3000, 2).contiguous()
    op = SIXTEEN_BIT_SUMS[name]
    out = torch.zeros(2, 2)
    exact = op(out.double(), index, src.double())
    before = torch.maia.fallback_counts()
    actual = op(out.to(dtype).to("maia"), index.to("maia"), src.to(dtype).to("maia")).cpu()
    assert torch.maia.fallback_counts() == before
    # within one rounding of the exact sum of the 16-bit inputs
    exact_of_inputs = op(out.double(), index, src.to(dtype).double())
    torch.testing.assert_close(actual.double(), exact_of_inputs.to(dtype).double(), atol=1e-5,
                               rtol=torch.finfo(dtype).eps)
    assert (actual.double() - exact).abs().max() < 0.02 * exact.abs().max()


@pytest.mark.parametrize("rank", [5, 8])
def test_gather_and_scatter_of_up_to_eight_dimensions_run_on_the_device(rank):
    """The kernels take rank-8 memrefs: quantile's gathers (5-D) and the like stay native."""
    torch.manual_seed(rank)
    shape = (2, 3, 1, 4, 3, 2, 1, 2)[:rank]
    x = torch.randn(shape)
    index = torch.randint(0, shape[1], shape)
    before = torch.maia.fallback_counts()
    gathered = torch.gather(x.to("maia"), 1, index.to("maia"))
    scattered = torch.zeros(shape).to("maia").scatter_add_(1, index.to("maia"), x.to("maia"))
    assert torch.maia.fallback_counts() == before
    torch.testing.assert_close(gathered.cpu(), torch.gather(x, 1, index))
    torch.testing.assert_close(scattered.cpu(), torch.zeros(shape).scatter_add_(1, index, x))


def test_cross_entropy_trains_natively():
    """cross_entropy forward and backward with no host fallback at all."""
    torch.manual_seed(0)
    logits = torch.randn(64, 10, requires_grad=True)
    target = torch.randint(0, 10, (64,))
    target[3] = -100
    lm = logits.detach().to("maia").requires_grad_()
    before = torch.maia.fallback_counts()
    loss_m = torch.nn.functional.cross_entropy(lm, target.to("maia"))
    loss_m.backward()
    torch.maia.synchronize()
    grew = {k: v for k, v in torch.maia.fallback_counts().items() if v > before.get(k, 0)}
    loss = torch.nn.functional.cross_entropy(logits, target)
    loss.backward()
    torch.testing.assert_close(loss_m.cpu(), loss)
    torch.testing.assert_close(lm.grad.cpu(), logits.grad)
    assert not {k for k in grew if "softmax" in k or "nll" in k}, grew


@pytest.mark.parametrize("case", ["index_select", "nll_loss", "embedding_backward", "gather",
                                  "scatter_add", "index", "index_negative", "index_put"])
def test_out_of_range_index_is_a_sticky_error(case):
    """No host-side check (it would synchronize): the kernel traps, the driver reports a
    sticky error naming the kernel at the next synchronize; a reset recovers."""
    device = torch.device("maia:0")
    torch.maia.synchronize(0)
    x = torch.randn(4, 3, device=device)
    zeros = torch.zeros(4, 3, device=device)
    if case == "index_select":
        index = torch.tensor([0, 7], device=device)
        kernel, fault = "index_select_f32", lambda: torch.index_select(x, 0, index)
    elif case == "nll_loss":
        target = torch.tensor([0, 1, 5, 2], device=device)
        kernel, fault = "nll_loss_f32", lambda: torch.nn.functional.nll_loss(x, target)
    elif case == "gather":
        index = torch.tensor([[0], [3], [1], [2]], device=device)
        kernel, fault = "gather_f32", lambda: torch.gather(x, 1, index)
    elif case == "scatter_add":
        index, ones = torch.tensor([[0, -1, 1]], device=device), torch.ones(1, 3, device=device)
        kernel, fault = "scatter_f32", lambda: zeros.scatter_add_(0, index, ones)
    elif case == "index":
        index = torch.tensor([0, 3], device=device)
        kernel, fault = "index_f32", lambda: x[:, index]
    elif case == "index_negative":  # -4 is in range, -5 is not
        index = torch.tensor([-4, -5], device=device)
        kernel, fault = "index_f32", lambda: x[index]
    elif case == "index_put":
        index, ones = torch.tensor([1, 4], device=device), torch.ones(2, 3, device=device)
        kernel, fault = "index_put_f32", lambda: zeros.index_put_((index,), ones, accumulate=True)
    else:
        g = torch.randn(2, 5, device=device)
        index = torch.tensor([1, -3], device=device)
        kernel = "embedding_bwd_f32"
        fault = lambda: torch.ops.aten.embedding_dense_backward(g, index, 4, -1, False)  # noqa: E731
    with expect_sticky_error(kernel):
        fault()
    assert torch.ones(3, device=device).sum().item() == 3.0


EDGE_VALUES = [float("-inf"), -100.0, -20.5, -3.0, -2.5, -1.0, -1e-3, -0.0, 0.0, 1e-3, 1.0, 2.5,
               3.0, 10.0, 20.0, 20.5, 100.0, float("inf"), float("nan")]
ACTIVATIONS = {
    "leaky_relu": lambda x: torch.nn.functional.leaky_relu(x, 0.2),
    "elu": lambda x: torch.nn.functional.elu(x, 0.7),
    "selu": torch.nn.functional.selu,
    "celu": lambda x: torch.nn.functional.celu(x, 1.5),
    "hardtanh": lambda x: torch.nn.functional.hardtanh(x, -2.0, 2.5),
    "relu6": torch.nn.functional.relu6,
    "softplus": torch.nn.functional.softplus,
    "softplus_beta": lambda x: torch.nn.functional.softplus(x, beta=2.0, threshold=5.0),
    "mish": torch.nn.functional.mish,
    "hardswish": torch.nn.functional.hardswish,
    "hardsigmoid": torch.nn.functional.hardsigmoid,
    "logsigmoid": torch.nn.functional.logsigmoid,
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_activation_edge_values(name, dtype):
    """Infinities, NaN, signed zeros, the kinks (hardtanh's bounds, hardswish's +-3) and
    softplus's threshold: forward and backward match the CPU with no host fallback."""
    f = ACTIVATIONS[name]
    x = torch.tensor(EDGE_VALUES, dtype=dtype, requires_grad=True)
    xm = x.detach().to("maia").requires_grad_()
    grad = torch.linspace(-2, 2, len(EDGE_VALUES), dtype=dtype)
    before = torch.maia.fallback_counts()
    actual = f(xm)
    (actual_grad,) = torch.autograd.grad(actual, xm, grad.to("maia"))
    torch.maia.synchronize()
    assert not new_fallbacks(before), new_fallbacks(before)
    expected = f(x)
    (expected_grad,) = torch.autograd.grad(expected, x, grad)
    tol = TOLERANCES.get(dtype, {})
    torch.testing.assert_close(actual.detach().cpu(), expected.detach(), equal_nan=True, **tol)
    torch.testing.assert_close(actual_grad.cpu(), expected_grad, equal_nan=True, **tol)


@pytest.mark.parametrize("variant", ["inplace", "out"])
def test_activation_variants(variant):
    """The in-place and out= variants of each activation and of addcmul/addcdiv/lerp, on
    non-contiguous operands, without the host fallback."""
    torch.manual_seed(0)
    base = torch.randn(6, 10) * 5
    x = base[:, ::2]

    def x_maia():  # the same strided view of a maia copy
        return base.to("maia")[:, ::2]

    t1, t2 = torch.randn(5), torch.rand(6, 5) + 0.5
    ops = [("leaky_relu", (0.3,)), ("elu", (0.5, 1.2, 0.8)), ("hardtanh", (-1.5, 2.0)),
           ("mish", ()), ("hardswish", ()), ("hardsigmoid", ())]
    before = torch.maia.fallback_counts()
    for name, args in ops + [("softplus", (2.0, 3.0))]:
        expected = getattr(torch.ops.aten, name)(x, *args)
        if variant == "inplace" and name != "softplus":  # softplus has no in-place op
            actual = x_maia()
            getattr(torch.ops.aten, name + "_")(actual, *args)
        else:
            actual = torch.empty(6, 5, device="maia")
            getattr(torch.ops.aten, name).out(x_maia(), *args, out=actual)
        torch.testing.assert_close(actual.cpu(), expected, msg=name)
    pointwise = [("addcmul", (t1, t2), {"value": 0.7}), ("addcdiv", (t1, t2), {"value": -2}),
                 ("lerp", (t1 * t2, 0.75), {}), ("lerp", (t1.expand(6, 5), t2), {})]
    for name, args, kwargs in pointwise:
        expected = getattr(torch, name)(x, *args, **kwargs)
        args_maia = [to_maia(a) for a in args]
        if variant == "inplace":
            actual = x_maia()
            getattr(actual, name + "_")(*args_maia, **kwargs)
        else:
            actual = torch.empty(6, 5, device="maia")
            getattr(torch, name)(x_maia(), *args_maia, **kwargs, out=actual)
        torch.testing.assert_close(actual.cpu(), expected, msg=f"{name} {args}")
    torch.maia.synchronize()
    assert not new_fallbacks(before), new_fallbacks(before)
