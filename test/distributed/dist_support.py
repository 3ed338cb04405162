"""A world of rank processes for the multi-process tests.

`World(n)` spawns n processes once (spawn: the maia driver refuses forked
children); each joins a process group through init_process_group with no
backend and device_id maia:rank (torch 2.13 then gives it the maia backend
alone, as test_monitored_barrier.py checks), then runs the
functions `World.run` sends it, `fn(rank, world_size, *args)`, reporting a
traceback or its return value. Spawning once per test file keeps the suite
fast: starting a rank process costs about as much as importing torch.
"""

from __future__ import annotations

import datetime
import os
import queue
import socket
import sys
import traceback

import torch
import torch.multiprocessing as mp

RESULT_TIMEOUT_S = 120


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank, world_size, port, tasks, results, env, timeout_s, stderr_path):
    if stderr_path:
        fd = os.open(f"{stderr_path}.{rank}", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(fd, 2)
    os.environ.update(env)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    import torch.distributed as dist

    torch.maia.set_fallback_warnings(False)
    torch.maia.set_device(rank)
    try:
        dist.init_process_group(
            rank=rank,
            world_size=world_size,
            device_id=torch.device("maia", rank),
            timeout=datetime.timedelta(seconds=timeout_s),
        )
    except BaseException:
        results.put((rank, False, traceback.format_exc()))
        return
    results.put((rank, True, "ready"))
    while True:
        task = tasks.get()
        if task is None:
            break
        fn, args = task
        try:
            value = fn(rank, world_size, *args)
            results.put((rank, True, value))
        except BaseException:
            results.put((rank, False, traceback.format_exc()))
    # No destroy_process_group: a test may have left the group failed.
    sys.stdout.flush()
    os._exit(0)


class World:
    def __init__(self, size: int, env: dict | None = None, timeout_s: float = 60,
                 stderr_path: str | None = None):
        self.size = size
        ctx = mp.get_context("spawn")
        self._tasks = [ctx.Queue() for _ in range(size)]
        self._results = ctx.Queue()
        port = free_port()
        self.processes = [
            ctx.Process(
                target=_worker,
                args=(r, size, port, self._tasks[r], self._results, dict(env or {}), timeout_s,
                      stderr_path),
                daemon=True,
            )
            for r in range(size)
        ]
        for p in self.processes:
            p.start()
        self._collect("init")

    def _collect(self, what, ranks=None):
        expected = self.size if ranks is None else ranks
        values = [None] * self.size
        errors = []
        answered = 0
        waited = 0.0
        while answered < expected:
            try:
                rank, ok, value = self._results.get(timeout=0.5)
            except queue.Empty:
                waited += 0.5
                dead = [r for r, p in enumerate(self.processes)
                        if p.exitcode is not None and p.exitcode != 0]
                if dead and self._results.empty():
                    raise AssertionError(f"{what}: rank(s) {dead} exited "
                                         f"(exit codes {[self.processes[r].exitcode for r in dead]})")
                if waited > RESULT_TIMEOUT_S:
                    raise AssertionError(f"{what}: a rank did not answer in {RESULT_TIMEOUT_S} s")
                continue
            answered += 1
            if ok:
                values[rank] = value
            else:
                errors.append(f"--- rank {rank} ---\n{value}")
        if errors:
            raise AssertionError(f"{what} failed:\n" + "\n".join(errors))
        return values

    def run(self, fn, *args):
        """Runs fn(rank, size, *args) on every rank; returns the ranks' values."""
        for q in self._tasks:
            q.put((fn, args))
        return self._collect(fn.__name__)

    def run_on(self, rank: int, fn, *args):
        """Runs fn(rank, size, *args) on one rank only; returns its value."""
        self._tasks[rank].put((fn, args))
        return self._collect(fn.__name__, ranks=1)[rank]

    def close(self):
        for q in self._tasks:
            q.put(None)
        for p in self.processes:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
