"""embedding_bag and embedding_renorm_ (max_norm) on the device
(runtime/kernels/nn/embedding.h) against the CPU: every mode, padding_idx,
per_sample_weights, include_last_offset, int32/int64 indices, empty bags,
NaN under max, the auxiliary outputs exactly (the backward consumes them),
gradients of weight and per_sample_weights, the CPU's errors, and bad
offsets as a sticky device error."""

import itertools

import pytest
import torch
import torch.nn.functional as F
from opinfo_support import LOW_PRECISION_TOLERANCES
from sticky_support import expect_sticky_error

MODES = ["sum", "mean", "max"]
DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


def on_maia(value):
    return value.to("maia") if isinstance(value, torch.Tensor) else value


def no_fallback(fn):
    torch.maia.reset_fallback_counts()
    result = fn()
    assert torch.maia.fallback_counts() == {}
    return result


def bag_inputs(generator, include_last_offset):
    """13 indices into 10 rows in 4 bags (bag 1 empty); a NaN in row 3."""
    indices = torch.randint(0, 10, (13,), generator=generator)
    indices[5] = 3
    offsets = torch.tensor([0, 3, 3, 7] + ([13] if include_last_offset else []))
    return indices, offsets


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", range(3), ids=MODES)
def test_forward_and_auxiliary_outputs_match_the_cpu(dtype, mode):
    g = torch.Generator().manual_seed(mode)
    weight = torch.randn(10, 5, generator=g).to(dtype)
    weight[3, 1] = float("nan")
    tol = LOW_PRECISION_TOLERANCES.get(dtype, {})
    for padding_idx, last, index_type, weighted in itertools.product(
            [-1, 2], [False, True], [torch.int64, torch.int32], [False, True]):
        if weighted and mode != 0:
            continue
        indices, offsets = bag_inputs(g, last)
        sample_weights = torch.randn(13, generator=g).to(dtype) if weighted else None
        args = (indices.to(index_type), offsets.to(index_type), False, mode, False,
                sample_weights, last, padding_idx)
        expected = torch.ops.aten._embedding_bag(weight, *args)
        actual = no_fallback(lambda: torch.ops.aten._embedding_bag(
            weight.to("maia"), *[on_maia(a) for a in args]))
        torch.testing.assert_close(actual[0].cpu(), expected[0], equal_nan=True, **tol)
        for mine, cpu in zip(actual[1:], expected[1:]):  # offset2bag, bag_size, max_indices
            assert mine.dtype == cpu.dtype and mine.shape == cpu.shape
            assert torch.equal(mine.cpu(), cpu)
        forward_only = torch.ops.aten._embedding_bag_forward_only(
            weight.to("maia"), *[on_maia(a) for a in args])
        torch.testing.assert_close(forward_only[0].cpu(), expected[0], equal_nan=True, **tol)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", MODES)
def test_gradients_match_the_cpu(dtype, mode):
    g = torch.Generator().manual_seed(7)
    tol = LOW_PRECISION_TOLERANCES.get(dtype, {})
    for padding_idx, last in itertools.product([None, 2], [False, True]):
        indices, offsets = bag_inputs(g, last)
        weight = torch.randn(10, 5, generator=g).to(dtype).requires_grad_()
        maia_weight = weight.detach().to("maia").requires_grad_()
        sample = torch.randn(13, generator=g).to(dtype) if mode == "sum" else None
        cpu_sample = sample.clone().requires_grad_() if sample is not None else None
        maia_sample = sample.to("maia").requires_grad_() if sample is not None else None
        kwargs = dict(mode=mode, include_last_offset=last, padding_idx=padding_idx)
        expected = F.embedding_bag(indices, weight, offsets, per_sample_weights=cpu_sample,
                                   **kwargs)
        actual = F.embedding_bag(indices.to("maia"), maia_weight, offsets.to("maia"),
                                 per_sample_weights=maia_sample, **kwargs)
        grad = torch.randn(expected.shape, generator=g).to(dtype)
        expected.backward(grad)
        no_fallback(lambda: actual.backward(grad.to("maia")))
        torch.testing.assert_close(maia_weight.grad.cpu(), weight.grad, **tol)
        if sample is not None:
            torch.testing.assert_close(maia_sample.grad.cpu(), cpu_sample.grad, **tol)


def test_two_dimensional_input_and_max_norm():
    g = torch.Generator().manual_seed(3)
    indices = torch.randint(0, 8, (4, 3), generator=g)
    for norm_type in [2.0, 1.0, 3.0, float("inf")]:
        weight = torch.randn(8, 6, generator=g) * 3
        maia_weight = weight.to("maia")
        expected = F.embedding_bag(indices, weight, mode="mean", max_norm=1.5,
                                   norm_type=norm_type)
        actual = no_fallback(lambda: F.embedding_bag(indices.to("maia"), maia_weight,
                                                     mode="mean", max_norm=1.5,
                                                     norm_type=norm_type))
        torch.testing.assert_close(actual.cpu(), expected)
        torch.testing.assert_close(maia_weight.cpu(), weight)  # renormed in place, as the CPU


@pytest.mark.parametrize("dtype", DTYPES)
def test_embedding_renorm_renorms_each_named_row_once(dtype):
    g = torch.Generator().manual_seed(5)
    for norm_type in [2.0, 1.0, 0.0, float("inf")]:
        weight = (torch.randn(8, 5, generator=g) * 3).to(dtype)
        indices = torch.tensor([1, 3, 1, 7, 0, 3])  # duplicates: one scaling each
        maia_weight = weight.to("maia")
        no_fallback(lambda: torch.embedding_renorm_(maia_weight, indices.to("maia"), 1.5,
                                                    norm_type))
        torch.embedding_renorm_(weight, indices, 1.5, norm_type)
        torch.testing.assert_close(maia_weight.cpu(), weight,
                                   **LOW_PRECISION_TOLERANCES.get(dtype, {}))


def test_errors_are_the_cpus():
    weight = torch.randn(5, 3, device="maia")
    indices, offsets = torch.tensor([0, 1, 2], device="maia"), torch.tensor([0, 2], device="maia")
    with pytest.raises(RuntimeError, match="per_sample_weights only supported with mode='sum'"):
        torch.ops.aten._embedding_bag(weight, indices, offsets, False, 2, False,
                                      torch.ones(3, device="maia"), False, -1)
    with pytest.raises(RuntimeError, match="to have one of the following scalar types"):
        torch.ops.aten._embedding_bag(weight.long(), indices, offsets, False, 0, False, None,
                                      False, -1)
    with pytest.raises(RuntimeError, match="to have one of the following scalar types"):
        torch.ops.aten._embedding_bag(weight, indices.float(), offsets, False, 0, False, None,
                                      False, -1)
    trainable = weight.clone().requires_grad_()
    with pytest.raises(RuntimeError, match=r"sparse gradients \(sparse=True\) are not supported"):
        F.embedding_bag(indices, trainable, offsets, sparse=True).sum().backward()


def test_offsets_not_starting_at_0_are_a_sticky_error():
    torch.maia.synchronize(0)
    weight = torch.randn(5, 3, device="maia")
    indices = torch.tensor([0, 1, 2], device="maia")
    offsets = torch.tensor([1, 2], device="maia")
    with expect_sticky_error("embedding_bag_f32"):
        torch.ops.aten._embedding_bag(weight, indices, offsets, False, 0, False, None, False, -1)
    torch.testing.assert_close(
        F.embedding_bag(indices, weight, torch.tensor([0, 2], device="maia")).cpu(),
        F.embedding_bag(indices.cpu(), weight.cpu(), torch.tensor([0, 2])))
