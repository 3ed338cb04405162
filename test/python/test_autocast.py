"""torch.autocast("maia"): the CUDA autocast policy registered for
AutocastPrivateUse1 (runtime/torch/csrc/Autocast.cpp).

The expected dtype of each op comes from its policy class, not from
torch.autocast("cpu"), whose op lists differ: lower_precision_fp ops run in
the autocast dtype, fp32 ops in float32, promote ops in the widest input
dtype, and every other op keeps its input dtypes (the fallthrough). Values are
compared with the same op on CPU run on inputs cast as the policy casts them.
"""

import os

import pytest
import torch
from torch import nn
from torch.nn import functional as F
from torch.overrides import TorchFunctionMode

LOW = [torch.float16, torch.bfloat16]

# Per dtype (atol, rtol) for maia against CPU on the same casted inputs: the
# two may accumulate in different orders, and round once more or less.
TOL = {
    torch.float16: (2e-3, 2e-3),
    torch.bfloat16: (2e-2, 2e-2),
    torch.float32: (1e-4, 1e-4),
}


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def _randn(*shape, seed=0, positive=False):
    t = torch.randn(*shape, generator=_gen(seed))
    return t.abs() + 0.5 if positive else t


# (name, policy, fn, input factory). Inputs are float32 unless the case says
# otherwise; fn takes the inputs positionally.
LOWER_PRECISION_FP = [
    ("mm", torch.mm, lambda: (_randn(8, 16), _randn(16, 4, seed=1))),
    ("matmul", torch.matmul, lambda: (_randn(3, 8, 16), _randn(16, 4, seed=1))),
    ("linear", F.linear, lambda: (_randn(8, 16), _randn(4, 16, seed=1), _randn(4, seed=2))),
    ("addmm", torch.addmm, lambda: (_randn(8, 4), _randn(8, 16, seed=1), _randn(16, 4, seed=2))),
    ("bmm", torch.bmm, lambda: (_randn(2, 8, 16), _randn(2, 16, 4, seed=1))),
    ("baddbmm", torch.baddbmm,
     lambda: (_randn(2, 8, 4), _randn(2, 8, 16, seed=1), _randn(2, 16, 4, seed=2))),
    ("conv2d", F.conv2d, lambda: (_randn(1, 2, 6, 6), _randn(3, 2, 3, 3, seed=1))),
    ("mv", torch.mv, lambda: (_randn(8, 16), _randn(16, seed=1))),
    ("prelu", F.prelu, lambda: (_randn(2, 3, 4), torch.full((3,), 0.25))),
]

FP32 = [
    ("exp", torch.exp, lambda: (_randn(64),)),
    ("log", torch.log, lambda: (_randn(64, positive=True),)),
    ("log1p", torch.log1p, lambda: (_randn(64, positive=True),)),
    ("rsqrt", torch.rsqrt, lambda: (_randn(64, positive=True),)),
    ("reciprocal", torch.reciprocal, lambda: (_randn(64, positive=True),)),
    ("pow", torch.pow, lambda: (_randn(64, positive=True), _randn(64, seed=1))),
    ("softplus", F.softplus, lambda: (_randn(64),)),
    ("layer_norm", lambda x, w, b: F.layer_norm(x, (16,), w, b),
     lambda: (_randn(4, 16), _randn(16, seed=1), _randn(16, seed=2))),
    ("mse_loss", F.mse_loss, lambda: (_randn(32), _randn(32, seed=1))),
    ("nll_loss", F.nll_loss,
     lambda: (F.log_softmax(_randn(8, 5), 1), torch.randint(0, 5, (8,), generator=_gen(1)))),
    ("logsumexp", lambda x: torch.logsumexp(x, 1), lambda: (_randn(4, 16),)),
]

# Policy fp32_set_opt_dtype and the norm overloads (fp32_append_dtype): the
# result is float32 too.
FP32_SET_OPT_DTYPE = [
    ("sum", torch.sum, lambda: (_randn(64),)),
    ("sum.dim_IntList", lambda x: torch.sum(x, 1), lambda: (_randn(4, 16),)),
    ("prod", lambda x: torch.prod(x, 1), lambda: (_randn(4, 8, positive=True),)),
    ("cumsum", lambda x: torch.cumsum(x, 0), lambda: (_randn(32),)),
    ("softmax", lambda x: torch.softmax(x, -1), lambda: (_randn(4, 16),)),
    ("log_softmax", lambda x: torch.log_softmax(x, -1), lambda: (_randn(4, 16),)),
    ("norm.Scalar", lambda x: torch.norm(x), lambda: (_randn(64),)),
    ("norm.ScalarOpt_dim", lambda x: torch.norm(x, 2, [1]), lambda: (_randn(4, 16),)),
]

