"""segment_reduce (forward and backward), histogram/histogramdd and
hash_tensor on the device: ATen's operator functions reach maia's kernels
through the PrivateUse1 entries of ATen's dispatch stubs (segment reduce,
histogram) or the reduce binary (hash_tensor's xor). Every case runs with
no host fallback and matches the CPU."""

import pytest
import torch

from native_check import assert_native_matches

FLOATS = [torch.float32, torch.float64, torch.bfloat16, torch.float16]
REDUCTIONS = ["sum", "mean", "max", "min", "prod"]


def tolerance(dtype):
    """The dtype's tolerance; NaN where the CPU has NaN (an empty segment's mean)."""
    if dtype in (torch.bfloat16, torch.float16):
        return {"atol": 1e-2, "rtol": 1.6e-2, "equal_nan": True}
    return {"equal_nan": True}


# ------------------------------------------------------------ segment_reduce

def segment_data(dtype, shape=(7, 3)):
    g = torch.Generator().manual_seed(0)
    return (torch.randn(shape, generator=g, dtype=torch.float64) * 2).to(dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("reduce", REDUCTIONS)
def test_segment_reduce_lengths_and_offsets(reduce, dtype):
    data = segment_data(dtype)
    lengths = torch.tensor([2, 0, 4, 1])  # an empty segment
    offsets = torch.tensor([0, 2, 2, 6, 7])
    assert_native_matches(lambda d, l: torch.segment_reduce(d, reduce, lengths=l), data, lengths,
                          **tolerance(dtype))
    assert_native_matches(lambda d, o: torch.segment_reduce(d, reduce, offsets=o), data, offsets,
                          **tolerance(dtype))
    assert_native_matches(lambda d, l: torch.segment_reduce(d, reduce, lengths=l, initial=0.5),
                          data, lengths, **tolerance(dtype))


@pytest.mark.parametrize("reduce", REDUCTIONS)
def test_segment_reduce_batched_axis_and_offsets_not_from_zero(reduce):
    data = segment_data(torch.float64, (2, 6, 3))
    lengths = torch.tensor([[1, 3, 2], [0, 4, 2]])
    assert_native_matches(lambda d, l: torch.segment_reduce(d, reduce, lengths=l, axis=1), data,
                          lengths, equal_nan=True)
    offsets = torch.tensor([[1, 3, 5], [0, 0, 4]])  # segments need not cover the data
    assert_native_matches(lambda d, o: torch.segment_reduce(d, reduce, offsets=o, axis=1,
                                                             unsafe=True), data, offsets,
                          equal_nan=True)


def test_segment_reduce_nan_propagates_in_max_and_min():
    data = torch.tensor([1.0, float("nan"), 3.0, 2.0, -1.0])
    lengths = torch.tensor([3, 2])
    for reduce in ("max", "min"):
        out = torch.segment_reduce(data.to("maia"), reduce, lengths=lengths.to("maia")).cpu()
        assert out[0].isnan() and not out[1].isnan()


@pytest.mark.parametrize("reduce", REDUCTIONS)
def test_segment_reduce_backward(reduce):
    data = segment_data(torch.float64)
    data[3, 0] = 0.0  # prod's gradient at a zero multiplies out the others
    data[4, 1] = data[5, 1]  # max/min ties share the gradient
    lengths = torch.tensor([2, 0, 4, 1])

    def grad_of(d, l):
        d = d.detach().requires_grad_()
        out = torch.segment_reduce(d, reduce, lengths=l, initial=1.5)
        (out * torch.arange(1.0, out.numel() + 1, dtype=d.dtype, device=d.device).view_as(out)
         ).sum().backward()
        return d.grad

    assert_native_matches(grad_of, data, lengths)


def test_segment_reduce_errors_match_the_cpu():
    data = torch.randn(5).to("maia")
    with pytest.raises(RuntimeError, match="lengths contains negative value"):
        torch.segment_reduce(data, "sum", lengths=torch.tensor([6, -1]).to("maia"))
    with pytest.raises(RuntimeError, match="to sum to data.size"):
        torch.segment_reduce(data, "sum", lengths=torch.tensor([2, 2]).to("maia"))
    with pytest.raises(RuntimeError, match="reduce argument must be"):
        torch.segment_reduce(data, "median", lengths=torch.tensor([5]).to("maia"))


# ------------------------------------------------------------ histogram

@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_histogram_bin_counts_ranges_weights_density(dtype):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(1000, generator=g, dtype=dtype)
    w = torch.rand(1000, generator=g, dtype=dtype)
    assert_native_matches(lambda t: torch.histogram(t, bins=17), x)
    assert_native_matches(lambda t: torch.histogram(t, bins=10, range=(-1.0, 1.5)), x)
    assert_native_matches(lambda t, u: torch.histogram(t, bins=8, weight=u, density=True), x, w)
    edges = torch.tensor([-3.0, -1.0, -0.5, 0.0, 0.1, 2.0], dtype=dtype)  # uneven: binary search
    assert_native_matches(lambda t, e: torch.histogram(t, bins=e), x, edges)
    assert_native_matches(lambda t, e, u: torch.histogram(t, bins=e, weight=u, density=True),
                          x, edges, w)


def test_histogram_edges_are_exact_at_the_boundaries():
    # Values on linspace edges: the local search must agree with the edges.
    x = torch.linspace(0, 1, 101, dtype=torch.float32)
    assert_native_matches(lambda t: torch.histogram(t, bins=7), x)
    # The edges themselves: interpolation alone puts 0.2 (edge 1) in bin 0.
    x = torch.linspace(0.1, 0.7, 7, dtype=torch.float32).repeat(3)
    assert_native_matches(lambda t: torch.histogram(t, bins=6, range=(0.1, 0.7)), x)
    x = torch.tensor([0.0, 0.3, 0.3, 1.0, float("nan"), 2.0])  # NaN and out-of-range skipped
    assert_native_matches(lambda t: torch.histogram(t, bins=3, range=(0.0, 1.0)), x)


def flat_histogramdd(*args, **kwargs):
    hist, edges = torch.histogramdd(*args, **kwargs)
    return (hist, *edges)


def test_histogramdd_counts_and_tensor_edges():
    g = torch.Generator().manual_seed(2)
    x = torch.randn(500, 3, generator=g)
    w = torch.rand(500, generator=g)
    assert_native_matches(lambda t: flat_histogramdd(t, bins=[3, 4, 5]), x)
    assert_native_matches(lambda t, u: flat_histogramdd(t, bins=[4, 2, 3], weight=u,
                                                        density=True), x, w)
    assert_native_matches(lambda t: flat_histogramdd(t, bins=[2, 3], range=[-1.0, 1.0, 0.0, 2.0]),
                          x[:, :2])
    edges = [torch.tensor([-2.0, 0.0, 2.0]), torch.tensor([-1.0, -0.2, 0.5, 3.0]),
             torch.tensor([-5.0, 5.0])]
    assert_native_matches(lambda t, a, b, c: flat_histogramdd(t, bins=[a, b, c]), x, *edges)


def test_histogram_of_an_empty_input():
    assert_native_matches(lambda t: torch.histogram(t, bins=4), torch.empty(0))


# ------------------------------------------------------------ hash_tensor

@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.int64,
                                   torch.int8, torch.uint8, torch.bool, torch.int32])
