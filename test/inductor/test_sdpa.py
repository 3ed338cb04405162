"""torch.compile of F.scaled_dot_product_attention on maia: Inductor lowers
_scaled_dot_product_fused_attention_overrideable (and its backward) as
fallback kernels, so the compiled graph calls maia's fused attention
(runtime/torch/csrc/ops/Attention.cpp) between its own MAIA kernels; forward
and gradients match eager CPU."""

import pytest
import torch
import torch.nn.functional as F
from compile_support import TOLERANCES
from torch._inductor.utils import run_and_get_code

FUSED = "torch.ops.aten._scaled_dot_product_fused_attention_overrideable.default"
FUSED_BWD = "torch.ops.aten._scaled_dot_product_fused_attention_overrideable_backward.default"


class Attention(torch.nn.Module):
    """Multi-head self-attention: qkv projection, SDPA, output projection."""

    def __init__(self, dim=64, heads=4, causal=True):
        super().__init__()
        self.heads, self.causal = heads, causal
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.proj = torch.nn.Linear(dim, dim)

    def forward(self, x, mask=None):
        batch, seq, dim = x.shape
        q, k, v = self.qkv(x).split(dim, -1)
        q, k, v = [t.view(batch, seq, self.heads, dim // self.heads).transpose(1, 2)
                   for t in (q, k, v)]
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                           is_causal=self.causal and mask is None)
        return self.proj(o.transpose(1, 2).reshape(batch, seq, dim))


def compiled_and_eager(dtype, seq, causal, with_mask, dynamic=False):
    """(maia compiled output and parameter grads, CPU eager ones, the
    compiled graphs' code)."""
    torch.manual_seed(seq)
    model = Attention(causal=causal).to(dtype)
    x = torch.randn(2, seq, 64).to(dtype)
    mask = torch.rand(seq, seq) > 0.4 if with_mask else None
    if mask is not None:
        mask[:, 0] = True
    expected = model(x, mask)
    expected.float().square().sum().backward()
    expected_grads = [p.grad for p in model.parameters()]

    maia_model = Attention(causal=causal).to(dtype).to("maia")
    maia_model.load_state_dict(model.state_dict())
    compiled = torch.compile(maia_model, dynamic=dynamic)
    mask_maia = mask.to("maia") if mask is not None else None

    def step():
        out = compiled(x.to("maia"), mask_maia)
        out.float().square().sum().backward()
        return out

    torch.maia.reset_fallback_counts()
    actual, code = run_and_get_code(step)
    assert not torch.maia.fallback_counts()
    actual_grads = [p.grad.cpu() for p in maia_model.parameters()]
    return (actual.cpu(), actual_grads), (expected, expected_grads), "\n".join(code)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("causal,with_mask", [(True, False), (False, True), (False, False)])
def test_compiled_attention_runs_the_fused_kernels(dtype, causal, with_mask):
    actual, expected, code = compiled_and_eager(dtype, 70, causal, with_mask)
    assert FUSED in code and FUSED_BWD in code
    assert "aten._softmax" not in code  # not the math path
    atol, rtol = TOLERANCES[dtype]
    torch.testing.assert_close(actual[0], expected[0], atol=atol, rtol=rtol)
    # bfloat16 weight gradients reach ~50: a few of their ulps (0.25 at 32).
    grad_tol = dict(atol=1e-3, rtol=1e-3) if dtype == torch.float32 else dict(atol=0.25,
                                                                                 rtol=2e-2)
    for a, e in zip(actual[1], expected[1]):
        torch.testing.assert_close(a, e, **grad_tol)


def test_dynamic_sequence_length():
    for seq in (33, 65, 130):
        actual, expected, code = compiled_and_eager(torch.float32, seq, True, False,
                                                    dynamic=True)
        torch.testing.assert_close(actual[0], expected[0], atol=1e-4, rtol=1e-4)
        for a, e in zip(actual[1], expected[1]):
            torch.testing.assert_close(a, e, atol=1e-3, rtol=1e-3)


def test_dropout_in_training_compiles_to_the_math_path():
    def fn(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, dropout_p=1.0)

    q = torch.randn(1, 2, 9, 16, device="maia")
    out, code = run_and_get_code(torch.compile(fn), q, q, q)
    assert "overrideable" not in "\n".join(code)
    assert torch.equal(out.cpu(), torch.zeros(1, 2, 9, 16))


def test_three_dimensional_inputs_compile():
    def fn(q, k, v):
        return F.scaled_dot_product_attention(q.sin(), k, v, is_causal=True).cos()

    torch.manual_seed(9)
    q, k, v = [torch.randn(3, 70, 32, requires_grad=True) for _ in range(3)]
    qm, km, vm = [t.detach().to("maia").requires_grad_() for t in (q, k, v)]
    expected = fn(q, k, v)
    expected.sum().backward()
    actual, code = run_and_get_code(lambda: torch.compile(fn)(qm, km, vm))
    assert FUSED in "\n".join(code)
    actual.sum().backward()
    torch.testing.assert_close(actual.cpu(), expected, atol=1e-4, rtol=1e-4)
    # Compiled sin/cos are polynomials (a few ulp): the gradients' tolerance.
    for a, e in [(qm.grad, q.grad), (km.grad, k.grad), (vm.grad, v.grad)]:
        torch.testing.assert_close(a.cpu(), e, atol=1e-3, rtol=1e-3)


def test_cpp_wrapper_calls_the_c_shim():
    # The C++ wrapper calls aoti_torch_maia__scaled_dot_product_fused_attention_
    # overrideable(_backward) (runtime/torch/csrc/AotiShim.cpp, maia/aoti.h).
    import torch._inductor.config as inductor_config

    torch.manual_seed(11)
    model = Attention(causal=True)
    x = torch.randn(2, 70, 64)
    expected = model(x)
    expected.sum().backward()
    maia_model = Attention(causal=True).to("maia")
    maia_model.load_state_dict(model.state_dict())
    with inductor_config.patch(cpp_wrapper=True):
        compiled = torch.compile(maia_model)

        def step():
            out = compiled(x.to("maia"))
            out.sum().backward()
            return out

        actual, code = run_and_get_code(step)
    code = "\n".join(code)
    assert "aoti_torch_maia__scaled_dot_product_fused_attention_overrideable(" in code
    assert "aoti_torch_maia__scaled_dot_product_fused_attention_overrideable_backward(" in code
    torch.testing.assert_close(actual.cpu(), expected, atol=1e-4, rtol=1e-4)
    for a, e in zip(maia_model.parameters(), model.parameters()):
        torch.testing.assert_close(a.grad.cpu(), e.grad, atol=1e-3, rtol=1e-3)