# Promote cases get one input in the low dtype and the others in float32;
# the widest (float32) wins.
PROMOTE = [
    ("addcmul", torch.addcmul, lambda: (_randn(16), _randn(16, seed=1), _randn(16, seed=2))),
    ("addcdiv", torch.addcdiv,
     lambda: (_randn(16), _randn(16, seed=1), _randn(16, seed=2, positive=True))),
    ("atan2", torch.atan2, lambda: (_randn(16), _randn(16, seed=1))),
    ("dot", torch.dot, lambda: (_randn(16), _randn(16, seed=1))),
    ("cross", lambda a, b: torch.cross(a, b, dim=1),
     lambda: (_randn(4, 3), _randn(4, 3, seed=1))),
    ("scatter_add",
     lambda s, src: s.scatter_add(0, torch.tensor([0, 2, 1, 0], device=s.device), src),
     lambda: (_randn(4), _randn(4, seed=1))),
]


def _to(args, device, dtype=None):
    out = []
    for a in args:
        if a.is_floating_point() and dtype is not None:
            a = a.to(dtype)
        out.append(a.to(device))
    return tuple(out)


def _check(actual, expected_dtype, expected_cpu):
    assert actual.device.type == "maia"
    assert actual.dtype == expected_dtype
    atol, rtol = TOL[expected_dtype]
    torch.testing.assert_close(actual.cpu(), expected_cpu.to(expected_dtype), atol=atol, rtol=rtol)


@pytest.mark.parametrize("dtype", LOW, ids=str)
@pytest.mark.parametrize("name,fn,make", LOWER_PRECISION_FP, ids=[c[0] for c in LOWER_PRECISION_FP])
def test_lower_precision_fp(name, fn, make, dtype):
    args = make()
    with torch.autocast("maia", dtype=dtype):
        actual = fn(*_to(args, "maia"))
    # Reference: the same op on CPU, on inputs cast to the autocast dtype, in
    # float32 arithmetic (CPU float16 matmuls are not all implemented).
    expected = fn(*[a.to(dtype).float() for a in args])
    _check(actual, dtype, expected)


@pytest.mark.parametrize("dtype", LOW, ids=str)
@pytest.mark.parametrize("name,fn,make", FP32 + FP32_SET_OPT_DTYPE,
                         ids=[c[0] for c in FP32 + FP32_SET_OPT_DTYPE])
def test_fp32(name, fn, make, dtype):
    # Inputs arrive in the low dtype, as activations do inside autocast; the
    # policy runs the op in float32 on the (exactly) upcast values.
    args = tuple(a.to(dtype) if a.is_floating_point() else a for a in make())
    with torch.autocast("maia", dtype=dtype):
        actual = fn(*_to(args, "maia"))
    expected = fn(*[a.float() if a.is_floating_point() else a for a in args])
    _check(actual, torch.float32, expected)


@pytest.mark.parametrize("dtype", LOW, ids=str)
@pytest.mark.parametrize("name,fn,make", PROMOTE, ids=[c[0] for c in PROMOTE])
def test_promote(name, fn, make, dtype):
    first, *rest = make()
    args = (first.to(dtype), *rest)
    with torch.autocast("maia", dtype=dtype):
        actual = fn(*_to(args, "maia"))
        # All inputs in the low dtype: nothing to widen, stays low.
        low = fn(*_to(args, "maia", dtype))
    expected = fn(*[a.float() for a in args])
    _check(actual, torch.float32, expected)
    assert low.dtype == dtype


def test_binary_cross_entropy_is_banned():
    p = torch.sigmoid(_randn(8)).to("maia")
    t = torch.rand(8, generator=_gen(1)).to("maia")
    with torch.autocast("maia"):
        with pytest.raises(RuntimeError, match="binary_cross_entropy_with_logits"):
            F.binary_cross_entropy(p, t)
        loss = F.binary_cross_entropy_with_logits(p, t)  # fp32 policy: allowed
    assert loss.dtype == torch.float32


def test_default_dtype_is_float16():
    assert torch.get_autocast_dtype("maia") == torch.float16
    a = _randn(4, 4).to("maia")
    with torch.autocast("maia"):
        assert torch.get_autocast_dtype("maia") == torch.float16
        assert torch.is_autocast_enabled("maia")
        assert torch.mm(a, a).dtype == torch.float16
    assert not torch.is_autocast_enabled("maia")
    assert torch.mm(a, a).dtype == torch.float32


