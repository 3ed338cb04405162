"""torch.maia / torch.accelerator memory statistics and out-of-memory."""

import os
import subprocess
import sys

import pytest
import torch
from stream_support import keep_busy

MiB = 1 << 20


@pytest.fixture(autouse=True)
def _clean_allocator():
    torch.maia.synchronize()
    torch.maia.empty_cache()
    torch.maia.reset_peak_memory_stats()
    yield
    torch.maia.empty_cache()


class TestMemory:
    def test_exact_statistics(self):
        def stats():
            return torch.maia.memory_stats()

        before = stats()

        def delta(key):
            return stats()[key] - before.get(key, 0)

        x = torch.empty(256, dtype=torch.float32, device="maia")  # 1 KiB
        assert delta("requested_bytes.all.current") == 1024
        assert delta("allocated_bytes.all.current") == 1024
        assert delta("active_bytes.all.current") == 1024
        assert delta("allocation.all.current") == 1
        assert delta("segment.all.current") == 1
        assert delta("reserved_bytes.all.current") == 2 * MiB  # one small-pool segment
        y = torch.empty(1000, dtype=torch.uint8, device="maia")
        assert delta("requested_bytes.all.current") == 1024 + 1000  # never rounded
        assert delta("allocated_bytes.all.current") == 1024 + 1024  # 512-byte blocks
        assert torch.accelerator.memory_allocated() == torch.maia.memory_allocated()
        reserved = torch.maia.memory_reserved()
        del x, y
        assert delta("allocated_bytes.all.current") == 0
        assert delta("requested_bytes.all.current") == 0
        assert torch.maia.memory_reserved() == reserved  # cached, not returned
        z = torch.empty(256, dtype=torch.float32, device="maia")  # reuses the cache
        assert torch.maia.memory_reserved() == reserved
        assert delta("segment.all.current") == 1
        del z
        torch.maia.empty_cache()
        assert delta("reserved_bytes.all.current") == 0
        assert delta("allocation.all.allocated") == 3 and delta("allocation.all.freed") == 3

    def test_peak_and_reset(self):
        x = torch.empty(4 * MiB, dtype=torch.uint8, device="maia")
        peak = torch.maia.max_memory_allocated()
        assert peak >= 4 * MiB
        del x
        assert torch.maia.max_memory_allocated() == peak
        torch.maia.reset_peak_memory_stats()
        assert torch.maia.max_memory_allocated() == torch.maia.memory_allocated()

    def test_mem_get_info(self):
        free, total = torch.maia.mem_get_info()
        assert total == torch.maia.get_device_properties(0)["total_memory"]
        assert 0 < free <= total

    def test_out_of_memory_is_clear_and_recoverable(self):
        keep = torch.arange(1000.0, device="maia")
        total = torch.maia.mem_get_info()[1]
        with pytest.raises(torch.OutOfMemoryError,
                           match=r"Tried to allocate .* on maia:0, which has a total capacity"):
            torch.empty(total * 2, dtype=torch.uint8, device="maia")
        torch.testing.assert_close(keep.cpu(), torch.arange(1000.0))
        assert (torch.ones(10, device="maia") + 1).sum().item() == 20.0

    def test_record_stream_delays_reuse(self):
        # The side stream is kept busy, so its read of x runs after the
        # default stream's next allocation would have been filled, had x's
        # block been handed out again at `del x`.
        side = torch.maia.Stream()
        n = 1 << 20
        x = torch.ones(n, device="maia")
        x_block = x.data_ptr()
        with torch.maia.stream(side):
            busy = keep_busy("maia")
            y = x * 2
        x.record_stream(side)
        del x
        reused = torch.empty(n, device="maia")
        assert reused.data_ptr() != x_block, "x's block was reused while side used it"
        reused.fill_(5)
        side.synchronize()
        torch.testing.assert_close(y.cpu(), torch.full((n,), 2.0))
        del busy


FILL_CHECK = """
import torch
a = torch.ones(1000, device="maia"); del a  # a block that held ones, handed out again
x = torch.empty(1000, device="maia")
i = torch.empty(3, dtype=torch.int32, device="maia")
print(bool(x.isnan().all()), i.tolist())
"""


@pytest.mark.parametrize("fill,expected", [("0xff", "True [-1, -1, -1]"), ("0", "False [0, 0, 0]")])
def test_alloc_fill_fills_every_allocation(fill, expected):
    """MAIA_ALLOC_FILL makes reads of memory nothing wrote reproducible."""
    env = dict(os.environ, MAIA_ALLOC_FILL=fill)
    out = subprocess.run([sys.executable, "-c", FILL_CHECK], capture_output=True, text=True,
                         env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == expected


def test_alloc_fill_refuses_a_value_that_is_not_a_byte():
    env = dict(os.environ, MAIA_ALLOC_FILL="256")
    out = subprocess.run([sys.executable, "-c", "import torch; torch.empty(1, device='maia')"],
                         capture_output=True, text=True, env=env)
    assert out.returncode != 0
    assert "MAIA_ALLOC_FILL='256' is not a byte value" in out.stderr
