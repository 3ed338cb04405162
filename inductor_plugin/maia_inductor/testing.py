"""Helpers to look at what torch.compile generates for maia (tests, debugging).

    kernels = maia_inductor.testing.compiled_kernels(fn, x, y)
    for kernel in kernels: print(kernel.mlir)
"""

from __future__ import annotations

import dataclasses
import re

_KERNEL = re.compile(r"^(?P<name>\w+) = maia_async_compile\.kernel\('(?P=name)', '''\n"
                     r"(?P<mlir>.*?)\n'''\)", re.S | re.M)


@dataclasses.dataclass
class CompiledKernelSource:
    name: str
    mlir: str


def kernels_in_wrapper(wrapper_code: str) -> list[CompiledKernelSource]:
    """The MAIA kernels defined in the Python wrapper of a compiled graph."""
    return [CompiledKernelSource(m["name"], m["mlir"]) for m in _KERNEL.finditer(wrapper_code)]


def compiled_kernels(fn, *args, **compile_options):
    """Compiles fn for maia, runs it on args and returns (result, kernels),
    kernels being those of every graph compiled on the way."""
    import torch
    from torch._inductor.utils import run_and_get_code

    torch._dynamo.reset()
    result, codes = run_and_get_code(torch.compile(fn, **compile_options), *args)
    kernels = [kernel for code in codes for kernel in kernels_in_wrapper(code)]
    return result, kernels