@pytest.mark.parametrize("dtype", [torch.float32, *LOW], ids=str)
def test_fallthrough_keeps_dtypes(dtype):
    """Ops in no list run unchanged: no cast, no failure."""
    a = _randn(16).to(dtype).to("maia")
    b = _randn(16, seed=1).to(dtype).to("maia")
    with torch.autocast("maia", dtype=torch.float16):
        assert torch.relu(a).dtype == dtype
        assert (a + b).dtype == dtype
        assert torch.tanh(a).dtype == dtype
        assert torch.randn(4, device="maia").dtype == torch.float32
        assert torch.empty(4, device="maia", dtype=dtype).normal_().dtype == dtype
        assert torch.zeros(3, device="maia").dtype == torch.float32
        # A mixed add follows ordinary type promotion, not autocast.
        assert (a + b.float()).dtype == torch.promote_types(dtype, torch.float32)
        # Integer inputs to a lower_precision_fp op are not cast.
        i = torch.arange(6, device="maia").view(2, 3)
        assert torch.mm(i, i.t()).dtype == torch.int64
    torch.testing.assert_close(torch.relu(a).cpu(), torch.relu(a.cpu()))


def test_nested_and_disabled():
    a = _randn(8, 8).to("maia")
    with torch.autocast("maia", dtype=torch.float16):
        assert torch.mm(a, a).dtype == torch.float16
        with torch.autocast("maia", dtype=torch.bfloat16):
            assert torch.get_autocast_dtype("maia") == torch.bfloat16
            assert torch.mm(a, a).dtype == torch.bfloat16
            with torch.autocast("maia", enabled=False):
                assert not torch.is_autocast_enabled("maia")
                assert torch.mm(a, a).dtype == torch.float32
                # Explicitly low inputs stay low: disabled autocast casts nothing.
                assert torch.mm(a.half(), a.half()).dtype == torch.float16
            assert torch.mm(a, a).dtype == torch.bfloat16
        assert torch.get_autocast_dtype("maia") == torch.float16
        assert torch.mm(a, a).dtype == torch.float16
    assert torch.mm(a, a).dtype == torch.float32
    assert torch.get_autocast_dtype("maia") == torch.float16


def test_cpu_autocast_does_not_cast_maia():
    """Autocast is per device: CPU autocast leaves maia tensors alone, maia
    autocast leaves CPU tensors alone."""
    a = _randn(4, 4)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert torch.mm(a.to("maia"), a.to("maia")).dtype == torch.float32
    with torch.autocast("maia"):
        assert torch.mm(a, a).dtype == torch.float32


def test_backward_through_autocast():
    """Gradients of parameters come back in the parameter dtype (float32)."""
    lin = nn.Linear(16, 4).to("maia")
    x = _randn(8, 16).to("maia")
    with torch.autocast("maia"):
        y = lin(x)
        assert y.dtype == torch.float16
        loss = y.float().pow(2).mean()
    loss.backward()
    assert lin.weight.grad.dtype == torch.float32
    ref = nn.Linear(16, 4)
    ref.load_state_dict({k: v.cpu() for k, v in lin.state_dict().items()})
    y_ref = F.linear(x.cpu().half().float(), ref.weight.half().float(), ref.bias.half().float())
    y_ref.half().float().pow(2).mean().backward()
    torch.testing.assert_close(lin.weight.grad.cpu(), ref.weight.grad, atol=5e-3, rtol=5e-3)


# --- training with GradScaler ---------------------------------------------
# GradScaler's kernels (_amp_foreach_non_finite_check_and_unscale_,
# _amp_update_scale_) are maia operators (ops/GradScaler.cpp): no host
# fallback, checked below against the CPU kernels of the same operators.

AMP_OPS = ("aten::_amp_foreach_non_finite_check_and_unscale_", "aten::_amp_update_scale_")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("poison", [None, float("inf"), float("-inf"), float("nan")],
                         ids=["finite", "inf", "-inf", "nan"])
