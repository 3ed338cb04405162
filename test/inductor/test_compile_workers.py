"""The compile worker pool under faults: workers that die, hang, or answer
garbage, threads waiting for a worker, fork. A small Python script stands in
for `maia-compile --server` in the fault cases; the last test uses the real
compiler."""

import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

import pytest
import torch

from maia_inductor import compiler
from maia_inductor.compiler import MaiaCompileError, WorkerPool

# Generous: nothing here takes more than a second or two unless it hangs,
# which is the bug these tests look for.
BOUND = 60

FAKE_WORKER = """\
import json, os, signal, sys, time
mode = os.environ["FAKE_WORKER_MODE"]
state = os.environ["FAKE_WORKER_STATE"]
open(os.path.join(state, "pids", str(os.getpid())), "w").close()
try:
    os.mkdir(os.path.join(state, "first"))  # atomic: true for one worker only
    first = True
except FileExistsError:
    first = False
for line in sys.stdin:
    request = json.loads(line)
    if mode == "hang" or (mode == "hang-first" and first):
        busy = os.path.join(state, "busy")
        with open(busy + ".tmp", "w") as f:
            f.write(str(os.getpid()))
        os.rename(busy + ".tmp", busy)
        time.sleep(120)
    elif mode == "exit":
        sys.exit(3)
    elif mode == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif mode == "garbage":
        print(os.environ["FAKE_WORKER_REPLY"], flush=True)
        continue
    print(json.dumps({"id": request.get("id"), "ok": True, "pid": os.getpid(),
                      "version": "fake", "host_cpu": "fake"}), flush=True)
"""


@pytest.fixture
def fake_pool(tmp_path, monkeypatch):
    """fake_pool(mode, size=1, reply=None): a WorkerPool of fake workers
    behaving as mode says; its workers are killed afterwards."""
    script = tmp_path / "fake-maia-compile"
    script.write_text(f"#!{sys.executable}\n{FAKE_WORKER}")
    script.chmod(0o755)
    (tmp_path / "pids").mkdir()
    monkeypatch.setenv("MAIA_COMPILE", str(script))
    monkeypatch.setenv("FAKE_WORKER_STATE", str(tmp_path))
    pools = []

    def make(mode, size=1, reply=None):
        monkeypatch.setenv("FAKE_WORKER_MODE", mode)
        if reply is not None:
            monkeypatch.setenv("FAKE_WORKER_REPLY", reply)
        pools.append(WorkerPool(size))
        return pools[-1]

    yield make
    for pid in fake_pids(tmp_path):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def fake_pids(state: Path) -> list[int]:
    return [int(p.name) for p in (state / "pids").iterdir()]


def alive(pid: int) -> bool:
    """Running (a zombie, not yet reaped by the pool, counts as alive)."""
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def wait_for_file(path: Path) -> str:
    deadline = time.monotonic() + BOUND
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)
    return path.read_text()


