"""torch.Stream / torch.Event on maia, torch.maia streams, torch.accelerator."""

import torch
from stream_support import keep_busy


class TestStreams:
    def test_current_default_and_set_stream(self):
        default = torch.maia.default_stream()
        assert torch.maia.current_stream() == default
        s = torch.maia.Stream()
        assert s != default and s.device == torch.device("maia:0")
        with torch.maia.stream(s):
            assert torch.maia.current_stream() == s
            assert torch.accelerator.current_stream() == s
        assert torch.maia.current_stream() == default
        torch.maia.set_stream(s)
        try:
            assert torch.maia.current_stream() == s
        finally:
            torch.maia.set_stream(default)

    def test_generic_stream_and_event(self):
        s = torch.Stream(device="maia:1", priority=-1)
        assert s.device == torch.device("maia:1")
        e = torch.Event(device="maia:1", enable_timing=True)
        with s:
            x = torch.ones(100, device="maia:1")
        e.record(s)
        e.synchronize()
        assert e.query() and s.query()
        torch.testing.assert_close(x.cpu(), torch.ones(100))

    def test_streams_per_device(self):
        s1 = torch.maia.Stream(device=1)
        assert torch.maia.current_stream(1) == torch.maia.default_stream(1)
        with torch.maia.stream(s1):
            assert torch.maia.current_stream(1) == s1
            assert torch.maia.current_stream(0) == torch.maia.default_stream(0)

    def test_event_timing_and_cross_stream_wait(self):
        producer, consumer = torch.maia.Stream(), torch.maia.Stream()
        start = torch.maia.Event(enable_timing=True)
        done = torch.maia.Event(enable_timing=True)
        start.record(producer)
        with torch.maia.stream(producer):
            x = torch.full((1 << 20,), 2.0, device="maia")
        done.record(producer)
        consumer.wait_event(done)
        with torch.maia.stream(consumer):
            y = x.clone()  # ordered after the producer by the event
        consumer.synchronize()
        torch.testing.assert_close(y.cpu(), torch.full((1 << 20,), 2.0))
        # The same interval measured from either end (no timing assumption).
        assert start.elapsed_time(done) == -done.elapsed_time(start)

    def test_synchronize_apis(self):
        # Each API returns only once the work queued before it is done: an
        # event recorded after a few milliseconds of work has completed.
        def queue_work(device):
            keep_busy(device, rounds=4)
            done = torch.maia.Event()
            done.record(torch.maia.current_stream(device))
            return done

        apis = [(1, lambda: torch.maia.synchronize(1)),
                (0, torch.maia.synchronize),
                (0, torch.accelerator.synchronize),
                (0, lambda: torch.maia.current_stream().synchronize()),
                (1, lambda: torch.maia.current_stream(1).synchronize())]
        for device, synchronize in apis:
            done = queue_work(f"maia:{device}")
            synchronize()
            assert done.query(), f"work on maia:{device} still pending after {synchronize}"

    def test_never_recorded_event_is_complete(self):
        e = torch.maia.Event()
        assert e.query()
        e.synchronize()
        torch.maia.current_stream().wait_event(e)  # waits for nothing


class TestStreamPool:
    def test_stream_context_restores_the_device_too(self):
        assert torch.maia.current_device() == 0
        s1 = torch.maia.Stream(device=1)
        with torch.maia.stream(s1):
            assert torch.maia.current_device() == 1
            assert torch.maia.current_stream() == s1
        assert torch.maia.current_device() == 0
        assert torch.maia.current_stream(1) == torch.maia.default_stream(1)
        assert torch.maia.current_stream(0) == torch.maia.default_stream(0)

    def test_new_streams_come_from_a_pool_per_priority(self):
        # A stream per step must not exhaust the device's driver streams.
        least, greatest = 0, -2
        by_priority = {}
        for step in range(3000):
            priority = (least, -1, greatest)[step % 3]
            s = torch.maia.Stream(priority=priority)
            assert s.priority == priority
            by_priority.setdefault(priority, set()).add(s.stream_id)
        for priority, ids in by_priority.items():
            assert 1 < len(ids) <= 32, (priority, len(ids))
        assert not set.intersection(*by_priority.values())
        # Out-of-range priorities are clamped, as CUDA does.
        assert torch.maia.Stream(priority=-100).priority == greatest
        assert torch.maia.Stream(priority=100).priority == least

    def test_pooled_streams_still_order_their_work(self):
        s = torch.maia.Stream()
        with torch.maia.stream(s):
            x = torch.zeros(1 << 16, device="maia")
            for _ in range(10):
                x.add_(1)
        s.synchronize()
        assert x.sum().item() == 10 * (1 << 16)