def test_non_finite_check_and_unscale_matches_cpu(dtype, poison):
    g = _gen(5)
    grads = [torch.randn(shape, generator=g).to(dtype) * 1000 for shape in [(33,), (4, 5), (0,)]]
    if poison is not None:
        grads[1][2, 3] = poison
    found = {d: torch.zeros(1, device=d) for d in ("cpu", "maia")}
    inv_scale = torch.full((1,), 1 / 1024)
    maia_grads = [t.to("maia") for t in grads]
    torch.maia.reset_fallback_counts()
    torch._amp_foreach_non_finite_check_and_unscale_(maia_grads, found["maia"],
                                                     inv_scale.to("maia"))
    torch._amp_foreach_non_finite_check_and_unscale_(grads, found["cpu"], inv_scale)
    assert not any(op in torch.maia.fallback_counts() for op in AMP_OPS)
    assert found["maia"].item() == found["cpu"].item() == (0.0 if poison is None else 1.0)
    for maia, cpu in zip(maia_grads, grads):
        torch.testing.assert_close(maia.cpu(), cpu, equal_nan=True, rtol=0, atol=0)


@pytest.mark.parametrize("found_inf,tracker,scale", [
    (0.0, 0, 1024.0), (0.0, 1, 1024.0), (1.0, 1, 1024.0), (0.0, 1, 3.0e38), (1.0, 0, 1e-30)])
def test_update_scale_matches_cpu(found_inf, tracker, scale):
    # growth_interval 2: tracker 1 + a clean step grows (unless float32
    # overflows), any inf backs off; both restart the count.
    state = {}
    for device in ("cpu", "maia"):
        s = torch.full((1,), scale, device=device)
        t = torch.full((1,), tracker, dtype=torch.int32, device=device)
        torch._amp_update_scale_(s, t, torch.full((1,), found_inf, device=device),
                                 2.0, 0.5, 2)
        state[device] = (s.cpu(), t.cpu())
    assert torch.equal(state["maia"][0], state["cpu"][0])
    assert torch.equal(state["maia"][1], state["cpu"][1])


def test_amp_operators_reject_bad_arguments():
    grads = [torch.randn(4, device="maia")]
    with pytest.raises(RuntimeError, match="found_inf must be a float32"):
        torch._amp_foreach_non_finite_check_and_unscale_(
            grads, torch.zeros(1, dtype=torch.float64, device="maia"),
            torch.ones(1, device="maia"))
    with pytest.raises(RuntimeError, match="inv_scale must be a 1-element"):
        torch._amp_foreach_non_finite_check_and_unscale_(
            grads, torch.zeros(1, device="maia"), torch.ones(2, device="maia"))
    with pytest.raises(RuntimeError, match="growth_tracker must be a 1-element int32"):
        torch._amp_update_scale_(torch.ones(1, device="maia"), torch.zeros(1, device="maia"),
                                 torch.zeros(1, device="maia"), 2.0, 0.5, 2)

class TinyBlock(nn.Module):
    """A transformer-ish block: layer norm, attention-like mixing through
    matmuls and softmax, a GELU MLP and a residual, then a linear head."""

    def __init__(self, d=16, classes=4):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
        self.head = nn.Linear(d, classes)

    def forward(self, x):  # x: [batch, seq, d]
        h = self.norm(x)
        q, k, v = self.qkv(h).chunk(3, dim=-1)
        att = torch.softmax(torch.matmul(q, k.transpose(-1, -2)) / 4.0, dim=-1)
        x = x + torch.matmul(att, v)
        x = x + self.mlp(x)
        return self.head(x.mean(1))


class CpuAsMaiaAutocast(TorchFunctionMode):
    """Runs a module on CPU with the casts maia's policy makes, so that a CPU
    step can be compared with a maia autocast step: linear/matmul inputs are
    rounded to the low dtype (and computed in float32, where CPU has every
    kernel), their outputs rounded to the low dtype; layer_norm, softmax and
    the loss run in float32. Other ops see their inputs as they are, as the
    fallthrough leaves them."""

    LOWER = (F.linear, torch.matmul, torch.Tensor.matmul, torch.Tensor.__matmul__)
    FP32 = (F.layer_norm, torch.softmax, torch.Tensor.softmax, F.cross_entropy)

    def __init__(self, dtype):
        super().__init__()
        self.dtype = dtype

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}

        def cast(value, dtype):
            if isinstance(value, torch.Tensor) and value.is_floating_point():
                return value.to(dtype)
            return value

        if func in self.LOWER:
            args = [cast(cast(a, self.dtype), torch.float32) for a in args]
            return func(*args, **kwargs).to(self.dtype)
        if func in self.FP32:
            args = [cast(a, torch.float32) for a in args]
        return func(*args, **kwargs)


