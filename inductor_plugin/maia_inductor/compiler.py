"""The MAIA compiler as Inductor sees it: a pool of long-lived
`maia-compile --server` workers and an on-disk cache of kernel binaries.

A binary is cached under Inductor's cache dir (maia/<key[:2]>/<key>.maiabin)
keyed by sha256 of (MLIR text, compile options, compiler version, target
CPU); the worker writes it atomically (temp file + rename) and a file lock
keeps two processes from compiling the same kernel twice. On an FX graph
cache hit the wrapper module re-runs its compile calls, so a hit here costs
one stat() and one dlopen.

A worker that dies is replaced and its request retried once; one that does
not answer within `compile_timeout` seconds, or answers garbage, is killed and
the request fails with a MaiaCompileError naming the kernel.
"""

from __future__ import annotations

import hashlib
import json
import os
import select
import shutil
import signal
import subprocess
import threading
import time
import weakref
from functools import lru_cache
from pathlib import Path

from filelock import FileLock


class MaiaCompileError(RuntimeError):
    pass


def _timeout_from_environment() -> float:
    text = os.environ.get("MAIA_COMPILE_TIMEOUT", "300")
    try:
        return float(text)
    except ValueError:
        raise MaiaCompileError(f"MAIA_COMPILE_TIMEOUT must be a number of seconds, "
                               f"not {text!r}") from None


# Seconds to wait for a worker's reply before killing it (0: no limit). Not
# in maia_inductor.config: a value set there is context-local (the compile
# threads would not see one set on the main thread), and the timeout has no
# bearing on the code, so it does not belong in the FX graph cache key.
compile_timeout: float = _timeout_from_environment()


def compiler_path() -> str:
    """MAIA_COMPILE, else the one installed with the torch_maia wheel
    (torch_maia/bin), else the release build of a checkout, else PATH's."""
    from torch_maia._tools import packaged_tool

    candidates = [os.environ.get("MAIA_COMPILE"), packaged_tool("maia-compile")]
    root = Path(__file__).resolve().parents[2]
    candidates.append(str(root / "build" / "release" / "bin" / "maia-compile"))
    candidates.append(shutil.which("maia-compile"))
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return str(candidate)
    raise MaiaCompileError("the MAIA compiler (maia-compile) was not found: build it "
                           "(tools/setup.sh) or set MAIA_COMPILE to its path")


class _WorkerDied(Exception):
    """The worker went away (crash, signal, closed pipe). Likely the worker's
    fault, not the request's, so the request is retried on another worker; if
    that one dies too, the kernel probably crashes the compiler."""


class _TimedOut(Exception):
    pass


def _describe(message: dict) -> str:
    if "id" in message:
        return f"kernel {message['id']}"
    return f"the {message.get('command', 'compile')} request"


