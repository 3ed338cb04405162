"""GEMM template kernels (maia_inductor/gemm_template.py): mm/addmm/linear
in compiled graphs as one MLIR kernel calling the GEMM micro-kernel, with
the pointwise epilogue fused in, against eager CPU."""

import pytest
import torch
import torch.nn.functional as F
from compile_support import assert_compiled_matches, to_maia
from torch._inductor.utils import run_and_get_code

from maia_inductor.testing import compiled_kernels

UKERNEL_CALL = "func.call @maia_ukernel_gemm_"


def wrapper_and_kernels(fn, *args, **options):
    """The generated wrapper code and the MLIR of each kernel."""
    torch._dynamo.reset()
    result, kernels = compiled_kernels(
        lambda *a: run_and_get_code(torch.compile(fn, **options), *a), *to_maia(args))
    return result[1][0], kernels


def linear_gelu_add(x, w, b, r):
    return F.gelu(F.linear(x, w, b)) + r


class TestOneKernel:
    def test_linear_bias_gelu_residual_is_one_launch(self):
        x, w, b, r = torch.randn(37, 45), torch.randn(29, 45), torch.randn(29), torch.randn(37, 29)
        wrapper, kernels = wrapper_and_kernels(linear_gelu_add, x, w, b, r)
        assert len(kernels) == 1
        mlir = kernels[0].mlir
        assert kernels[0].name.startswith("maia_gemm_")
        # The product (the micro-kernel in a loop over row blocks), then
        # the epilogue on the same block: bias load, gelu, residual, store.
        call = mlir.index(UKERNEL_CALL + "f32(")
        epilogue = mlir.index("math.erf", call)
        assert mlir.index("scf.for %rb", mlir.index("scf.for %cb")) < call < epilogue
        assert "vector.maskedstore" in mlir[epilogue:]
        assert "extern_kernels." not in wrapper
        assert wrapper.count(".run(") == 1

    def test_product_without_epilogue_is_the_extern_kernel(self):
        # Nothing to fuse: the eager GEMM, which packs less than the
        # template's blocks.
        wrapper, kernels = wrapper_and_kernels(lambda a, b: torch.mm(a, b.t()),
                                               torch.randn(20, 30), torch.randn(40, 30))
        assert kernels == []
        assert "extern_kernels.mm(" in wrapper and "reinterpret_tensor" in wrapper
        assert_compiled_matches(lambda a, b: torch.mm(a, b.t()), torch.randn(20, 30),
                                torch.randn(40, 30), maia_kernels=False)

    def test_relu_silu_cast_fuse(self):
        def fn(x, w, b):
            y = F.linear(x, w, b)
            return F.relu(y), F.silu(y).to(torch.bfloat16)

        args = torch.randn(33, 64), torch.randn(48, 64), torch.randn(48)
        _, kernels = wrapper_and_kernels(fn, *args)
        assert len(kernels) == 1
        assert "arith.truncf" in kernels[0].mlir
        assert_compiled_matches(fn, *args, atol=1e-2, rtol=1e-2)

    def test_addmm_without_pointwise_consumer_stays_extern(self):
        # Only the bias to fuse: the extern addmm adds it while writing C.
        def fn(c, a, b):
            return torch.addmm(c, a, b).view(4, 5, 31).permute(1, 0, 2)

        args = torch.randn(31), torch.randn(20, 26), torch.randn(26, 31)
        wrapper, kernels = wrapper_and_kernels(fn, *args)
        assert "extern_kernels.addmm(" in wrapper and not kernels
        assert_compiled_matches(fn, *args, maia_kernels=False)

    def test_epilogue_feeding_only_a_reduction_goes_to_the_reduction(self):
        # linear -> gelu -> layer_norm: the layer norm takes bias + gelu as
        # its prologue (in registers); the product is the extern call.
        def fn(x, w, b):
            return F.layer_norm(F.gelu(F.linear(x, w, b)), (48,))

        args = torch.randn(33, 64), torch.randn(48, 64), torch.randn(48)
        wrapper, kernels = wrapper_and_kernels(fn, *args)
        assert len(kernels) == 1 and UKERNEL_CALL not in kernels[0].mlir
        assert "math.erf" in kernels[0].mlir and "extern_kernels.mm(" in wrapper
        assert_compiled_matches(fn, *args)

    def test_transposed_store_fuses(self):
        # The epilogue reads C where the program wrote it and stores its
        # result transposed (a scatter): fine within one program.
        def fn(a, b, c):
            return torch.mm(a, b).t() + c

        args = torch.randn(40, 24), torch.randn(24, 50), torch.randn(50, 40)
        _, kernels = wrapper_and_kernels(fn, *args)
        assert len(kernels) == 1
        assert_compiled_matches(fn, *args)

    def test_epilogue_reading_the_product_elsewhere_is_not_fused(self):
        # A program only holds its own block of C: reading C transposed
        # would need other programs' blocks.
        def fn(a, b):
            c = torch.mm(a, b)
            return c + c.t()

        args = torch.randn(300, 24), torch.randn(24, 300)
        wrapper, kernels = wrapper_and_kernels(fn, *args)
        assert len(kernels) == 1 and UKERNEL_CALL not in kernels[0].mlir
        assert "extern_kernels.mm(" in wrapper
        assert_compiled_matches(fn, *args)

    def test_reduction_of_the_product_is_a_kernel_of_its_own(self):
        def fn(a, b):
            return torch.mm(a, b).sum(dim=1)

        args = torch.randn(50, 30), torch.randn(30, 70)
        wrapper, kernels = wrapper_and_kernels(fn, *args)
        assert len(kernels) == 1 and "extern_kernels.mm(" in wrapper
        assert_compiled_matches(fn, *args)

    def test_epilogue_splitting_rows_runs_after_the_template(self):
        # Pairs of columns scaled by a 2-vector: the epilogue's rows are
        # pairs, not rows of C, so it cannot run on the template's blocks.
        def fn(a, b, s):
            return (torch.mm(a, b).view(30, 20, 2) * s).exp()

        args = torch.randn(30, 16), torch.randn(16, 40), torch.randn(2)
        wrapper, kernels = wrapper_and_kernels(fn, *args)
        assert len(kernels) == 1 and UKERNEL_CALL not in kernels[0].mlir
        assert "extern_kernels.mm(" in wrapper
        assert_compiled_matches(fn, *args)


