"""F.scaled_dot_product_attention on maia (runtime/torch/csrc/ops/Attention.cpp,
runtime/kernels/nn/attention.h): inputs the fused kernels take run
_scaled_dot_product_fused_attention_overrideable and its backward, everything
else the math path; both match the CPU's SDPA, and neither falls back to the
host."""

import math

import pytest
import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

FUSED = "aten::_scaled_dot_product_fused_attention_overrideable"
FUSED_BWD = "aten::_scaled_dot_product_fused_attention_overrideable_backward"
DTYPES = [torch.float32, torch.bfloat16, torch.float16]
# Against the CPU's SDPA in the same dtype: both round the output (and the
# CPU its 16-bit intermediates), so low precision gets the dtype's tolerance.
TOL = {
    torch.float32: dict(atol=2e-5, rtol=2e-5),
    torch.bfloat16: dict(atol=2e-2, rtol=2e-2),
    torch.float16: dict(atol=3e-3, rtol=3e-3),
}
GRAD_TOL = {
    torch.float32: dict(atol=1e-4, rtol=1e-4),
    torch.bfloat16: dict(atol=6e-2, rtol=5e-2),
    torch.float16: dict(atol=1e-2, rtol=1e-2),
}


def ops_run(fn):
    """The aten operators fn ran (profiler keys) and the host fallbacks it
    caused, with fn's result."""
    torch.maia.reset_fallback_counts()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        result = fn()
        torch.maia.synchronize()
    return {e.key for e in prof.key_averages()}, torch.maia.fallback_counts(), result


def qkv(batch, heads, seq_q, seq_k, dim, dtype, kv_heads=None, dim_v=None, transposed=False):
    """Random query, key, value on the CPU; transposed makes them
    (batch, seq, heads, dim) tensors viewed as (batch, heads, seq, dim)."""
    kv_heads = kv_heads or heads
    dim_v = dim_v or dim

    def make(h, s, d):
        if transposed:
            return torch.randn(batch, s, h, d).to(dtype).transpose(1, 2)
        return torch.randn(batch, h, s, d).to(dtype)

    return make(heads, seq_q, dim), make(kv_heads, seq_k, dim), make(kv_heads, seq_k, dim_v)


def to_maia(t):
    """t on maia with t's strides (a transposed view stays one)."""
    if t.is_contiguous():
        return t.to("maia")
    return t.transpose(1, 2).contiguous().to("maia").transpose(1, 2)


def sdpa_both(q, k, v, grad=False, **kwargs):
    """SDPA on the CPU and on maia (with gradients of q, k, v if grad); the
    maia operators and fallbacks; each result as CPU tensors."""

    def run(device_q, device_k, device_v, mask):
        inputs = [t.detach().requires_grad_(grad) for t in (device_q, device_k, device_v)]
        out = F.scaled_dot_product_attention(*inputs, attn_mask=mask, **kwargs)
        if not grad:
            return [out]
        g = torch.linspace(-1, 1, out.numel()).reshape(out.shape).to(out.dtype)
        out.backward(g.to(out.device))
        return [out] + [t.grad for t in inputs]

    mask = kwargs.pop("attn_mask", None)
    expected = run(q, k, v, mask)
    mask_maia = mask.to("maia") if mask is not None else None
    ops, fallbacks, actual = ops_run(lambda: run(to_maia(q), to_maia(k), to_maia(v), mask_maia))
    return [a.cpu() for a in actual], expected, ops, fallbacks


def check(actual, expected, tol):
    for name, a, e in zip(["output", "grad_q", "grad_k", "grad_v"], actual, expected):
        torch.testing.assert_close(a, e, msg=lambda m, name=name: f"{name}: {m}", **tol)