class _Worker:
    """One `maia-compile --server` process (line-delimited JSON, in order).

    The pipes are unbuffered bytes watched with poll(), so that every reply
    (and every request, should the worker stop reading) has a deadline."""

    def __init__(self, path: str):
        self.process = subprocess.Popen(
            [path, "--server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, bufsize=0)
        os.set_blocking(self.process.stdin.fileno(), False)
        self.pending = b""  # bytes after the last reply (none from a well-behaved worker)

    def alive(self) -> bool:
        return self.process.poll() is None

    def request(self, message: dict, timeout: float) -> dict:
        """The reply to message; raises _WorkerDied, or MaiaCompileError on a
        timeout or a garbage reply (the caller discards the worker)."""
        deadline = time.monotonic() + timeout if timeout > 0 else None
        try:
            self._send((json.dumps(message) + "\n").encode(), deadline)
            line = self._receive_line(deadline)
        except _TimedOut:
            raise MaiaCompileError(
                f"maia-compile did not answer {_describe(message)} within {timeout:g} s (the "
                f"worker was killed; raise MAIA_COMPILE_TIMEOUT or "
                f"maia_inductor.compiler.compile_timeout if the kernel is just slow to "
                f"compile)") from None
        return _parse_reply(line, message)

    def _send(self, data: bytes, deadline: float | None) -> None:
        fd = self.process.stdin.fileno()
        while data:
            _wait_for(fd, select.POLLOUT, deadline)
            try:
                data = data[os.write(fd, data):]
            except BlockingIOError:
                continue
            except OSError as error:  # EPIPE: it is gone
                raise _WorkerDied(self._exit_status()) from error

    def _receive_line(self, deadline: float | None) -> bytes:
        fd = self.process.stdout.fileno()
        while b"\n" not in self.pending:
            _wait_for(fd, select.POLLIN, deadline)
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise _WorkerDied(self._exit_status())
            self.pending += chunk
        line, _, self.pending = self.pending.partition(b"\n")
        return line

    def _exit_status(self) -> str:
        """Why the worker went away, once it has (a worker that closed its
        output but lingers is killed: it is of no further use)."""
        try:
            code = self.process.wait(timeout=1)
        except subprocess.TimeoutExpired:
            self.kill()
            return "the compile worker closed its output"
        if code < 0:
            try:
                return f"the compile worker was killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"the compile worker was killed by signal {-code}"
        return f"the compile worker exited with status {code}"

    def kill(self) -> None:
        if self.alive():
            self.process.kill()
        self.process.wait()
        self._close_pipes()

    def abandon(self) -> None:
        """In a forked child: close this process's copies of the pipes (so
        the parent's worker still sees EOF when the parent closes them) and
        leave the process, the parent's, alone."""
        self._close_pipes()

    def _close_pipes(self) -> None:
        for pipe in (self.process.stdin, self.process.stdout):
            try:
                pipe.close()  # unbuffered: nothing is flushed, only the fd closed
            except OSError:
                pass


def _wait_for(fd: int, event: int, deadline: float | None) -> None:
    """Until fd is ready for event, or hung up (the read or write that follows
    then says so); raises _TimedOut at the deadline."""
    poller = select.poll()
    poller.register(fd, event)
    remaining = None if deadline is None else max(0.0, deadline - time.monotonic()) * 1000
    if not poller.poll(remaining):
        raise _TimedOut()


def _parse_reply(line: bytes, message: dict) -> dict:
    """A reply is a JSON object with a boolean "ok" and the request's id (or a
    null id on an error about a request the server could not read)."""
    try:
        reply = json.loads(line)
    except ValueError:
        reply = None
    if (isinstance(reply, dict) and isinstance(reply.get("ok"), bool)
            and (reply.get("id") == message.get("id")
                 or (reply.get("id") is None and not reply["ok"]))):
        return reply
    text = line.decode(errors="replace")
    quoted = repr(text[:200]) + (" ..." if len(text) > 200 else "")
    raise MaiaCompileError(f"maia-compile gave a malformed reply to {_describe(message)} "
                           f"(the worker was discarded): {quoted}")


def _cannot_start(path: str) -> str | None:
    """Why the compiler at path cannot run at all (its own words), or None
    if `--version` works. The workers' stderr is not read, so a compiler
    that the loader refuses (the wheel's maia-compile needs the system's
    LLVM and MLIR libraries) would otherwise look like a crashing kernel."""
    try:
        probe = subprocess.run([path, "--version"], stdin=subprocess.DEVNULL,
                               capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"maia-compile ({path}) cannot run: {error}"
    if probe.returncode == 0:
        return None
    said = " ".join(probe.stderr.strip().splitlines()[-3:]) or "no message"
    return (f"maia-compile ({path}) cannot run (exit status {probe.returncode}): {said} "
            f"(the torch_maia wheel's maia-compile also needs the system's LLVM 19 and "
            f"MLIR 19 libraries, Debian's libllvm19 and libmlir-19; docs/packaging.md)")


class WorkerPool:
    """Workers are started on demand, up to `size`. A worker that fails is
    discarded (killed) and its slot freed, which wakes a waiting thread; a
    request whose worker died is retried once on another worker.

    After os.fork() the child starts with an empty pool: the workers and their
    pipes belong to the parent, and the child talking to them would interleave
    its requests with the parent's."""

    _all: weakref.WeakSet[WorkerPool] = weakref.WeakSet()
    _abandoned: list[_Worker] = []

    def __init__(self, size: int):
        self.size = size
        self._reset()
        WorkerPool._all.add(self)

    def _reset(self) -> None:
        self.cond = threading.Condition()
        self.idle: list[_Worker] = []  # ready, most recently used last
        self.workers: set[_Worker] = set()  # idle or busy
        self.started = 0  # workers plus those being started

    def request(self, message: dict) -> dict:
        try:
            return self._request_once(message)
        except _WorkerDied:
            pass  # a crash, a kill, or the kernel crashes the compiler: a second worker tells
        try:
            return self._request_once(message)
        except _WorkerDied as died:
            # 127: what the dynamic loader exits with when a library is missing.
            if str(died).endswith("exited with status 127") and (
                    reason := _cannot_start(compiler_path())) is not None:
                raise MaiaCompileError(reason) from None
            raise MaiaCompileError(
                f"maia-compile died on {_describe(message)} twice, on two workers (last: "
                f"{died}); the kernel probably crashes the compiler") from None

    def _request_once(self, message: dict) -> dict:
        worker = self._acquire()
        try:
            reply = worker.request(message, compile_timeout)
        except BaseException:
            self._discard(worker)  # dead, or out of sync (its reply may still come)
            raise
        self._release(worker)
        return reply

    def _acquire(self) -> _Worker:
        with self.cond:
            while True:
                while self.idle:
                    worker = self.idle.pop()
                    if worker.alive():
                        return worker
                    worker.kill()  # reaps it
                    self._forget(worker)  # died while idle: start another below
                if self.started < self.size:
                    self.started += 1
                    break
                self.cond.wait()
        try:
            worker = _Worker(compiler_path())
        except BaseException:
            with self.cond:
                self.started -= 1
                self.cond.notify()
            raise
        with self.cond:
            self.workers.add(worker)
        return worker

    def _release(self, worker: _Worker) -> None:
        with self.cond:
            self.idle.append(worker)
            self.cond.notify()

    def _discard(self, worker: _Worker) -> None:
        worker.kill()
        with self.cond:
            self._forget(worker)

    def _forget(self, worker: _Worker) -> None:
        """Frees worker's slot (cond held) and wakes a waiter to take it."""
        self.workers.discard(worker)
        self.started -= 1
        self.cond.notify()

    def _after_fork_in_child(self) -> None:
        # Another thread of the parent may have held the lock at fork time:
        # _reset makes a new one rather than taking it.
        inherited = self.workers
        self._reset()
        for worker in inherited:
            worker.abandon()
        # Kept so that no Popen.__del__ looks at the parent's processes.
        WorkerPool._abandoned.extend(inherited)


def _reset_pools_after_fork() -> None:
    for pool in list(WorkerPool._all):
        pool._after_fork_in_child()


os.register_at_fork(after_in_child=_reset_pools_after_fork)

_pool = WorkerPool(max(1, min(4, os.cpu_count() or 1)))


@lru_cache(None)
def compiler_identity() -> dict:
    """{"version": ..., "host_cpu": ...} of the compiler binary in use."""
    reply = _pool.request({"command": "version"})
    if not reply.get("ok"):
        raise MaiaCompileError(f"maia-compile did not report its version: {reply}")
    return {"version": reply["version"], "host_cpu": reply["host_cpu"]}


def cache_dir() -> Path:
    from torch._inductor.runtime.cache_dir_utils import cache_dir as inductor_cache_dir

    return Path(inductor_cache_dir()) / "maia"


def compile_settings() -> dict:
    """The configuration a compile uses, read where the compile is asked
    for: values set with config.patch hold for the thread that set them, and
    kernels compile on MaiaAsyncCompile's threads."""
    from . import config

    return {"options": {"opt_level": config.opt_level}, "dump_dir": config.dump_dir}


def cache_key(source: str, options: dict) -> str:
    identity = compiler_identity()
    payload = json.dumps([source, options, identity["version"], identity["host_cpu"]])
    return hashlib.sha256(payload.encode()).hexdigest()


def compile_to_binary(name: str, source: str, settings: dict | None = None) -> Path:
    """The cached binary of kernel name (source is its MLIR), compiled if
    needed, with settings from compile_settings() (read now by default).
    Errors name the kernel and keep the MLIR that failed."""
    settings = settings or compile_settings()
    options = settings["options"]
    key = cache_key(source, options)
    directory = cache_dir() / key[:2]
    binary = directory / f"{key}.maiabin"
    if not binary.exists():
        directory.mkdir(parents=True, exist_ok=True)
        with FileLock(str(binary) + ".lock"):
            if not binary.exists():
                reply = _pool.request({"id": name, "source": source,
                                       "source_name": f"{name}.mlir", "output": str(binary),
                                       **options})
                if not reply.get("ok"):
                    kept = directory / f"{name}.failed.mlir"
                    kept.write_text(source)
                    raise MaiaCompileError(
                        f"maia-compile failed on the fused group {name} (MLIR kept in {kept}):\n"
                        f"{reply.get('diagnostics') or reply.get('error')}")
    _dump(name, source, binary, settings["dump_dir"])
    return binary


def _dump(name: str, source: str, binary: Path, dump_dir: str) -> None:
    if not dump_dir:
        return
    target = Path(dump_dir)
    target.mkdir(parents=True, exist_ok=True)
    (target / f"{name}.mlir").write_text(source)
    shutil.copyfile(binary, target / f"{name}.maiabin")
