"""Copies between maia and the host and across devices; fill_; item()."""

import pytest
import torch
from stream_support import keep_busy

DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int64,
          torch.int32, torch.int8, torch.uint8, torch.bool]


def reference(dtype, shape=(5, 7)):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(shape, generator=g) * 10
    return x.to(dtype)


PAIRS = [("maia", "maia"), ("cpu", "maia"), ("maia", "cpu"), ("maia:1", "maia")]


class TestCopy:
    @pytest.mark.parametrize("src_device,dst_device", PAIRS)
    @pytest.mark.parametrize("src_shape,dst_shape", [((1,), (3,)), ((), (2, 3)), ((3,), (2, 3)),
                                                     ((1, 3), (4, 3))])
    def test_copy_broadcasts_the_source(self, src_device, dst_device, src_shape, dst_shape):
        # ATen passes copies involving maia to _copy_from before broadcasting.
        src = reference(torch.float32, src_shape)
        dst = torch.zeros(dst_shape, dtype=torch.float16, device=dst_device)
        dst.copy_(src.to(src_device))
        assert torch.equal(dst.cpu(), src.to(torch.float16).expand(dst_shape))

    @pytest.mark.parametrize("src_device,dst_device", PAIRS[:3])
    def test_copy_that_cannot_broadcast_names_the_shapes(self, src_device, dst_device):
        with pytest.raises(RuntimeError, match=r"output with shape \[\] doesn't match the "
                                               r"broadcast shape \[1\]"):
            torch.zeros((), device=dst_device).copy_(torch.ones(1, device=src_device))

    @pytest.mark.parametrize("dtype", DTYPES)
    def test_round_trip(self, dtype):
        x = reference(dtype)
        assert torch.equal(x.to("maia").cpu(), x)

    @pytest.mark.parametrize("src,dst", [(torch.float32, torch.float16),
                                         (torch.float32, torch.int32),
                                         (torch.int64, torch.bfloat16),
                                         (torch.bool, torch.float32)])
    def test_dtype_conversion_in_every_direction(self, src, dst):
        x = reference(src)
        expected = x.to(dst)
        torch.testing.assert_close(x.to("maia", dtype=dst).cpu(), expected)
        torch.testing.assert_close(x.to("maia").to(dst).cpu(), expected)
        torch.testing.assert_close(x.to("maia").to("cpu", dtype=dst), expected)

    def test_non_contiguous_layouts(self):
        x = torch.arange(60.0).reshape(3, 4, 5)
        d = x.to("maia")
        torch.testing.assert_close(d.transpose(0, 2).cpu(), x.transpose(0, 2))
        torch.testing.assert_close(d[:, 1, ::2].cpu(), x[:, 1, ::2])
        target = torch.zeros(3, 4, 5, device="maia")
        target[:, ::2, 1:4] = x[:, ::2, 1:4]  # host -> strided maia view
        expected = torch.zeros(3, 4, 5)
        expected[:, ::2, 1:4] = x[:, ::2, 1:4]
        torch.testing.assert_close(target.cpu(), expected)
        out = torch.empty(5, 4, 3, device="maia")
        out.copy_(d.permute(2, 1, 0))  # maia -> maia with a permutation
        torch.testing.assert_close(out.cpu(), x.permute(2, 1, 0))
        host = torch.empty(5, 3)
        host.copy_(d[:, 0, :].t())  # maia strided -> host
        torch.testing.assert_close(host, x[:, 0, :].t())

    def test_across_devices(self):
        x = torch.randn(1000)
        a = x.to("maia:0")
        b = a.to("maia:1")
        assert b.device == torch.device("maia:1")
        torch.testing.assert_close(b.cpu(), x)
        torch.testing.assert_close(b.to("maia:0", dtype=torch.float64).cpu(), x.double())

    def test_pinned_non_blocking_copies_are_asynchronous_and_ordered(self):
        x = torch.randn(1 << 20).pin_memory()
        assert x.is_pinned()
        stream = torch.maia.Stream()
        with torch.maia.stream(stream):
            d = x.to("maia", non_blocking=True)
            back = torch.empty_like(x).pin_memory()
            back.copy_(d, non_blocking=True)
            event = torch.maia.Event()
            event.record(stream)
        event.synchronize()
        torch.testing.assert_close(back, x)

    def test_plain_cpu_tensors_are_not_pinned(self):
        assert not torch.ones(3).is_pinned()

    @pytest.mark.parametrize("dtype", DTYPES)
    def test_fill_and_zero(self, dtype):
        x = torch.empty(1001, dtype=dtype, device="maia")
        x.fill_(3)
        assert torch.equal(x.cpu(), torch.full((1001,), 3, dtype=dtype))
        x.zero_()
        assert torch.equal(x.cpu(), torch.zeros(1001, dtype=dtype))
        y = torch.zeros(4, 6, dtype=dtype, device="maia")
        y[:, 1::2].fill_(1)
        expected = torch.zeros(4, 6, dtype=dtype)
        expected[:, 1::2] = 1
        assert torch.equal(y.cpu(), expected)

    def test_item_waits_for_queued_work(self):
        x = torch.full((), 2.5, device="maia")
        assert x.item() == 2.5
        assert torch.tensor([7], device="maia").item() == 7

    def test_resize_keeps_contents(self):
        x = torch.arange(6.0, device="maia")
        x.resize_(10)
        torch.testing.assert_close(x[:6].cpu(), torch.arange(6.0))
        x.resize_(2, 3)
        assert x.shape == (2, 3)
        y = torch.empty(0, device="maia")
        y.set_(x.untyped_storage(), 0, (3,), (1,))
        torch.testing.assert_close(y.cpu(), torch.arange(3.0))