class TestSdpaFused:
    @pytest.mark.parametrize("dtype", DTYPES, ids=str)
    @pytest.mark.parametrize("causal", [False, True])
    @pytest.mark.parametrize("seq", [1, 7, 65, 200])
    @pytest.mark.parametrize("dim", [16, 64, 80])
    def test_forward_matches_cpu(self, dtype, causal, seq, dim):
        torch.manual_seed(seq * 100 + dim)
        q, k, v = qkv(2, 3, seq, seq, dim, dtype)
        actual, expected, ops, fallbacks = sdpa_both(q, k, v, is_causal=causal)
        assert FUSED in ops and "aten::_softmax" not in ops
        assert not fallbacks
        check(actual, expected, TOL[dtype])

    @pytest.mark.parametrize("dtype", DTYPES, ids=str)
    @pytest.mark.parametrize("causal", [False, True])
    @pytest.mark.parametrize("seq_q,seq_k", [(1, 200), (65, 7), (7, 65), (130, 129)])
    def test_cross_attention_lengths(self, dtype, causal, seq_q, seq_k):
        torch.manual_seed(seq_q + seq_k)
        q, k, v = qkv(1, 2, seq_q, seq_k, 64, dtype, dim_v=48)
        actual, expected, ops, fallbacks = sdpa_both(q, k, v, is_causal=causal)
        assert FUSED in ops and not fallbacks
        check(actual, expected, TOL[dtype])

    @pytest.mark.parametrize("dtype", DTYPES, ids=str)
    def test_explicit_scale_and_transposed_inputs(self, dtype):
        torch.manual_seed(1)
        q, k, v = qkv(2, 4, 33, 70, 32, dtype, transposed=True)
        assert not q.is_contiguous()
        actual, expected, ops, fallbacks = sdpa_both(q, k, v, scale=0.3, is_causal=True)
        assert FUSED in ops and not fallbacks
        check(actual, expected, TOL[dtype])
        # The output is laid out like the query (what the meta function says).
        out = F.scaled_dot_product_attention(to_maia(q), to_maia(k), to_maia(v))
        assert out.stride() == torch.empty_like(q).stride()

    @pytest.mark.parametrize("dtype", DTYPES, ids=str)
    @pytest.mark.parametrize("shape", [(65, 70), (2, 1, 65, 70), (1, 3, 1, 70)], ids=str)
    def test_boolean_mask(self, dtype, shape):
        torch.manual_seed(2)
        q, k, v = qkv(2, 3, 65, 70, 64, dtype)
        mask = torch.rand(shape) > 0.3
        mask[..., 0] = True  # no fully masked rows (their CPU result is NaN)
        actual, expected, ops, fallbacks = sdpa_both(q, k, v, attn_mask=mask)
        assert FUSED in ops and not fallbacks
        check(actual, expected, TOL[dtype])

    @pytest.mark.parametrize("dtype", DTYPES, ids=str)
    def test_additive_mask_with_causal_and_grads(self, dtype):
        torch.manual_seed(3)
        q, k, v = qkv(2, 3, 65, 65, 64, dtype)
        mask = torch.randn(1, 3, 65, 65).to(dtype)
        actual, expected, ops, fallbacks = sdpa_both(q, k, v, grad=True, attn_mask=mask)
        assert FUSED in ops and FUSED_BWD in ops and not fallbacks
        check(actual, expected, GRAD_TOL[dtype])

    @pytest.mark.parametrize("dtype", DTYPES, ids=str)
    @pytest.mark.parametrize("causal", [False, True])
    @pytest.mark.parametrize("seq,dim", [(1, 16), (7, 80), (65, 64), (200, 16)])
    def test_gradients_match_cpu(self, dtype, causal, seq, dim):
        torch.manual_seed(seq + dim)
        q, k, v = qkv(2, 2, seq, seq, dim, dtype)
        actual, expected, ops, fallbacks = sdpa_both(q, k, v, grad=True, is_causal=causal)
        assert FUSED_BWD in ops and "aten::_softmax_backward_data" not in ops
        assert not fallbacks
        check(actual, expected, GRAD_TOL[dtype])

    @pytest.mark.parametrize("causal", [False, True])
    def test_gradients_transposed_cross_attention(self, causal):
        torch.manual_seed(4)
        q, k, v = qkv(2, 3, 100, 70, 64, torch.float32, dim_v=40, transposed=True)
        actual, expected, ops, fallbacks = sdpa_both(q, k, v, grad=True, is_causal=causal,
                                                     scale=0.2)
        assert FUSED_BWD in ops and not fallbacks
        check(actual, expected, GRAD_TOL[torch.float32])

    @pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
    @pytest.mark.parametrize("causal", [False, True])
    def test_grouped_query_attention(self, dtype, causal):
        torch.manual_seed(5)
        q, k, v = qkv(2, 6, 70, 70, 32, dtype, kv_heads=2)
        actual, expected, ops, fallbacks = sdpa_both(q, k, v, grad=True, is_causal=causal,
                                                     enable_gqa=True)
        assert FUSED in ops and FUSED_BWD in ops and not fallbacks
        check(actual, expected, GRAD_TOL[dtype])

    @pytest.mark.parametrize("dtype", DTYPES, ids=str)
    @pytest.mark.parametrize("dim", [1, 8, 256])
    def test_head_dims_off_the_tile(self, dtype, dim):
        torch.manual_seed(dim)
        q, k, v = qkv(1, 2, 70, 65, dim, dtype)
        actual, expected, ops, fallbacks = sdpa_both(q, k, v, grad=True, is_causal=True)
        assert FUSED_BWD in ops and not fallbacks
        check(actual, expected, GRAD_TOL[dtype])

    @pytest.mark.parametrize("grad", [False, True])
    def test_three_dimensional_inputs(self, grad):
        torch.manual_seed(7)
        q, k, v = [t[0] for t in qkv(1, 3, 70, 40, 32, torch.float32)]
        mask = torch.rand(70, 40) > 0.5
        mask[:, 0] = True
        actual, expected, ops, fallbacks = sdpa_both(q, k, v, grad=grad, attn_mask=mask)
        assert FUSED in ops and not fallbacks
        check(actual, expected, GRAD_TOL[torch.float32])

    def test_mask_and_causal_together(self):
        torch.manual_seed(8)
        q, k, v = qkv(2, 2, 65, 65, 32, torch.float32)
        mask = torch.randn(65, 65)
        actual, expected, ops, fallbacks = sdpa_both(q, k, v, grad=True, attn_mask=mask,
                                                     is_causal=True)
        assert FUSED in ops and not fallbacks
        check(actual, expected, GRAD_TOL[torch.float32])

    @pytest.mark.parametrize("dtype", DTYPES, ids=str)
    def test_device_kernels_in_the_profile(self, dtype):
        q, k, v = [t.to("maia").requires_grad_() for t in qkv(1, 2, 9, 9, 16, dtype)]
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) as prof:
            F.scaled_dot_product_attention(q, k, v).sum().backward()
            torch.maia.synchronize()
        names = {e.key for e in prof.key_averages()}
        suffix = {torch.float32: "f32", torch.bfloat16: "bf16", torch.float16: "f16"}[dtype]
        for kernel in ("sdpa_fwd", "sdpa_bwd_kv", "sdpa_bwd_q"):
            assert f"{kernel}_{suffix}" in names, names
        assert not {"gemm_f32", "softmax_f32", "softmax_bf16"} & names

    @pytest.mark.parametrize("causal", [False, True])
    @pytest.mark.parametrize("batch,heads,kv_heads", [(1, 4, 1), (1, 2, 2), (4, 4, 2),
                                                      (3, 2, 2)])
    def test_both_backward_passes(self, causal, batch, heads, kv_heads):
        # Few (batch, kv head) pairs take the two-pass backward (sdpa_bwd_kv,
        # sdpa_bwd_q), many (>= 2 per core) the one-pass sdpa_bwd.
        torch.manual_seed(batch * 10 + heads)
        q, k, v = qkv(batch, heads, 130, 100, 48, torch.float32, kv_heads=kv_heads)
        actual, expected, ops, fallbacks = sdpa_both(q, k, v, grad=True, is_causal=causal,
                                                     enable_gqa=heads != kv_heads)
        assert FUSED_BWD in ops and not fallbacks
        check(actual, expected, GRAD_TOL[torch.float32])

    def test_autocast_runs_the_fused_kernels_in_float16(self):
        # maia's autocast follows CUDA's lists: SDPA is lower-precision.
        torch.manual_seed(10)
        q, k, v = qkv(2, 2, 70, 70, 32, torch.float32)
        inputs = [to_maia(t).requires_grad_() for t in (q, k, v)]

        def run():
            with torch.autocast("maia"):
                out = F.scaled_dot_product_attention(*inputs, is_causal=True)
            out.float().sum().backward()
            return out

        ops, fallbacks, out = ops_run(run)
        assert FUSED in ops and FUSED_BWD in ops and not fallbacks
        assert out.dtype == torch.float16 and inputs[0].grad.dtype == torch.float32
        expected = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        torch.testing.assert_close(out.cpu().float(), expected, **TOL[torch.float16])

    def test_fully_masked_rows_are_zero(self):
        # The CPU gives NaN for a row that sees no key; the fused kernel gives
        # 0 (as the math path's safe softmax does), and 0 gradients.
        q, k, v = [t.to("maia").requires_grad_() for t in qkv(1, 1, 4, 5, 16, torch.float32)]
        mask = torch.ones(4, 5, dtype=torch.bool)
        mask[2] = False
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask.to("maia"))
        out.sum().backward()
        assert torch.equal(out[0, 0, 2].cpu(), torch.zeros(16))
        assert torch.isfinite(out.cpu()).all() and torch.isfinite(q.grad.cpu()).all()
        assert torch.equal(q.grad[0, 0, 2].cpu(), torch.zeros(16))