def in_threads(calls):
    """Runs each call on its own daemon thread (a hung one cannot keep the
    test process alive); returns ("ok", value) or ("error", exception) per call,
    failing if any is still running after BOUND seconds."""
    outcomes = [None] * len(calls)

    def run(index, call):
        try:
            outcomes[index] = ("ok", call())
        except BaseException as error:  # noqa: B036 - reported to the test
            outcomes[index] = ("error", error)

    threads = [threading.Thread(target=run, args=(i, call), daemon=True)
               for i, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + BOUND
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    hung = sum(thread.is_alive() for thread in threads)
    assert not hung, f"{hung} of {len(threads)} requests still blocked after {BOUND} s"
    return outcomes


def bounded(call):
    [(kind, value)] = in_threads([call])
    if kind == "error":
        raise value
    return value


def compile_request(name):
    return {"id": name, "source": "func.func @k() { return }", "output": "/nonexistent"}


def test_worker_killed_mid_request_is_replaced_and_the_request_retried(fake_pool, tmp_path):
    pool = fake_pool("hang-first")
    outcome = []
    thread = threading.Thread(daemon=True, target=lambda: outcome.append(
        in_threads([lambda: pool.request(compile_request("maia_poi_retried"))])[0]))
    thread.start()
    victim = int(wait_for_file(tmp_path / "busy"))
    os.kill(victim, signal.SIGKILL)
    thread.join(BOUND)
    [(kind, reply)] = outcome
    assert kind == "ok", reply
    assert reply["ok"] and reply["id"] == "maia_poi_retried" and reply["pid"] != victim
    assert pool.started == 1  # the dead worker's slot went to its replacement


def test_compiler_that_cannot_start_says_why(tmp_path, monkeypatch):
    # What the loader prints when the wheel's maia-compile lacks libMLIR.
    script = tmp_path / "maia-compile"
    script.write_text("#!/bin/sh\necho 'maia-compile: error while loading shared libraries: "
                      "libMLIR.so.19.1: cannot open shared object file' >&2\nexit 127\n")
    script.chmod(0o755)
    monkeypatch.setenv("MAIA_COMPILE", str(script))
    pool = WorkerPool(1)
    with pytest.raises(MaiaCompileError,
                       match=r"cannot run \(exit status 127\).*libMLIR.so.19.1.*libmlir-19"):
        bounded(lambda: pool.request(compile_request("maia_poi_unstartable")))
    assert pool.started == 0


@pytest.mark.parametrize("mode,status", [("kill", "killed by SIGKILL"),
                                         ("exit", "exited with status 3")])
def test_worker_dying_twice_names_the_kernel_and_the_exit_status(fake_pool, tmp_path,
                                                                 mode, status):
    pool = fake_pool(mode)
    with pytest.raises(MaiaCompileError, match=f"kernel maia_poi_crashy.*{status}"):
        bounded(lambda: pool.request(compile_request("maia_poi_crashy")))
    assert len(fake_pids(tmp_path)) == 2  # retried once, on a fresh worker
    assert pool.started == 0  # both slots freed: the next request can start a worker


def test_timeout_kills_the_worker_and_names_the_kernel(fake_pool, tmp_path, monkeypatch):
    pool = fake_pool("hang")
    monkeypatch.setattr(compiler, "compile_timeout", 0.5)
    with pytest.raises(MaiaCompileError, match=r"kernel maia_poi_slow within 0\.5 s"):
        bounded(lambda: pool.request(compile_request("maia_poi_slow")))
    [pid] = fake_pids(tmp_path)  # not retried: a slow kernel would be slow again
    assert not alive(pid)
    assert pool.started == 0


def test_timeout_comes_from_the_environment():
    result = subprocess.run(
        [sys.executable, "-c", "from maia_inductor import compiler; print(compiler.compile_timeout)"],
        capture_output=True, text=True, timeout=BOUND,
        env={**os.environ, "MAIA_COMPILE_TIMEOUT": "7.5"})
    assert result.stdout.strip() == "7.5", result.stderr


@pytest.mark.parametrize("reply", [
    "Segmentation fault (core dumped) <not JSON>",
    "[1, 2, 3]",
    '{"id": "maia_poi_garbled", "timings_ms": {}}',  # no "ok"
    '{"id": "maia_poi_other", "ok": true}',  # the answer to another request
])
def test_garbage_reply_names_the_kernel_and_quotes_it(fake_pool, tmp_path, reply):
    pool = fake_pool("garbage", reply=reply)
    with pytest.raises(MaiaCompileError, match="kernel maia_poi_garbled") as error:
        bounded(lambda: pool.request(compile_request("maia_poi_garbled")))
    assert repr(reply)[:40] in str(error.value)
    [pid] = fake_pids(tmp_path)
    assert not alive(pid)  # discarded: its next line could be anything
    assert pool.started == 0


def test_waiting_threads_wake_when_every_worker_dies(fake_pool):
    pool = fake_pool("exit", size=2)
    names = [f"maia_poi_waiter{i}" for i in range(6)]  # more requests than workers
    outcomes = in_threads([lambda name=name: pool.request(compile_request(name))
                           for name in names])
    for name, (kind, error) in zip(names, outcomes):
        assert kind == "error" and isinstance(error, MaiaCompileError), error
        assert f"kernel {name}" in str(error)
    assert pool.started == 0


def test_forked_child_starts_with_an_empty_pool(fake_pool):
    pool = fake_pool("echo")
    parent_worker = pool.request({"command": "version"})["pid"]
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # never return into pytest from the child
        status = 1
        try:
            os.close(read_end)
            fresh = not pool.idle and pool.started == 0
            reply = pool.request({"command": "version"})
            os.write(write_end, json.dumps({"fresh": fresh, "pid": reply["pid"]}).encode())
            status = 0
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(status)
    os.close(write_end)
    try:
        ready, _, _ = select.select([read_end], [], [], BOUND)
        assert ready, "the forked child did not answer"
        seen = json.loads(os.read(read_end, 4096) or b"null")
        assert seen is not None, "the forked child failed (its traceback is above)"
    finally:
        os.close(read_end)
        os.kill(child, signal.SIGKILL) if alive(child) else None
        os.waitpid(child, 0)
    assert seen == {"fresh": True, "pid": seen["pid"]}
    assert seen["pid"] != parent_worker  # the child started its own worker
    # ... and the parent's worker is still there and in step with the parent.
    assert pool.request({"command": "version"})["pid"] == parent_worker


def server_children() -> list[int]:
    """This process's `maia-compile --server` children, from /proc."""
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes().split(b"\0")
        except (OSError, IndexError):
            continue
        if int(fields[1]) == os.getpid() and b"--server" in cmdline:
            pids.append(int(stat.parent.name))
    return pids


def wait_until_dead(pid: int) -> None:
    """Until pid has exited (a zombie: the pool has not noticed yet)."""
    deadline = time.monotonic() + BOUND
    while Path(f"/proc/{pid}/stat").exists():
        if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
            return
        assert time.monotonic() < deadline, f"{pid} did not die"
        time.sleep(0.02)


def test_real_compile_works_after_its_worker_was_killed(tmp_path, monkeypatch):
    from maia_inductor.testing import compiled_kernels

    _, [kernel, *_] = compiled_kernels(lambda x: x * 3 + 1, torch.randn(16, device="maia"))
    workers = server_children()
    assert workers, "the compile above should have left a worker running"
    for pid in workers:
        os.kill(pid, signal.SIGKILL)
        wait_until_dead(pid)
    monkeypatch.setattr(compiler, "cache_dir", lambda: tmp_path)  # a miss: really compiles
    binary = bounded(lambda: compiler.compile_to_binary(kernel.name, kernel.mlir))
    assert binary.is_relative_to(tmp_path) and binary.stat().st_size > 0
