"""Helpers to look at what torch.compile generates for maia (tests, debugging).

    result, kernels = maia_inductor.testing.compiled_kernels(fn, x, y)
    for kernel in kernels: print(kernel.mlir)
"""

from __future__ import annotations

import contextlib
import dataclasses


@dataclasses.dataclass
class CompiledKernelSource:
    name: str
    mlir: str


@contextlib.contextmanager
def capture_kernel_sources():
    """Collects the MLIR of every kernel the scheduler defines meanwhile."""
    from .scheduling import kernel_source_observers

    kernels: list[CompiledKernelSource] = []

    def observe(name, mlir):
        kernels.append(CompiledKernelSource(name, mlir))

    kernel_source_observers.append(observe)
    try:
        yield kernels
    finally:
        kernel_source_observers.remove(observe)


def compiled_kernels(fn, *args, **compile_options):
    """Compiles fn for maia (no cache: every kernel is generated), runs it on
    args and returns (result, kernels), kernels being those of every graph
    compiled on the way."""
    import torch
    from torch._inductor import config

    torch._dynamo.reset()
    with config.patch(force_disable_caches=True), capture_kernel_sources() as kernels:
        result = torch.compile(fn, **compile_options)(*args)
    return result, kernels