class TestSdpaMathPath:
    """What the fused kernels do not take still gives the CPU's answer."""

    def test_dropout_runs_math(self):
        q, k, v = [to_maia(t) for t in qkv(2, 2, 9, 9, 16, torch.float32)]
        ops, fallbacks, out = ops_run(
            lambda: F.scaled_dot_product_attention(q, k, v, dropout_p=1.0))
        assert FUSED not in ops and not fallbacks
        assert torch.equal(out.cpu(), torch.zeros(2, 2, 9, 16))  # every weight dropped
        ops, _, out = ops_run(lambda: F.scaled_dot_product_attention(q, k, v, dropout_p=0.5))
        assert FUSED not in ops and out.shape == (2, 2, 9, 16)
        assert torch.isfinite(out.cpu()).all()

    @pytest.mark.parametrize("case", ["3d_value_width", "float64", "mask_grad"])
    def test_unsupported_inputs_match_cpu(self, case):
        torch.manual_seed(6)
        dtype = torch.float64 if case == "float64" else torch.float32
        q, k, v = qkv(2, 3, 17, 17, 16, dtype, dim_v=24 if case == "3d_value_width" else None)
        mask = None
        if case == "3d_value_width":  # the meta function cannot size that output
            q, k, v = q[0], k[0], v[0]
        if case == "mask_grad":
            mask = torch.randn(17, 17)
        expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        mask_maia = mask.to("maia").requires_grad_() if mask is not None else None
        ops, fallbacks, out = ops_run(lambda: F.scaled_dot_product_attention(
            q.to("maia"), k.to("maia"), v.to("maia"), attn_mask=mask_maia))
        assert FUSED not in ops
        # maia has no float64 GEMM: the math path's bmm runs on the host.
        assert set(fallbacks) <= ({"aten::bmm"} if case == "float64" else set())
        torch.testing.assert_close(out.cpu(), expected, **TOL[torch.float32])
        if case == "mask_grad":
            out.sum().backward()
            mask_cpu = mask.clone().requires_grad_()
            F.scaled_dot_product_attention(q, k, v, attn_mask=mask_cpu).sum().backward()
            torch.testing.assert_close(mask_maia.grad.cpu(), mask_cpu.grad, atol=1e-5, rtol=1e-5)

    def test_sdpa_kernel_context_selects_backend(self):
        from torch.nn.attention import SDPBackend, sdpa_kernel

        q, k, v = [to_maia(t) for t in qkv(1, 2, 9, 9, 16, torch.float32)]
        with sdpa_kernel([SDPBackend.MATH]):
            ops, _, math_out = ops_run(lambda: F.scaled_dot_product_attention(q, k, v))
        assert FUSED not in ops
        with sdpa_kernel([SDPBackend.OVERRIDEABLE]):
            ops, _, fused_out = ops_run(lambda: F.scaled_dot_product_attention(q, k, v))
        assert FUSED in ops
        torch.testing.assert_close(fused_out.cpu(), math_out.cpu(), **TOL[torch.float32])

    def test_direct_call_refuses_dropout(self):
        q, k, v = [to_maia(t) for t in qkv(1, 1, 4, 4, 16, torch.float32)]
        with pytest.raises(RuntimeError, match="no dropout"):
            torch.ops.aten._scaled_dot_product_fused_attention_overrideable(q, k, v, None, 0.5)
        out, lse = torch.ops.aten._scaled_dot_product_fused_attention_overrideable(q, k, v)[:2]
        assert lse.shape == (1, 1, 4) and lse.dtype == torch.float32
        scores = (q @ k.transpose(-1, -2)).cpu() / math.sqrt(16)
        torch.testing.assert_close(lse.cpu(), torch.logsumexp(scores, -1), atol=1e-5, rtol=1e-5)


