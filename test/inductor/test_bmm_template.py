"""bmm/baddbmm as GEMM template kernels (maia_inductor/gemm_template.py):
the batched product and the pointwise epilogue Inductor fuses into it as
one MLIR kernel, against eager CPU."""

import math

import pytest
import torch
import torch.nn.functional as F
from compile_support import assert_compiled_matches
from test_gemm_template import UKERNEL_CALL, wrapper_and_kernels


def bmm_bias_gelu(a, b, bias):
    return F.gelu(torch.bmm(a, b) + bias)


class TestOneKernel:
    def test_bmm_bias_gelu_is_one_launch(self):
        args = torch.randn(3, 37, 45), torch.randn(3, 45, 29), torch.randn(29)
        wrapper, kernels = wrapper_and_kernels(bmm_bias_gelu, *args)
        assert len(kernels) == 1 and kernels[0].name.startswith("maia_gemm_")
        mlir = kernels[0].mlir
        # A loop over the program's batches around the blocks of C; the
        # call takes each operand at its batch's offset.
        batches = mlir.index("scf.for %bt = %bt_first to %bt_last")
        call = mlir.index(UKERNEL_CALL + "f32(", batches)
        assert "%bt_off_a" in mlir[call:mlir.index("\n", call)]
        assert mlir.index("math.erf", call) > call
        assert "extern_kernels." not in wrapper and wrapper.count(".run(") == 1

    def test_baddbmm_with_activation_is_one_launch(self):
        def fn(c, a, b):
            return torch.relu(torch.baddbmm(c, a, b))

        args = torch.randn(4, 1, 24), torch.randn(4, 19, 30), torch.randn(4, 30, 24)
        wrapper, kernels = wrapper_and_kernels(fn, *args)
        assert len(kernels) == 1 and UKERNEL_CALL in kernels[0].mlir
        assert "extern_kernels." not in wrapper
        assert_compiled_matches(fn, *args)

    def test_plain_bmm_is_the_extern_kernel(self):
        args = torch.randn(5, 20, 30), torch.randn(5, 30, 40)
        wrapper, kernels = wrapper_and_kernels(lambda a, b: torch.bmm(a, b), *args)
        assert kernels == [] and "extern_kernels.bmm(" in wrapper
        assert_compiled_matches(lambda a, b: torch.bmm(a, b), *args, maia_kernels=False)

    def test_baddbmm_without_pointwise_consumer_stays_extern(self):
        def fn(c, a, b):
            return torch.baddbmm(c, a, b)

        args = torch.randn(24), torch.randn(4, 19, 30), torch.randn(4, 30, 24)
        wrapper, kernels = wrapper_and_kernels(fn, *args)
        assert kernels == [] and "extern_kernels.baddbmm(" in wrapper
        assert_compiled_matches(fn, *args, maia_kernels=False)

    def test_attention_scores_then_softmax(self):
        # The scale feeds only the softmax (a reduction): it becomes the
        # reduction's prologue, and the product stays the extern bmm.
        def fn(q, k, v):
            scores = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(q.shape[-1])
            return torch.bmm(scores.softmax(-1), v)

        args = torch.randn(6, 33, 16), torch.randn(6, 33, 16), torch.randn(6, 33, 16)
        wrapper, kernels = wrapper_and_kernels(fn, *args)
        assert wrapper.count("extern_kernels.bmm(") == 2
        assert all(UKERNEL_CALL not in k.mlir for k in kernels)
        assert_compiled_matches(fn, *args)


# Batch 1; odd sizes; a program's rows starting and ending inside a batch
# (3 x 37 rows over 2 programs); many small batches (attention-like);
# several row blocks per batch (600 rows); several column blocks (depth 1100).
SHAPES = [(1, 1, 1, 1), (1, 64, 100, 48), (3, 37, 45, 29), (2, 5, 3, 7),
          (48, 128, 64, 128), (48, 128, 128, 64), (2, 600, 40, 70), (2, 70, 1100, 1500)]