class TestCopyOrdering:
    """Copies are ordered with the streams of both sides; checked with the
    destination's stream busy, so an unordered copy loses the race."""

    N = 1 << 22

    def test_cross_device_copy_precedes_later_writes_to_the_source(self):
        for _ in range(5):
            a = torch.zeros(self.N, device="maia:0")
            busy = keep_busy("maia:1")
            b = a.to("maia:1")
            a.add_(1)
            assert b.sum().item() == 0, "the copy saw a write queued after it"
            del busy

    def test_cross_device_copy_keeps_the_source_block_until_done(self):
        for _ in range(5):
            a = torch.zeros(self.N, device="maia:0")
            busy = keep_busy("maia:1")
            b = a.to("maia:1")
            del a
            reused = torch.empty(self.N, device="maia:0")  # a's block, on a's stream
            reused.fill_(7)
            assert b.sum().item() == 0, "the copy read a reused block"
            del busy, reused

    def test_cross_device_copy_waits_for_the_destination_stream(self):
        # dst's block may still be read by dst's earlier work.
        a = torch.full((self.N,), 3.0, device="maia:0")
        b = torch.zeros(self.N, device="maia:1")
        busy = keep_busy("maia:1")
        snapshot = b.clone()  # queued on maia:1 before the copy
        b.copy_(a)
        assert snapshot.sum().item() == 0
        assert b.sum().item() == 3.0 * self.N
        del busy

    def test_strided_upload_leaves_the_other_elements_alone(self):
        # Another stream fills the odd columns while the default stream
        # uploads the even ones: no element may be written by both.
        host = torch.arange(256 * 64, dtype=torch.float32).reshape(256, 64)
        side = torch.maia.Stream()
        for _ in range(20):
            t = torch.zeros(256, 128, device="maia")
            torch.maia.current_stream().synchronize()
            with torch.maia.stream(side):
                t[:, 1::2].fill_(-1)
            t[:, ::2].copy_(host)
            side.synchronize()
            torch.maia.synchronize()
            result = t.cpu()
            assert torch.equal(result[:, ::2], host)
            assert (result[:, 1::2] == -1).all(), "the upload rewrote the odd columns"

    @pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.int16,
                                       torch.uint8, torch.bool])
    def test_strided_copies_in_every_direction(self, dtype):
        x = reference(torch.float32, (6, 10)).to(dtype)
        t = torch.zeros(6, 20, dtype=dtype, device="maia")
        t[:, ::2] = x  # host -> strided maia: staged and scattered on the device
        expected = torch.zeros(6, 20, dtype=dtype)
        expected[:, ::2] = x
        assert torch.equal(t.cpu(), expected)
        assert torch.equal(t[:, ::2].cpu(), x)  # strided maia -> host: gathered first
        other = torch.zeros(20, 6, dtype=dtype, device="maia:1")
        other.copy_(t.t())  # across devices with another layout
        assert torch.equal(other.cpu(), expected.t())