AVX2_CHECK = """
import torch, torch.nn.functional as F
torch.manual_seed(0)
q, k, v = [torch.randn(2, 3, 70, 80, requires_grad=True) for _ in range(3)]
qm, km, vm = [t.detach().to("maia").requires_grad_() for t in (q, k, v)]
F.scaled_dot_product_attention(q, k, v, is_causal=True).sum().backward()
F.scaled_dot_product_attention(qm, km, vm, is_causal=True).sum().backward()
for a, e in [(qm.grad, q.grad), (km.grad, k.grad), (vm.grad, v.grad)]:
    torch.testing.assert_close(a.cpu(), e, atol=1e-4, rtol=1e-4)
print("ok")
"""


def test_avx2_binary_matches_cpu(tmp_path):
    """Hosts without AVX-512 load maia_attention_kernels_v3 (the driver
    refuses v4): run the same checks with v4 absent from the kernel dir."""
    import os
    import subprocess
    import sys

    kernel_dir = os.environ.get("MAIA_KERNEL_DIR")
    if not kernel_dir:
        pytest.skip("needs MAIA_KERNEL_DIR (set by ctest) to build a kernel dir without v4")
    for name in os.listdir(kernel_dir):
        if name != "maia_attention_kernels_v4.maiabin":
            os.symlink(os.path.join(kernel_dir, name), tmp_path / name)
    result = subprocess.run([sys.executable, "-c", AVX2_CHECK], capture_output=True, text=True,
                            env=dict(os.environ, MAIA_KERNEL_DIR=str(tmp_path)), timeout=300)
    assert result.returncode == 0 and "ok" in result.stdout, result.stderr[-2000:]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_op_db_samples_without_dropout(dtype):
    """PyTorch's OpInfo samples of F.scaled_dot_product_attention (the
    conformance sweep skips the op: its samples with dropout reseed the CPU
    generator), those without dropout: outputs and gradients match the CPU."""
    from torch.testing._internal.common_methods_invocations import op_db

    op = next(o for o in op_db if o.name == "nn.functional.scaled_dot_product_attention")
    tol = TOL[dtype] if dtype != torch.float32 else dict(atol=1e-5, rtol=1e-5)
    checked = 0
    torch.maia.reset_fallback_counts()
    for sample in op.sample_inputs("cpu", dtype, requires_grad=True):
        if sample.kwargs.get("dropout_p", 0.0) != 0.0:
            continue
        args = [sample.input, *sample.args]
        maia_args = [a.detach().to("maia").requires_grad_(a.requires_grad)
                     if isinstance(a, torch.Tensor) else a for a in args]
        maia_kwargs = {k: v.to("maia") if isinstance(v, torch.Tensor) else v
                       for k, v in sample.kwargs.items()}
        expected = op(*args, **sample.kwargs)
        actual = op(*maia_args, **maia_kwargs)
        torch.testing.assert_close(actual.cpu(), expected, equal_nan=True, **tol)
        grad = torch.randn_like(expected)
        inputs = [a for a in args if isinstance(a, torch.Tensor) and a.requires_grad]
        maia_inputs = [a for a in maia_args if isinstance(a, torch.Tensor) and a.requires_grad]
        for a, e in zip(torch.autograd.grad(actual, maia_inputs, grad.to("maia")),
                        torch.autograd.grad(expected, inputs, grad)):
            torch.testing.assert_close(a.cpu(), e, equal_nan=True,
                                       **{k: 10 * v for k, v in tol.items()})
        checked += 1
    assert checked > 5 and not torch.maia.fallback_counts()