class TestNumerics:
    @pytest.mark.parametrize("batch,m,k,n", SHAPES)
    def test_bmm_bias_gelu(self, batch, m, k, n):
        assert_compiled_matches(bmm_bias_gelu, torch.randn(batch, m, k),
                                torch.randn(batch, k, n), torch.randn(n))

    @pytest.mark.parametrize("layout", ["nn", "nt", "tn", "tt", "batch-inner"])
    def test_strided_operands(self, layout):
        batch, m, k, n = 3, 45, 70, 38
        if layout == "batch-inner":  # the batch is not the outermost stride
            a = torch.randn(m, batch, k).transpose(0, 1)
            b = torch.randn(k, batch, n).transpose(0, 1)
        else:
            a = (torch.randn(batch, k, m).transpose(1, 2) if layout[0] == "t"
                 else torch.randn(batch, m, k))
            b = (torch.randn(batch, n, k).transpose(1, 2) if layout[1] == "t"
                 else torch.randn(batch, k, n))
        assert_compiled_matches(lambda a, b: torch.relu(torch.bmm(a, b)), a, b)

    def test_broadcast_operand(self):
        # One B for every batch (an expanded view, batch stride 0).
        def fn(a, b):
            return torch.bmm(a, b.expand(4, -1, -1)) * 3

        assert_compiled_matches(fn, torch.randn(4, 21, 18), torch.randn(1, 18, 33))

    @pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, 2.0), (0, 1.5)])
    def test_baddbmm_scalars(self, beta, alpha):
        bias = torch.randn(3, 19, 31)
        if beta == 0:
            bias = torch.full((3, 19, 31), float("nan"))  # beta == 0 ignores it

        def fn(c, a, b):
            return torch.baddbmm(c, a, b, beta=beta, alpha=alpha).tanh()

        args = bias, torch.randn(3, 19, 26), torch.randn(3, 26, 31)
        assert_compiled_matches(fn, *args)
        _, kernels = wrapper_and_kernels(fn, *args)
        assert len(kernels) == 1 and UKERNEL_CALL in kernels[0].mlir

    def test_residual_through_matmul_of_4d_tensors(self):
        # matmul of 4-D tensors is a bmm over the flattened batch dims.
        def fn(x, w, r):
            return torch.matmul(x, w) + r

        args = torch.randn(2, 3, 17, 20), torch.randn(2, 3, 20, 24), torch.randn(2, 3, 17, 24)
        _, kernels = wrapper_and_kernels(fn, *args)
        assert len(kernels) == 1 and UKERNEL_CALL in kernels[0].mlir
        assert_compiled_matches(fn, *args)

    @pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
    def test_half_precision(self, dtype):
        args = [t.to(dtype) for t in (torch.randn(3, 37, 64), torch.randn(3, 64, 48),
                                      torch.randn(48))]
        # eager CPU rounds the product once, like the template; the bias add
        # and gelu round again in both
        assert_compiled_matches(bmm_bias_gelu, *args, dtype=dtype, atol=5e-2, rtol=5e-2)
        _, kernels = wrapper_and_kernels(bmm_bias_gelu, *args)
        assert len(kernels) == 1
        assert UKERNEL_CALL + ("bf16" if dtype == torch.bfloat16 else "f16") in kernels[0].mlir

    def test_dynamic_shapes_one_kernel_serves_every_size(self):
        from maia_inductor.testing import compiled_kernels

        bias = torch.randn(24)
        fn = torch.compile(bmm_bias_gelu, dynamic=True)
        torch._dynamo.reset()
        for batch, m in ((2, 5), (3, 33), (5, 130)):
            a, b = torch.randn(batch, m, 40), torch.randn(batch, 40, 24)
            torch.testing.assert_close(fn(a.to("maia"), b.to("maia"), bias.to("maia")).cpu(),
                                       bmm_bias_gelu(a, b, bias), atol=1e-4, rtol=1e-4)
        _, kernels = compiled_kernels(bmm_bias_gelu, torch.randn(2, 9, 40).to("maia"),
                                      torch.randn(2, 40, 24).to("maia"),
                                      bias.to("maia"), dynamic=True)
        assert len(kernels) == 1 and "%ks0" in kernels[0].mlir


def test_attention_training_step_matches_cpu():
    # The backward of bmm is bmm (of transposed operands).
    torch.manual_seed(0)
    q, k, v = (torch.randn(4, 12, 8, requires_grad=True) for _ in range(3))

    def step(q, k, v):
        out = F.gelu(torch.bmm(torch.bmm(q, k.transpose(1, 2)).softmax(-1), v) + 1)
        out.square().mean().backward()
        return out

    expected = step(q, k, v)
    grads = [t.grad for t in (q, k, v)]
    maia = [t.detach().to("maia").requires_grad_() for t in (q, k, v)]
    torch._dynamo.reset()
    actual = torch.compile(step)(*maia)
    torch.testing.assert_close(actual.cpu(), expected, atol=1e-4, rtol=1e-4)
    for got, want in zip((t.grad for t in maia), grads):
        torch.testing.assert_close(got.cpu(), want, atol=1e-4, rtol=1e-4)