def _batches(n=4):
    g = _gen(3)
    return [(torch.randn(8, 6, 16, generator=g), torch.randint(0, 4, (8,), generator=g))
            for _ in range(n)]


def _train_step(model, opt, scaler, x, y, device, dtype):
    opt.zero_grad()
    if device == "maia":
        with torch.autocast("maia", dtype=dtype):
            out = model(x)
            assert out.dtype == dtype
            loss = F.cross_entropy(out, y)
    else:
        with CpuAsMaiaAutocast(dtype):
            loss = F.cross_entropy(model(x), y)
    assert loss.dtype == torch.float32
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    return loss.detach()


@pytest.mark.parametrize("dtype", LOW, ids=str)
def test_training_with_grad_scaler_matches_cpu(dtype):
    torch.manual_seed(0)
    cpu_model = TinyBlock()
    maia_model = TinyBlock().to("maia")
    maia_model.load_state_dict(cpu_model.state_dict())
    cpu_opt = torch.optim.SGD(cpu_model.parameters(), lr=0.05)
    maia_opt = torch.optim.SGD(maia_model.parameters(), lr=0.05)
    # The CPU step goes through the same GradScaler arithmetic (scale 2**10,
    # unscale before the step) so that both runs round the same way.
    cpu_scaler = torch.amp.GradScaler("cpu", init_scale=2.0**10)
    maia_scaler = torch.amp.GradScaler("maia", init_scale=2.0**10)
    torch.maia.reset_fallback_counts()
    for x, y in _batches():
        cpu_loss = _train_step(cpu_model, cpu_opt, cpu_scaler, x, y, "cpu", dtype)
        maia_loss = _train_step(maia_model, maia_opt, maia_scaler, x.to("maia"), y.to("maia"),
                                "maia", dtype)
        atol, rtol = (5e-3, 5e-3) if dtype == torch.float16 else (3e-2, 3e-2)
        torch.testing.assert_close(maia_loss.cpu(), cpu_loss, atol=atol, rtol=rtol)
    assert maia_scaler.get_scale() == cpu_scaler.get_scale() == 2.0**10
    assert not any(op in torch.maia.fallback_counts() for op in AMP_OPS)
    for p_maia, p_cpu in zip(maia_model.parameters(), cpu_model.parameters()):
        torch.testing.assert_close(p_maia.detach().cpu(), p_cpu.detach(), atol=atol, rtol=rtol)


def test_grad_scaler_skips_step_on_inf():
    torch.manual_seed(0)
    model = TinyBlock().to("maia")
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    scaler = torch.amp.GradScaler("maia", init_scale=2.0**12)
    x, y = (t.to("maia") for t in _batches(1)[0])
    before = [p.detach().clone() for p in model.parameters()]

    opt.zero_grad()
    with torch.autocast("maia"):
        loss = F.cross_entropy(model(x), y)
    scaler.scale(loss).backward()
    model.head.weight.grad[0, 0] = float("inf")  # an overflowed gradient
    scaler.step(opt)
    scaler.update()

    assert scaler.get_scale() == 2.0**11  # backoff_factor 0.5
    for p, p0 in zip(model.parameters(), before):
        assert torch.equal(p.detach().cpu(), p0.cpu()), "the step must be skipped"

    # The next, finite step runs and keeps the halved scale.
    opt.zero_grad()
    with torch.autocast("maia"):
        loss = F.cross_entropy(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    assert scaler.get_scale() == 2.0**11
    assert not torch.equal(model.head.weight.detach().cpu(), before[-2].cpu())


# --- torch.compile ----------------------------------------------------------

@pytest.mark.skipif(not os.environ.get("MAIA_COMPILE"),
                    reason="MAIA_COMPILE (the built maia-compile) is set by ctest")
def test_compile_matches_eager_autocast():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 8)).to("maia")
    x = _randn(4, 16).to("maia")

    def fn(inp):
        with torch.autocast("maia", dtype=torch.float16):
            return model(inp)

    from maia_inductor.runtime import MaiaCompiledKernel

    eager = fn(x)
    torch._dynamo.reset()
    launches = MaiaCompiledKernel.launches
    try:
        compiled = torch.compile(fn)(x)
    finally:
        torch._dynamo.reset()
    assert MaiaCompiledKernel.launches > launches, "no compiled MAIA kernel ran"
    assert eager.dtype == compiled.dtype == torch.float16
    torch.testing.assert_close(compiled.cpu(), eager.cpu(), atol=2e-3, rtol=2e-3)