# Odd sizes; several row blocks per program (600 rows); several column
# blocks per program (depth 2000: the packed panel of B holds 524 columns).
SHAPES = [(1, 1, 1), (1, 64, 100), (5, 3, 7), (37, 45, 29), (100, 1, 33), (128, 256, 64),
          (300, 513, 17), (515, 67, 300), (600, 40, 1100), (70, 2000, 1500)]


class TestNumerics:
    @pytest.mark.parametrize("m,k,n", SHAPES)
    def test_linear_gelu_add(self, m, k, n):
        assert_compiled_matches(linear_gelu_add, torch.randn(m, k), torch.randn(n, k),
                                torch.randn(n), torch.randn(m, n))

    @pytest.mark.parametrize("layout", ["nn", "nt", "tn", "tt"])
    def test_transposed_operands(self, layout):
        m, k, n = 45, 70, 38
        a = torch.randn(k, m).t() if layout[0] == "t" else torch.randn(m, k)
        b = torch.randn(n, k).t() if layout[1] == "t" else torch.randn(k, n)
        assert_compiled_matches(lambda a, b: torch.relu(a @ b), a, b)

    def test_sliced_operands(self):
        # Views with a storage offset and a row stride wider than the row.
        def fn(a, b):
            return torch.mm(a[3:, 2:40], b[1:39, ::2]) * 2

        assert_compiled_matches(fn, torch.randn(50, 45), torch.randn(40, 60))

    def test_batch_dims_through_a_view(self):
        def fn(x, w, b, r):
            return F.gelu(F.linear(x, w, b)) + r

        x, w, b = torch.randn(3, 17, 40), torch.randn(24, 40), torch.randn(24)
        assert_compiled_matches(fn, x, w, b, torch.randn(3, 17, 24))

    @pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, 2.0), (0, 1.5)])
    def test_addmm_scalars(self, beta, alpha):
        bias = torch.randn(31)
        if beta == 0:
            bias = torch.full((31,), float("nan"))  # beta == 0 ignores it
        args = bias, torch.randn(19, 26), torch.randn(26, 31)

        def fn(c, a, b):
            return torch.addmm(c, a, b, beta=beta, alpha=alpha).tanh()

        assert_compiled_matches(fn, *args)
        _, kernels = wrapper_and_kernels(fn, *args)
        assert len(kernels) == 1 and UKERNEL_CALL in kernels[0].mlir

    def test_empty_depth_gives_zeros(self):
        assert_compiled_matches(lambda a, b: torch.mm(a, b) + 1, torch.randn(9, 0),
                                torch.randn(0, 7))

    @pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
    def test_half_precision(self, dtype):
        args = [t.to(dtype) for t in (torch.randn(37, 64), torch.randn(48, 64), torch.randn(48),
                                      torch.randn(37, 48))]
        assert_compiled_matches(linear_gelu_add, *args, dtype=dtype, atol=5e-2, rtol=5e-2)
        # With a bias the product stays the eager kernel's call (it adds the
        # bias before it rounds: _splits_exactly); without one it is a
        # template with the epilogue.
        _, kernels = wrapper_and_kernels(linear_gelu_add, *args)
        assert not any(UKERNEL_CALL in k.mlir for k in kernels)
        unbiased = lambda x, w, b, r: F.gelu(x @ w.t()) + r  # noqa: E731
        assert_compiled_matches(unbiased, *args, dtype=dtype, atol=5e-2, rtol=5e-2)
        _, kernels = wrapper_and_kernels(unbiased, *args)
        assert len(kernels) == 1
        assert UKERNEL_CALL + ("bf16" if dtype == torch.bfloat16 else "f16") in kernels[0].mlir

    @pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
    @pytest.mark.parametrize("product", ["linear", "addmm", "baddbmm"])
    def test_half_precision_bias_rounds_once_as_eager(self, dtype, product):
        """In a template the bias would be added to C already rounded to 16
        bits and rounded again: ~14% of the elements 1 ulp off eager's."""
        g = torch.Generator().manual_seed(1)
        x, w, b = (torch.randn(*shape, generator=g).to(dtype)
                   for shape in ((64, 64), (96, 64), (96,)))
        fn = {"linear": lambda x, w, b: F.linear(x, w, b).relu(),
              "addmm": lambda x, w, b: torch.addmm(b, x, w.t(), beta=0.5).relu(),
              "baddbmm": lambda x, w, b: torch.baddbmm(
                  b, x.view(4, 16, 64), w.t().expand(4, 64, 96)).relu()}[product]
        args = [t.to("maia") for t in (x, w, b)]
        torch._dynamo.reset()
        assert torch.equal(torch.compile(fn)(*args).cpu(), fn(*args).cpu())

    def test_dynamic_shapes_one_kernel_serves_every_size(self):
        w, b = torch.randn(24, 40), torch.randn(24)
        fn = torch.compile(lambda x, r: linear_gelu_add(x, w.to("maia"), b.to("maia"), r),
                           dynamic=True)
        torch._dynamo.reset()
        for m in (5, 33, 130):
            x, r = torch.randn(m, 40), torch.randn(m, 24)
            torch.testing.assert_close(fn(x.to("maia"), r.to("maia")).cpu(),
                                       linear_gelu_add(x, w, b, r), atol=1e-4, rtol=1e-4)
        _, kernels = compiled_kernels(
            lambda x, r: linear_gelu_add(x, w.to("maia"), b.to("maia"), r),
            torch.randn(9, 40).to("maia"), torch.randn(9, 24).to("maia"), dynamic=True)
        assert len(kernels) == 1 and "%ks0" in kernels[0].mlir


def test_mlp_training_step_matches_cpu():
    # Backward products (x^T @ grad, grad @ w) go through templates too.
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.Linear(64, 8))
    x = torch.randn(16, 32)

    def step(model, x):
        loss = model(x).square().mean()
        loss.backward()
        return loss, [p.grad for p in model.parameters()]

    expected = step(model, x)
    model.zero_grad()
    maia_model = model.to("maia")
    torch._dynamo.reset()
    actual = torch.compile(step)(maia_model, x.to("maia"))
    torch.testing.assert_close(actual[0].cpu(), expected[0], atol=1e-4, rtol=1e-4)
    for got, want in zip(actual[1], expected[1]):
        torch.testing.assert_close(got.cpu(), want, atol=1e-4, rtol=1e-4)
