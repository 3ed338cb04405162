"""Large eager outputs are written with streaming (non-temporal) stores
(issue 18: runtime/kernels/eager/streaming_store.h for elementwise and cast
kernels, the driver's streaming_copy.cpp for copies). Those write an
aligned middle block by block and the unaligned head and the tail with
ordinary stores: results must equal the CPU's bit for bit at every output
alignment and tail length, for every element size, and nothing next to the
output may be written."""

import pytest
import torch

STREAMING_BYTES = 8 << 20  # kStreamingStoreMinBytes / kStreamingCopyMinBytes
SENTINEL = 7


def elements_for(dtype, extra=13):
    """Just over the streaming threshold, with a tail shorter than a block."""
    size = torch.empty((), dtype=dtype).element_size()
    return STREAMING_BYTES // size + extra


def sample(n, dtype, seed):
    torch.manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(n) > 0.5
    if dtype.is_complex or dtype.is_floating_point:
        return torch.randn(n, dtype=dtype)
    return torch.randint(-100, 100, (n,), dtype=dtype)


def padded_out(n, dtype, offset):
    """A maia buffer filled with SENTINEL, and its view of n elements at
    offset: the kernel writes the view, the rest must stay SENTINEL."""
    buffer = torch.full((n + 2 * 16,), SENTINEL, dtype=dtype, device="maia")
    return buffer, buffer[offset:offset + n]


def check_untouched(buffer, offset, n):
    host = buffer.cpu()
    expected = torch.full((1,), SENTINEL, dtype=buffer.dtype)
    assert torch.equal(host[:offset], expected.expand(offset))
    rest = host[offset + n:]
    assert torch.equal(rest, expected.expand(rest.numel()))


class TestElementwise:
    @pytest.mark.parametrize("offset", [0, 1, 5, 9])
    @pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16,
                                       torch.int8, torch.int64, torch.complex64])
    def test_add_into_any_alignment(self, dtype, offset):
        n = elements_for(dtype)
        a, b = sample(n, dtype, 0), sample(n, dtype, 1)
        buffer, out = padded_out(n, dtype, offset)
        torch.add(a.to("maia"), b.to("maia"), out=out)
        assert torch.equal(out.cpu(), a + b)
        check_untouched(buffer, offset, n)

    @pytest.mark.parametrize("offset", [0, 3])
    def test_bool_output_of_a_comparison(self, offset):
        n = elements_for(torch.bool)
        a, b = sample(n, torch.float16, 0), sample(n, torch.float16, 1)
        buffer, out = padded_out(n, torch.bool, offset)
        torch.gt(a.to("maia"), b.to("maia"), out=out)
        assert torch.equal(out.cpu(), a > b)
        check_untouched(buffer, offset, n)

    def test_unary_and_where(self):
        n = elements_for(torch.float32, extra=1001)
        a, b = sample(n, torch.float32, 0), sample(n, torch.float32, 1)
        ad, bd = a.to("maia"), b.to("maia")
        assert torch.equal(torch.neg(ad).cpu(), torch.neg(a))
        assert torch.equal(torch.where(ad > bd, ad, bd).cpu(), torch.where(a > b, a, b))

    def test_in_place_reads_before_it_overwrites(self):
        n = elements_for(torch.float32)
        a, b = sample(n, torch.float32, 0), sample(n, torch.float32, 1)
        ad = a.to("maia")
        ad.mul_(b.to("maia"))
        assert torch.equal(ad.cpu(), a * b)

    def test_broadcast_input(self):
        # Rows of 1031 elements: every run has its own head and tail.
        a = sample(2048 * 1031, torch.float32, 0).view(2048, 1031)
        b = sample(1031, torch.float32, 1)
        assert torch.equal((a.to("maia") + b.to("maia")).cpu(), a + b)


class TestCopies:
    @pytest.mark.parametrize("offset", [0, 1, 3])
    def test_cast_into_any_alignment(self, offset):
        n = elements_for(torch.float16)
        a = sample(n, torch.float32, 0)
        buffer, out = padded_out(n, torch.float16, offset)
        out.copy_(a.to("maia"))
        assert torch.equal(out.cpu(), a.half())
        check_untouched(buffer, offset, n)

    @pytest.mark.parametrize("src_offset,dst_offset", [(0, 0), (0, 1), (5, 3), (7, 0)])
    def test_device_copy_at_any_alignment(self, src_offset, dst_offset):
        n = elements_for(torch.float32)
        a = sample(n, torch.float32, 0)
        buffer, out = padded_out(n - src_offset, torch.float32, dst_offset)
        out.copy_(a.to("maia")[src_offset:])
        assert torch.equal(out.cpu(), a[src_offset:])
        check_untouched(buffer, dst_offset, n - src_offset)

    def test_round_trip_and_clone(self):
        n = elements_for(torch.int32, extra=4099)
        a = sample(n, torch.int32, 0)
        ad = a.to("maia")
        assert torch.equal(ad.clone().cpu(), a)
        assert torch.equal(ad.cpu(), a)


class TestFills:
    @pytest.mark.parametrize("dtype", [torch.float32, torch.int8, torch.complex128])
    @pytest.mark.parametrize("offset", [0, 1, 3])
    def test_fill_and_zero_at_any_alignment(self, dtype, offset):
        n = elements_for(dtype)
        buffer, out = padded_out(n, dtype, offset)
        out.fill_(3)
        assert torch.equal(out.cpu(), torch.full((n,), 3, dtype=dtype))
        check_untouched(buffer, offset, n)
        out.zero_()
        assert not out.cpu().any()
        check_untouched(buffer, offset, n)
