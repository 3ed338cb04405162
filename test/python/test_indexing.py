"""Advanced indexing on maia (runtime/torch/csrc/ops/Indexing.cpp): aten::index,
index_put_ (assign and accumulate), nonzero; compared with the CPU, with no host
fallback. Out-of-range indices are covered in test_opinfo_nn.py (sticky errors)."""

import pytest
import torch

from opinfo_support import forbid_fallback

DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.int64, torch.bool]
NATIVE = ("aten::index", "aten::_index_put_impl_", "aten::nonzero", "aten::nonzero_static")


def sample(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g).to(dtype)
    return torch.randint(-100, 100, shape, generator=g).to(dtype)


def check_native(before):
    grew = {k: v for k, v in torch.maia.fallback_counts().items()
            if v > before.get(k, 0) and k.split(".")[0] in NATIVE}
    assert not grew, f"fell back to the host: {grew}"


def long(values):
    return torch.tensor(values, dtype=torch.long)


# (self shape, index as a function of CPU tensors) — integer index tensors,
# broadcasting, None/slices between and around them, negative indices.
INDEX_CASES = {
    "one_dim": ((7,), lambda: (long([0, 6, -1, 3, 3]),)),
    "rows": ((5, 4), lambda: (long([4, 0, -2]),)),
    "columns": ((5, 4), lambda: (slice(None), long([3, 0, 1, 1]))),
    "two_adjacent": ((5, 4, 3), lambda: (long([0, 4, 2]), long([1, 3, 0]))),
    "broadcast": ((5, 4, 3), lambda: (long([[0], [4], [2]]), long([1, 3]))),
    "middle": ((3, 5, 4, 2), lambda: (slice(None), long([[1, 4], [0, 2]]), long([3, 0]))),
    "non_adjacent": ((5, 4, 3), lambda: (long([0, 4]), slice(None), long([2, -3]))),
    "scalar_index": ((5, 4), lambda: (torch.tensor(3), slice(1, 3))),
    "int32_index": ((6, 3), lambda: (torch.tensor([5, 0, 2], dtype=torch.int32),)),
    "with_none": ((5, 4), lambda: (None, long([1, 2]), slice(None))),
    "list": ((5, 4, 3), lambda: ([0, 3, 3], [1, 1, 0])),
    "ellipsis": ((3, 4, 5), lambda: (Ellipsis, long([4, 0]))),
}


def to_device(index):
    if isinstance(index, torch.Tensor):
        return index.to("maia")
    if isinstance(index, tuple):
        return tuple(to_device(i) for i in index)
    return index


class TestIndex:
    @pytest.mark.parametrize("dtype", DTYPES, ids=str)
    @pytest.mark.parametrize("case", INDEX_CASES)
    def test_matches_cpu(self, case, dtype):
        shape, make = INDEX_CASES[case]
        x, index = sample(shape, dtype), make()
        before = torch.maia.fallback_counts()
        actual = x.to("maia")[to_device(index)]
        check_native(before)
        torch.testing.assert_close(actual.cpu(), x[index])
        # Index tensors may stay on the host (moved to the device, not a fallback).
        torch.testing.assert_close(x.to("maia")[index].cpu(), x[index])

    def test_non_contiguous_self(self):
        x = sample((6, 8, 5), torch.float32)
        index = (long([0, 2, -1]), slice(None), long([4, 1, 0]))
        for view in (lambda t: t.transpose(0, 2), lambda t: t[::2, 1:],
                     lambda t: t.permute(1, 2, 0)):
            expected = view(x)[index]
            torch.testing.assert_close(view(x.to("maia"))[to_device(index)].cpu(), expected)

    def test_empty(self):
        x = sample((5, 4), torch.float32)
        empty = torch.tensor([], dtype=torch.long)
        torch.testing.assert_close(x.to("maia")[empty.to("maia")].cpu(), x[empty])
        torch.testing.assert_close(x.to("maia")[:, empty.to("maia")].cpu(), x[:, empty])
        z = torch.zeros(0, 3)
        torch.testing.assert_close(z.to("maia")[:, long([2, 0]).to("maia")].cpu(),
                                   z[:, long([2, 0])])

    @pytest.mark.parametrize("dtype", DTYPES, ids=str)
    def test_bool_mask(self, dtype):
        x = sample((6, 5, 4), dtype)
        mask = sample((6, 5), torch.bool, seed=1)
        before = torch.maia.fallback_counts()
        actual = x.to("maia")[mask.to("maia")]
        check_native(before)
        torch.testing.assert_close(actual.cpu(), x[mask])
        torch.testing.assert_close(x.to("maia")[:, mask[0].to("maia")].cpu(), x[:, mask[0]])
        torch.testing.assert_close(x.to("maia")[mask].cpu(), x[mask])  # a host mask

    def test_large_multi_program(self):
        x = sample((300, 257), torch.float32)
        rows = torch.randint(-300, 300, (5000,), generator=torch.Generator().manual_seed(2))
        torch.testing.assert_close(x.to("maia")[rows.to("maia")].cpu(), x[rows])
        cols = rows.remainder(257)
        torch.testing.assert_close(x.to("maia")[:, cols.to("maia")].cpu(), x[:, cols])

    def test_out_variant(self):
        x = sample((5, 4), torch.float32)
        out = torch.empty(0, device="maia")
        torch.ops.aten.index.Tensor_out(x.to("maia"), [long([1, 3]).to("maia")], out=out)
        torch.testing.assert_close(out.cpu(), x[long([1, 3])])

    def test_bad_indices_are_refused(self):
        x = torch.zeros(3, 4, device="maia")
        with pytest.raises(IndexError, match="too many indices"):
            x[long([0]), long([0]), long([0])]
        with pytest.raises(IndexError, match="tensors used as indices must be long, int"):
            x[torch.tensor([0.5], device="maia")]
        with pytest.raises(IndexError, match="shape mismatch"):
            x[long([0, 1]).to("maia"), long([0, 1, 2]).to("maia")]
        with pytest.raises(IndexError, match="The shape of the mask"):
            x[torch.ones(4, dtype=torch.bool, device="maia")]