def test_hash_tensor_matches_the_cpu_bit_for_bit(dtype):
    g = torch.Generator().manual_seed(3)
    x = (torch.randn(6, 35, 4, generator=g) * 50).to(dtype)
    for kwargs in ({}, {"dim": 1}, {"dim": [0, 2], "keepdim": True}):
        expected = torch.hash_tensor(x, **kwargs)
        torch.maia.reset_fallback_counts()
        actual = torch.hash_tensor(x.to("maia"), **kwargs)
        assert torch.maia.fallback_counts() == {}
        assert actual.dtype == torch.uint64 and actual.shape == expected.shape
        assert torch.equal(actual.cpu(), expected)
    strided = x.transpose(0, 2)
    assert torch.equal(torch.hash_tensor(strided.to("maia")).cpu(), torch.hash_tensor(strided))


def test_hash_tensor_of_a_long_line_splits_over_the_cores():
    x = torch.randint(-2**62, 2**62, (1 << 20,))
    assert torch.equal(torch.hash_tensor(x.to("maia")).cpu(), torch.hash_tensor(x))


def test_hash_tensor_errors_match_the_cpu():
    with pytest.raises(RuntimeError, match="Expected reduction dim"):
        torch.hash_tensor(torch.empty(0, device="maia"))
    with pytest.raises(RuntimeError, match="not implemented for 'ComplexFloat'"):
        torch.hash_tensor(torch.ones(2, dtype=torch.complex64, device="maia"))
