"""What generated wrapper code calls at run time: asynchronous compilation,
kernel launch, launch grids and the raw stream.

Kept free of Inductor imports so that loading a cached graph stays cheap.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor

import torch
from torch_maia import _C

from .eager_fallbacks import exact_twins, twins
from .mlir_types import VL

# Compiled graphs call these (also when loaded from the cache).
twins()
exact_twins()


class MaiaCompiledKernel:
    """A loaded kernel of a compiled graph."""

    __slots__ = ("name", "path", "_module", "_kernel")
    # Launches of compiled kernels in this process, for tests and tools that
    # must know a MAIA kernel (not an extern or host path) did the work.
    launches = 0

    def __init__(self, name: str, path: str):
        from torch_maia import _C

        self.name = name
        self.path = path
        self._module = _C._UserModule(path)
        self._kernel = _C._CompiledKernel(self._module, name)

    def run(self, grid, *args):
        if grid[0] > 0:
            self._kernel.run(grid, *args)
            MaiaCompiledKernel.launches += 1

    def __repr__(self):
        return f"<maia compiled kernel {self.name} ({self.path})>"


# How work splits into programs is decided in one place for eager operators
# and compiled kernels alike: runtime/torch/csrc/WorkSplit.h, bound in _C.
def maia_pointwise_grid(numel: int, inner: int, reduction_numel: int = 1):
    """(row programs, chunk programs) for a kernel whose lanes walk x: a
    pointwise kernel, or an outer reduction (reduction_numel per element)."""
    return _C._pointwise_grid(numel, inner, reduction_numel, VL)


def maia_reduction_grid(xnumel: int, rnumel: int):
    """(programs,) for a reduction kernel: programs over contiguous blocks of x."""
    return _C._reduction_grid(xnumel, rnumel)


def get_raw_stream(device_index: int) -> int:
    return torch.maia.current_stream(device_index).stream_id


class MaiaAsyncCompile:
    """Compiles a graph's kernels on a thread pool (the work happens in the
    compile workers, so the threads mostly wait) while Inductor continues."""

    _executor: ThreadPoolExecutor | None = None

    @classmethod
    def executor(cls) -> ThreadPoolExecutor:
        if cls._executor is None:
            cls._executor = ThreadPoolExecutor(4, thread_name_prefix="maia-compile")
        return cls._executor

    def kernel(self, name: str, source: str) -> Future:
        from .compiler import compile_settings

        # Read here: config.patch values hold for this thread only.
        return self.executor().submit(_load, name, source, compile_settings())

    def wait(self, scope: dict) -> None:
        for key, value in list(scope.items()):
            if isinstance(value, Future):
                scope[key] = value.result()


def _load(name: str, source: str, settings: dict) -> MaiaCompiledKernel:
    from .compiler import compile_to_binary

    return MaiaCompiledKernel(name, str(compile_to_binary(name, source, settings)))