class TestIndexPut:
    @pytest.mark.parametrize("accumulate", [False, True])
    @pytest.mark.parametrize("dtype", DTYPES, ids=str)
    def test_matches_cpu(self, dtype, accumulate):
        x = sample((6, 5, 4), dtype)
        cases = [
            ((long([0, 5, -1, 2]),), sample((4, 5, 4), dtype, seed=3)),
            ((None, long([4, 0])), sample((6, 2, 4), dtype, seed=4)),  # None: all of dim 0
            ((long([1, 2]), None, long([3, -4])), sample((2, 5), dtype, seed=5)),
            ((long([[0], [3]]), long([1, 4])), sample((4,), dtype, seed=6)),  # broadcast value
        ]
        # The aten operator: Tensor.index_put_ takes no None entries.
        put = torch.ops.aten.index_put_
        for index, values in cases:
            expected = put(x.clone(), list(index), values, accumulate)
            actual = x.to("maia")
            before = torch.maia.fallback_counts()
            put(actual, list(to_device(index)), values.to("maia"), accumulate)
            check_native(before)
            torch.testing.assert_close(actual.cpu(), expected)

    @pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.float16,
                                       torch.bool], ids=str)
    def test_duplicates_accumulate(self, dtype):
        g = torch.Generator().manual_seed(7)
        x = sample((50, 70), dtype)
        rows = torch.randint(-50, 50, (4000,), generator=g)
        values = sample((4000, 70), dtype, seed=8)
        if dtype == torch.float16:  # small values: the sums stay exact in float16
            values = (values * 4).round() / 4
            x = torch.zeros_like(x)
        expected = x.clone().index_put_((rows,), values, accumulate=True)
        actual = x.to("maia").index_put_((rows.to("maia"),), values.to("maia"),
                                         accumulate=True)
        torch.testing.assert_close(actual.cpu(), expected)

    def test_duplicates_assign_last_wins(self):
        x = torch.zeros(4)
        index, values = long([1, 1, 1, 2]), torch.tensor([1.0, 2.0, 3.0, 4.0])
        actual = x.to("maia").index_put_((index.to("maia"),), values.to("maia"))
        torch.testing.assert_close(actual.cpu(), torch.tensor([0.0, 3.0, 4.0, 0.0]))

    def test_non_contiguous_self(self):
        x = sample((6, 8), torch.float32)
        index, values = (long([0, 3, 7]),), sample((3, 6), torch.float32, seed=1)
        expected = x.clone()
        expected.t().index_put_(index, values, accumulate=True)
        actual = x.to("maia")
        actual.t().index_put_(to_device(index), values.to("maia"), accumulate=True)
        torch.testing.assert_close(actual.cpu(), expected)

    def test_masks(self):
        x = sample((5, 6), torch.float32)
        mask = sample((5, 6), torch.bool, seed=2)
        expected, actual = x.clone(), x.to("maia")
        expected[mask] = 2.5  # a scalar value: a masked_fill
        actual[mask.to("maia")] = 2.5
        torch.testing.assert_close(actual.cpu(), expected)
        values = torch.arange(float(mask.sum()))
        expected[mask] = values
        actual[mask.to("maia")] = values.to("maia")
        torch.testing.assert_close(actual.cpu(), expected)

    def test_empty(self):
        x = sample((5, 4), torch.float32)
        empty = torch.tensor([], dtype=torch.long)
        actual = x.to("maia").index_put_((empty.to("maia"),), torch.zeros(0, 4, device="maia"),
                                         accumulate=True)
        torch.testing.assert_close(actual.cpu(), x)

    def test_bad_values_are_refused(self):
        x = torch.zeros(3, 4, device="maia")
        index = (long([0, 1]).to("maia"),)
        with pytest.raises(RuntimeError, match="dtypes match"):
            x.index_put_(index, torch.ones(2, 4, dtype=torch.float64, device="maia"))
        with pytest.raises(RuntimeError, match="shape mismatch"):
            x.index_put_(index, torch.ones(3, 4, device="maia"))

    def test_index_backward_is_native(self):
        """x[idx] backward is index_put_ with accumulate (duplicates sum)."""
        x = torch.randn(8, 5, requires_grad=True)
        index = long([0, 7, 7, -1, 3])
        grad = torch.randn(5, 5)
        x[index].backward(grad)
        xm = x.detach().to("maia").requires_grad_()
        before = torch.maia.fallback_counts()
        xm[index.to("maia")].backward(grad.to("maia"))
        forbid_fallback(before, "x[index].backward()")
        torch.testing.assert_close(xm.grad.cpu(), x.grad)


