"""The MAIA compiler as Inductor sees it: a pool of long-lived
`maia-compile --server` workers and an on-disk cache of kernel binaries.

A binary is cached under Inductor's cache dir (maia/<key[:2]>/<key>.maiabin)
keyed by sha256 of (MLIR text, compile options, compiler version, target
CPU); the worker writes it atomically (temp file + rename) and a file lock
keeps two processes from compiling the same kernel twice. On an FX graph
cache hit the wrapper module re-runs its compile calls, so a hit here costs
one stat() and one dlopen.
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import shutil
import subprocess
import threading
from functools import lru_cache
from pathlib import Path

from filelock import FileLock


class MaiaCompileError(RuntimeError):
    pass


def compiler_path() -> str:
    candidates = [os.environ.get("MAIA_COMPILE")]
    root = Path(__file__).resolve().parents[2]
    candidates.append(str(root / "build" / "release" / "bin" / "maia-compile"))
    candidates.append(shutil.which("maia-compile"))
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise MaiaCompileError("the MAIA compiler (maia-compile) was not found: build it "
                           "(tools/setup.sh) or set MAIA_COMPILE to its path")


class _Worker:
    """One `maia-compile --server` process (line-delimited JSON, in order)."""

    def __init__(self, path: str):
        self.process = subprocess.Popen(
            [path, "--server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, text=True, bufsize=1)

    def request(self, message: dict) -> dict:
        if self.process.poll() is not None:
            raise MaiaCompileError(f"the compile worker exited with status "
                                   f"{self.process.returncode}")
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise MaiaCompileError("the compile worker closed its output")
        return json.loads(line)

    def close(self):
        if self.process.poll() is None:
            try:
                self.process.stdin.close()
                self.process.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()


class WorkerPool:
    """Workers are started on demand, up to `size`; a broken one is replaced."""

    def __init__(self, size: int):
        self.size = size
        self.idle: queue.LifoQueue[_Worker] = queue.LifoQueue()
        self.started = 0
        self.lock = threading.Lock()

    def request(self, message: dict) -> dict:
        worker = self._acquire()
        try:
            reply = worker.request(message)
        except Exception:
            worker.close()
            with self.lock:
                self.started -= 1
            raise
        self.idle.put(worker)
        return reply

    def _acquire(self) -> _Worker:
        try:
            return self.idle.get_nowait()
        except queue.Empty:
            pass
        with self.lock:
            if self.started < self.size:
                self.started += 1
                try:
                    return _Worker(compiler_path())
                except Exception:
                    self.started -= 1
                    raise
        return self.idle.get()


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


def compile_options() -> dict:
    from . import config

    return {"opt_level": config.opt_level}


def cache_key(source: str, options: dict) -> str:
    identity = compiler_identity()
    payload = json.dumps([source, options, identity["version"], identity["host_cpu"]])
    return hashlib.sha256(payload.encode()).hexdigest()


def compile_to_binary(name: str, source: str) -> Path:
    """The cached binary of kernel name (source is its MLIR), compiled if
    needed. Errors name the kernel and keep the MLIR that failed."""
    options = compile_options()
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
    _dump(name, source, binary)
    return binary


def _dump(name: str, source: str, binary: Path) -> None:
    from . import config

    if not config.dump_dir:
        return
    target = Path(config.dump_dir)
    target.mkdir(parents=True, exist_ok=True)
    (target / f"{name}.mlir").write_text(source)
    shutil.copyfile(binary, target / f"{name}.maiabin")
