"""torch.profiler on maia: device activity from the driver in Kineto traces,
correlation to the launching operator, key_averages, the legacy
use_device="maia" profiler, and the driver's activity API itself."""

import ctypes
import json
import time
import warnings

import pytest
import torch
from torch.profiler import ProfilerActivity, profile

DEVICE_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset", "cuda_sync")


# ---------------------------------------------------------------- helpers


class ActivityRecord(ctypes.Structure):
    """maiaActivityRecord of maia/profiler.h."""

    _fields_ = [
        ("kind", ctypes.c_int),
        ("device", ctypes.c_int),
        ("stream_id", ctypes.c_uint64),
        ("correlation_id", ctypes.c_uint64),
        ("enqueue_ns", ctypes.c_int64),
        ("start_ns", ctypes.c_int64),
        ("end_ns", ctypes.c_int64),
        ("bytes", ctypes.c_uint64),
        ("host_thread", ctypes.c_uint64),
        ("name", ctypes.c_char * 128),
    ]


KERNEL, MEMCPY_HTOD, MEMCPY_DTOH, MEMCPY_DTOD, MEMCPY_HTOH, MEMSET = 1, 2, 3, 4, 5, 6


def driver():
    """The driver library torch_maia already loaded (found by its path in
    this process's mappings, so ctypes binds the same instance)."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            if line.rstrip().endswith("libmaia_runtime.so"):
                return ctypes.CDLL(line.split()[-1])
    raise AssertionError("libmaia_runtime.so is not loaded")


def waiting_records(lib):
    count = ctypes.c_size_t()
    assert lib.maiaProfilerFlush(None, 0, ctypes.byref(count)) == 0
    return count.value


def flush(lib):
    n = waiting_records(lib)
    records = (ActivityRecord * max(n, 1))()
    got = ctypes.c_size_t()
    assert lib.maiaProfilerFlush(records, n, ctypes.byref(got)) == 0
    return list(records[: got.value])


def profile_device(fn, **kwargs):
    """Runs fn under torch.profiler with CPU and maia activity."""
    torch.maia.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1], **kwargs) as prof:
        fn()
        torch.maia.synchronize()
    return prof


def chrome_trace(prof, tmp_path):
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    with open(path) as f:
        return json.load(f)["traceEvents"]


def device_events(events):
    return [e for e in events if e.get("ph") == "X" and e.get("cat") in DEVICE_CATEGORIES]


def launching_ops(events):
    """Correlation id -> the CPU operator or annotation with that id."""
    return {
        e["args"]["External id"]: e
        for e in events
        if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation")
        and "External id" in e.get("args", {})
    }


def launcher_of(event, ops):
    return ops[event["args"]["External id"]]["name"]


# ------------------------------------------------------------------ tests


class TestKinetoTrace:
    def test_eager_kernels_copies_and_fills_are_named_and_linked(self, tmp_path):
        x = torch.randn(256, 256, device="maia")
        y = torch.randn(256, 256, device="maia")

        def work():
            (x @ y + x).cpu()
            torch.ones(1000, device="maia")
            torch.randn(64).to("maia")

        events = chrome_trace(profile_device(work), tmp_path)
        ops = launching_ops(events)
        by_name = {}
        for e in device_events(events):
            by_name.setdefault(e["name"], []).append(launcher_of(e, ops))
        assert by_name["gemm_f32"] == ["aten::mm"]
        assert by_name["add_f32"] == ["aten::add"]
        assert "aten::_copy_from" in by_name["Memcpy DtoH"]
        assert "aten::_copy_from" in by_name["Memcpy HtoD"]
        assert "aten::fill_" in by_name["Fill"]

    def test_enqueue_slices_sit_in_their_op_with_an_arrow_to_the_device(self, tmp_path):
        x = torch.randn(256, 256, device="maia")
        events = chrome_trace(profile_device(lambda: (x @ x).cpu()), tmp_path)
        ops = launching_ops(events)
        enqueues = {e["name"]: e for e in events
                    if e.get("ph") == "X" and e.get("cat") == "privateuse1_runtime"}
        launch, copy = enqueues["maiaLaunchKernel"], enqueues["maiaMemcpy"]
        for enqueue, op_name in ((launch, "aten::mm"), (copy, "aten::_copy_from")):
            op = ops[enqueue["args"]["External id"]]
            assert op["name"] == op_name and op["tid"] == enqueue["tid"]
            assert op["ts"] <= enqueue["ts"] <= op["ts"] + op["dur"]
        starts = {e["id"]: e for e in events if e.get("ph") == "s" and e.get("cat") == "ac2g"}
        ends = {e["id"]: e for e in events if e.get("ph") == "f" and e.get("cat") == "ac2g"}
        (gemm,) = [e for e in device_events(events) if e["name"] == "gemm_f32"]
        (arrow,) = [i for i, f in ends.items() if f["ts"] == gemm["ts"] and f["pid"] == 0]
        assert starts[arrow]["ts"] == launch["ts"] and starts[arrow]["tid"] == launch["tid"]

    def test_device_and_stream_tracks(self, tmp_path):
        side = torch.maia.Stream()
        a = torch.ones(4096, device="maia")
        b = torch.ones(4096, device="maia:1")

        def work():
            a.add_(1)
            with torch.maia.stream(side):
                a.mul_(2)
            b.add_(1)

        events = chrome_trace(profile_device(work), tmp_path)
        tracks = {(e["name"], e["pid"], e["tid"]) for e in device_events(events)}
        default0, default1 = (0, 0), (1, 0)
        assert ("add_f32", *default0) in tracks
        assert ("add_f32", *default1) in tracks
        (side_track,) = {(p, t) for n, p, t in tracks if n == "mul_f32"}
        assert side_track[0] == 0 and side_track[1] != 0
        names = {(e["pid"], e["tid"]): e["args"]["name"]
                 for e in events if e.get("ph") == "M" and e["name"] == "thread_name"}
        assert names[default0] == "maia:0 stream 0 (default)"
        assert names[default1] == "maia:1 stream 0 (default)"
        assert names[side_track] == f"maia:0 stream {side_track[1]}"
        process = {e["pid"]: e["args"]["name"]
                   for e in events if e.get("ph") == "M" and e["name"] == "process_name"}
        assert process[0] == "maia"

    def test_times_are_non_negative_ordered_and_inside_their_launch(self, tmp_path):
        x = torch.randn(512, 512, device="maia")

        def work():
            for _ in range(5):
                y = x * 2
                y = y @ x
                y.sum()

        events = chrome_trace(profile_device(work), tmp_path)
        ops = launching_ops(events)
        on_default = sorted((e for e in device_events(events) if (e["pid"], e["tid"]) == (0, 0)),
                            key=lambda e: e["ts"])
        assert len(on_default) >= 15
        for e in on_default:
            assert e["dur"] >= 0
            # Enqueued inside its operator, so it cannot start before it.
            assert e["ts"] >= ops[e["args"]["External id"]]["ts"]
        # A stream is in order: each command starts after the previous ended.
        for before, after in zip(on_default, on_default[1:]):
            assert after["ts"] >= before["ts"] + before["dur"] - 1e-3

    def test_compiled_kernels_are_named_and_linked_to_the_graph(self, tmp_path):
        x = torch.randn(1024, 256, device="maia")

        @torch.compile
        def f(a):
            return (a.sin() * 2 + 1).relu().sum(dim=1)

        f(x)
        events = chrome_trace(profile_device(lambda: f(x)), tmp_path)
        ops = launching_ops(events)
        compiled = [e for e in device_events(events) if e["name"].startswith("maia_")]
        assert compiled, [e["name"] for e in device_events(events)]
        for e in compiled:
            assert "CompiledFxGraph" in launcher_of(e, ops)

    def test_graph_replay_kernels_are_on_the_device_track_linked_to_the_replaying_op(
            self, tmp_path):
        x = torch.randn(128, 128, device="maia")

        def step():
            return ((x @ x + x).relu() * 3).sum(dim=0)

        # What one step runs, from an eager profile: the replay must show the
        # same commands, in the same order, once per replay.
        eager = chrome_trace(profile_device(step), tmp_path)
        expected = [e["name"] for e in sorted(device_events(eager), key=lambda e: e["ts"])]
        assert "gemm_f32" in expected
        graph = torch.maia.MaiaGraph()
        with torch.maia.graph(graph):
            out = step()
        replays = 3

        def work():
            for i in range(replays):
                with torch.profiler.record_function(f"replay {i}"):
                    graph.replay()

        prof = profile_device(work)
        events = chrome_trace(prof, tmp_path)
        torch.testing.assert_close(out.cpu(), step().cpu())
        ops = launching_ops(events)
        device = sorted(device_events(events), key=lambda e: e["ts"])
        assert [e["name"] for e in device] == expected * replays
        assert len({(e["pid"], e["tid"]) for e in device}) == 1, "one stream: the replaying one"
        assert device[0]["pid"] == 0
        for i in range(replays):
            chunk = device[i * len(expected):(i + 1) * len(expected)]
            assert {launcher_of(e, ops) for e in chunk} == {f"replay {i}"}
            for before, after in zip(chunk, chunk[1:]):
                assert after["ts"] >= before["ts"] + before["dur"] - 1e-3
        # The replay itself: an annotation slice on the same track around
        # its commands, and one maiaGraphLaunch enqueue per command.
        spans = sorted((e for e in events if e.get("ph") == "X" and e["name"] == "Graph launch"),
                       key=lambda e: e["ts"])
        assert len(spans) == replays
        for i, span in enumerate(spans):
            assert (span["pid"], span["tid"]) == (device[0]["pid"], device[0]["tid"])
            # Not linked (its time is its commands'): its args name the
            # launcher's id.
            assert ops[span["args"]["launcher External id"]]["name"] == f"replay {i}"
            for e in device[i * len(expected):(i + 1) * len(expected)]:
                assert span["ts"] - 1e-3 <= e["ts"]
                assert e["ts"] + e["dur"] <= span["ts"] + span["dur"] + 1e-3
        launches = [e for e in events
                    if e.get("ph") == "X" and e.get("cat") == "privateuse1_runtime"]
        assert [e["name"] for e in launches] == ["maiaGraphLaunch"] * (replays * (len(expected) + 1))
        # Device time per operator counts each replayed command once.
        (annotation,) = [a for a in prof.key_averages() if a.key == "replay 0"]
        per_replay = [sum(e["dur"] for e in device[i * len(expected):(i + 1) * len(expected)])
                      for i in range(replays)]
        assert annotation.self_device_time_total == pytest.approx(per_replay[0], rel=1e-3)

    def test_backward_kernels_link_to_the_autograd_thread_ops(self, tmp_path):
        w = torch.randn(128, 128, device="maia", requires_grad=True)
        x = torch.randn(64, 128, device="maia")

        def work():
            (x @ w).relu().sum().backward()

        events = chrome_trace(profile_device(work), tmp_path)
        ops = launching_ops(events)
        linked = [ops[e["args"]["External id"]] for e in device_events(events)]
        assert len(linked) == len(device_events(events))  # every one is linked
        # Backward runs on the autograd engine's maia thread: its kernels
        # are linked to the operators of that thread.
        main_tid = ops[next(e for e in device_events(events) if e["name"] == "gemm_f32")
                       ["args"]["External id"]]["tid"]
        backward_mm = [op for op in linked if op["name"] == "aten::mm" and op["tid"] != main_tid]
        assert backward_mm

    def test_correlation_is_per_host_thread(self, tmp_path):
        import threading

        a = torch.ones(1 << 14, device="maia:0")
        b = torch.ones(1 << 14, device="maia:1")

        def worker(t, n):
            for _ in range(n):
                t.mul_(1.0001)

        def work():
            threads = [threading.Thread(target=worker, args=(t, 20)) for t in (a, b)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()

        # Operators of threads other than the profiling one are recorded
        # only with profile_all_threads (on any device).
        config = torch._C._profiler._ExperimentalConfig(profile_all_threads=True)
        events = chrome_trace(profile_device(work, experimental_config=config), tmp_path)
        ops = launching_ops(events)
        muls = [e for e in device_events(events) if e["name"] == "mul_f32"]
        assert len(muls) == 40
        # Each device's kernels were launched by one thread, the other's by
        # the other: a link never crosses threads.
        tids = {pid: {ops[e["args"]["External id"]]["tid"] for e in muls if e["pid"] == pid}
                for pid in (0, 1)}
        assert len(tids[0]) == 1 and len(tids[1]) == 1 and tids[0] != tids[1]
        assert all(ops[e["args"]["External id"]]["name"] == "aten::mul_" for e in muls)

    def test_schedule_records_only_active_steps_of_each_cycle(self, tmp_path):
        x = torch.randn(128, 128, device="maia")
        kernels_per_cycle = []

        def ready(prof):
            events = chrome_trace(prof, tmp_path)
            kernels_per_cycle.append(sorted(e["name"] for e in device_events(events)))

        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1],
                     schedule=torch.profiler.schedule(wait=1, warmup=1, active=2, repeat=2),
                     on_trace_ready=ready) as prof:
            for _ in range(10):
                (x @ x).sum().item()
                prof.step()
        # Two active steps per cycle, a GEMM, a sum and item()'s download
        # each; the wait and warmup steps record nothing on the device.
        expected = ["Memcpy DtoH"] * 2 + ["gemm_f32"] * 2 + ["sum_f32"] * 2
        assert kernels_per_cycle == [expected, expected]

    def test_key_averages_gives_device_time_per_op(self):
        x = torch.randn(512, 512, device="maia")
        prof = profile_device(lambda: [x @ x for _ in range(3)])
        rows = {r.key: r for r in prof.key_averages()}
        mm = rows["aten::mm"]
        assert mm.count == 3
        kernel = rows["gemm_f32"]
        assert mm.device_time_total > 0
        assert mm.device_time_total == pytest.approx(kernel.device_time_total)
        assert rows["aten::matmul"].self_device_time_total == 0

    def test_large_kernel_device_time_is_plausible_against_wall_time(self, tmp_path):
        x = torch.randn(1024, 1024, device="maia")
        (x @ x).sum().item()  # the GEMM binary loaded, pages touched
        wall = {}

        def work():
            start = time.perf_counter()
            x @ x
            torch.maia.synchronize()
            wall["us"] = (time.perf_counter() - start) * 1e6

        events = chrome_trace(profile_device(work), tmp_path)
        (gemm,) = [e for e in device_events(events) if e["name"] == "gemm_f32"]
        # 2 GFLOP: milliseconds of device time, nearly all of the wall time
        # of launching it and waiting (a few microseconds of host work).
        assert gemm["dur"] <= wall["us"]
        assert gemm["dur"] >= 0.5 * wall["us"]

    def test_memory_events_keep_working(self, tmp_path):
        prof = profile_device(lambda: torch.empty(1 << 20, device="maia"), profile_memory=True)
        events = chrome_trace(prof, tmp_path)
        memory = [e for e in events if e.get("name") == "[memory]"]
        assert any(e["args"].get("Bytes") == 4 << 20 for e in memory)
        assert any(r.device_memory_usage == 4 << 20 for r in prof.key_averages())

    def test_cpu_only_profile_records_no_device_activity(self, tmp_path):
        x = torch.ones(1000, device="maia")
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            (x + 1).cpu()
        assert device_events(chrome_trace(prof, tmp_path)) == []
        assert waiting_records(driver()) == 0


    def test_collectives_are_named_slices_on_the_comm_stream(self, tmp_path):
        import torch.distributed as dist

        store = dist.HashStore()
        dist.init_process_group("maia", store=store, rank=0, world_size=1,
                                device_id=torch.device("maia", 0))
        try:
            t = torch.ones(1024, device="maia")

            def work():
                dist.all_reduce(t)
                dist.broadcast(t, src=0)

            events = chrome_trace(profile_device(work), tmp_path)
        finally:
            dist.destroy_process_group()
        names = [e["name"] for e in device_events(events)]
        collectives = [n for n in names if "sequence number" in n]
        kinds = [n.split(" (")[0] for n in collectives]  # a collective may take several steps
        assert [k for i, k in enumerate(kinds) if i == 0 or kinds[i - 1] != k] == \
            ["ALLREDUCE", "BROADCAST"], names
        # On device 0's communication stream, not the default stream.
        tracks = {(e["pid"], e["tid"]) for e in device_events(events) if e["name"] in collectives}
        assert len(tracks) == 1 and next(iter(tracks))[0] == 0 and next(iter(tracks))[1] != 0


class TestLegacyProfiler:
    def test_use_device_maia_warns_nothing_and_times_are_sane(self):
        x = torch.randn(512, 512, device="maia")
        x @ x
        torch.maia.synchronize()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            start = time.perf_counter()
            with torch.autograd.profiler.profile(use_device="maia") as prof:
                y = x @ x
                (y + 1).sum().item()
            wall_us = (time.perf_counter() - start) * 1e6
            rows = {r.key: r for r in prof.key_averages()}
        assert [str(w.message) for w in caught] == []
        assert rows["aten::mm"].device_time_total > 0
        for row in rows.values():
            assert 0 <= row.device_time_total <= wall_us
            assert 0 <= row.cpu_time_total <= wall_us


class TestDriverActivityApi:
    def test_records_kind_name_stream_and_correlation(self):
        lib = driver()
        x = torch.ones(1 << 16, device="maia")
        torch.maia.synchronize()
        assert lib.maiaProfilerStart() == 0
        try:
            assert lib.maiaProfilerStart() != 0  # one profiler at a time
            lib.maiaProfilerPushCorrelationId(ctypes.c_uint64(4242))
            y = x + 1
            lib.maiaProfilerPopCorrelationId(None)
            y.cpu()
            torch.maia.synchronize()
        finally:
            assert lib.maiaProfilerStop() == 0
        records = flush(lib)
        (add,) = [r for r in records if r.name == b"add_f32"]
        assert add.kind == KERNEL and add.device == 0 and add.stream_id == 0
        assert add.correlation_id == 4242
        assert 0 < add.enqueue_ns <= add.start_ns <= add.end_ns
        (download,) = [r for r in records if r.kind == MEMCPY_DTOH]
        assert download.bytes == 4 << 16 and download.correlation_id == 0
        assert waiting_records(lib) == 0

    def test_a_new_session_drops_ids_left_by_an_earlier_one(self):
        lib = driver()
        x = torch.ones(1 << 10, device="maia")
        lib.maiaProfilerPushCorrelationId(ctypes.c_uint64(77))  # never popped
        assert lib.maiaProfilerStart() == 0
        try:
            x + 1
            torch.maia.synchronize()
        finally:
            assert lib.maiaProfilerStop() == 0
        records = flush(lib)
        assert records and all(r.correlation_id == 0 for r in records)
        assert lib.maiaProfilerPopCorrelationId(None) == 1  # 77 went with its session

    def test_pop_without_push_is_an_error(self):
        assert driver().maiaProfilerPopCorrelationId(None) == 1  # maiaErrorInvalidValue

    def test_nothing_is_recorded_while_no_profiler_is_active(self):
        lib = driver()
        assert waiting_records(lib) == 0
        x = torch.ones(1 << 16, device="maia")
        (x * 2 + 1).cpu()
        torch.maia.synchronize()
        assert waiting_records(lib) == 0