class TestNonzero:
    @pytest.mark.parametrize("dtype", DTYPES + [torch.float64, torch.uint8], ids=str)
    def test_matches_cpu(self, dtype):
        for shape in [(), (1,), (7,), (5, 6), (3, 4, 5), (2, 1, 3, 1, 2, 2, 1, 3)]:
            x = sample(shape, dtype)
            before = torch.maia.fallback_counts()
            actual = torch.nonzero(x.to("maia"))
            check_native(before)
            torch.testing.assert_close(actual.cpu(), torch.nonzero(x))

    @pytest.mark.parametrize("size", [0, 1, 4, 9, 40])
    def test_static_size_truncates_or_fills(self, size):
        # Column-major like CUDA: the strides fake tensors give compiled graphs.
        for shape in [(), (7,), (5, 6), (3, 4, 5)]:
            x = sample(shape, torch.float32)
            before = torch.maia.fallback_counts()
            actual = torch.nonzero_static(x.to("maia"), size=size, fill_value=-5)
            check_native(before)
            assert actual.stride() == (1, max(size, 1)) or actual.numel() == 0
            torch.testing.assert_close(actual.cpu(),
                                       torch.nonzero_static(x, size=size, fill_value=-5))
        assert torch.nonzero(torch.ones(3, 4, device="maia")).stride() == (1, 12)

    def test_static_size_compiles(self):
        fn = torch.compile(lambda x: torch.nonzero_static(x > 0, size=6) * 2)
        x = torch.randn(4, 5)
        torch.testing.assert_close(fn(x.to("maia")).cpu(), torch.nonzero_static(x > 0, size=6) * 2)

    def test_special_values(self):
        x = torch.tensor([0.0, -0.0, float("nan"), float("inf"), 1e-30])
        torch.testing.assert_close(torch.nonzero(x.to("maia")).cpu(), torch.nonzero(x))

    def test_large_non_contiguous_after_async_work(self):
        """The counts are read after the kernels queued before them (a sync on the stream)."""
        a = torch.randn(700, 500)
        b = torch.randn(700, 500)
        x = (a.to("maia") + b.to("maia")).t()
        expected = torch.nonzero((a + b).t() > 0.5)
        torch.testing.assert_close(torch.nonzero(x > 0.5).cpu(), expected)
        torch.testing.assert_close(torch.argwhere(x > 0.5).cpu(), expected)
        empty = torch.nonzero(torch.zeros(3, 0, device="maia"))
        assert empty.shape == (0, 2) and empty.device.type == "maia"
        none = torch.nonzero(torch.zeros(30, 40, device="maia"))
        assert none.shape == (0, 2)
