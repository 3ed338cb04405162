"""Reduction kernels: every reduction type, any dims, fused prologues and
epilogues, NaN semantics, low precision accumulation."""

import pytest
import torch
import torch.nn.functional as F
from compile_support import assert_compiled_matches, kernel_count

SHAPES_AND_DIMS = [((33, 77), -1), ((33, 77), 0), ((4, 6, 50), 1), ((4, 6, 50), (0, 2)),
                   ((1000,), 0), ((5, 1), -1)]


# torch.prod takes one dim at a time: no tuple of dims for it.
CASES = [(op, shape, dim) for op in ["sum", "mean", "amax", "amin", "prod"]
         for shape, dim in SHAPES_AND_DIMS if not (op == "prod" and isinstance(dim, tuple))]


@pytest.mark.parametrize("op,shape,dim", CASES)
def test_reductions_over_dims(op, shape, dim):
    x = torch.rand(shape) + 0.5 if op == "prod" else torch.randn(shape)
    if op == "prod":
        x = x[..., :8] if shape == (1000,) else x
    assert_compiled_matches(lambda x: getattr(torch, op)(x, dim), x)
    assert_compiled_matches(lambda x: getattr(torch, op)(x, dim, keepdim=True) * 2, x)


@pytest.mark.parametrize("shape,dim", [((33, 77), -1), ((33, 77), 0), ((4, 6, 50), 1)])
def test_arg_reductions(shape, dim):
    x = torch.randn(shape)
    assert_compiled_matches(lambda x: x.argmax(dim), x)
    assert_compiled_matches(lambda x: x.argmin(dim), x)
    assert_compiled_matches(lambda x: torch.max(x, dim), x)
    assert_compiled_matches(lambda x: torch.min(x, dim), x)


@pytest.mark.parametrize("make", [lambda x: x.t(), lambda x: x.t() * 2, lambda x: x[:, 1::2],
                                  lambda x: x.reshape(5, 3, 4).permute(2, 0, 1)],
                         ids=["transposed", "transposed_product", "strided", "permuted_3d"])
@pytest.mark.parametrize("op", ["argmax", "argmin"])
@pytest.mark.parametrize("keepdim", [False, True])
def test_full_arg_reduction_answers_the_row_major_position(make, op, keepdim):
    # Inductor reorders reduction loops into memory order: the position of a
    # full argmax over a permuted input came out in storage order.
    x = torch.randn(15, 4)
    assert_compiled_matches(lambda x: getattr(make(x), op)(keepdim=keepdim), x)


def test_arg_reductions_ties_and_nan_follow_pytorch():
    x = torch.tensor([[1.0, 3.0, 3.0, 2.0] * 9, [0.0] * 36, [1.0, float("nan"), 5.0, 7.0] * 9])
    assert_compiled_matches(lambda x: x.argmax(-1), x)
    assert_compiled_matches(lambda x: x.argmin(-1), x)
    assert_compiled_matches(lambda x: x.amax(-1), x)
    ints = torch.randint(-3, 3, (7, 40), dtype=torch.int32)
    assert_compiled_matches(lambda x: x.argmax(-1), ints)


def test_any_all_and_integer_sums():
    x = torch.randn(20, 30)
    assert_compiled_matches(lambda x: (x > 2).any(-1), x)
    assert_compiled_matches(lambda x: (x > -2).all(0), x)
    ints = torch.randint(-1000, 1000, (20, 30), dtype=torch.int32)
    assert_compiled_matches(lambda x: x.sum(-1), ints)
    assert_compiled_matches(lambda x: (x > 0).sum(0), ints)


@pytest.mark.parametrize("correction", [0, 1])
def test_var_std_welford(correction):
    x = torch.randn(17, 129) * 3 + 10
    assert_compiled_matches(lambda x: torch.var_mean(x, -1, correction=correction), x)
    assert_compiled_matches(lambda x: torch.std(x, 0, correction=correction), x)


def test_float64_welford_accumulates_in_float64():
    # An offset of 1e4 leaves a float32 accumulator about 1e-3 of absolute
    # error in the variance: far outside float64's tolerances.
    x = torch.randn(17, 129, dtype=torch.float64) * 3 + 1e4
    w, b = torch.randn(129, dtype=torch.float64), torch.randn(129, dtype=torch.float64)
    tolerances = {"atol": 1e-9, "rtol": 1e-9}
    assert_compiled_matches(lambda x: torch.var_mean(x, -1), x, **tolerances)
    assert_compiled_matches(lambda x: torch.std(x, 0), x, **tolerances)
    assert_compiled_matches(lambda x, w, b: F.layer_norm(x, (129,), w, b), x, w, b, **tolerances)
    assert_compiled_matches(lambda x: F.group_norm(x.view(1, 17, 129), 1), x, **tolerances)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_normalizations(dtype):
    x = torch.randn(12, 96).to(dtype)
    w, b = torch.randn(96).to(dtype), torch.randn(96).to(dtype)
    assert_compiled_matches(lambda x: torch.softmax(x, -1), x, dtype=dtype)
    assert_compiled_matches(lambda x: torch.log_softmax(x, 0), x, dtype=dtype)
    assert_compiled_matches(lambda x, w, b: F.layer_norm(x, (96,), w, b), x, w, b, dtype=dtype)


def test_softmax_is_one_kernel_with_its_prologue():
    def fn(x, bias):
        return torch.softmax(x * 0.125 + bias, -1)

    x, bias = torch.randn(8, 300), torch.randn(300)
    assert_compiled_matches(fn, x, bias)
    assert kernel_count(fn, x, bias) == 1


def test_cross_entropy_and_nll():
    logits, target = torch.randn(16, 10), torch.randint(0, 10, (16,))
    assert_compiled_matches(lambda x, t: F.cross_entropy(x, t), logits, target)
    assert_compiled_matches(lambda x, t: F.cross_entropy(x, t, label_smoothing=0.1), logits,
                            target)
    assert_compiled_matches(lambda x, t: F.nll_loss(x.log_softmax(-1), t, reduction="sum"),
                            logits, target)


def test_bf16_sum_accumulates_in_f32():
    x = torch.full((4, 4096), 1.0 / 3).to(torch.bfloat16)
    assert_compiled_matches(lambda x: x.sum(-1), x, dtype=torch.bfloat16)


def test_large_reduction_over_many_programs():
    assert_compiled_matches(lambda x: x.sum(-1), torch.randn(512, 2049), atol=1e-3)
    assert_compiled_matches(lambda x: x.sum(), torch.randn(1_000_003), atol=1e-2, rtol=1e-4)


def test_max_pool3d_with_indices_under_dynamic_shapes():
    # Window sizes that divide the dynamic extents (s//3): Inductor's
    # memory-coalescing analysis for Triton tiling cannot split these ranges
    # and asserted; maia has no tiling and does not run it.
    def fn(x):
        return F.max_pool3d(x, 3, return_indices=True)

    assert_compiled_matches(fn, torch.randn(1, 2, 3, 6, 5), dynamic=True)
    assert_compiled_matches(fn, torch.randn(2, 3, 7, 6, 9), dynamic=True)
