"""The launch grid of GEMM template kernels (gemm_template.py), computed at
compile time for static shapes and by the wrapper at run time for dynamic
ones. Kept free of Inductor imports, like runtime.py, so that loading a
cached graph stays cheap."""

from __future__ import annotations

import functools

# The micro-kernel's register tile with AVX-512 (runtime/kernels/gemm/
# microkernel.h): a program's share of C is counted in these.
TILE_ROWS, TILE_COLS = 14, 32


@functools.lru_cache(None)
def _core_count(device_index: int) -> int:
    import torch

    return int(torch.maia.get_device_properties(device_index)["core_count"])


def maia_gemm_grid(m: int, n: int, k: int, device_index: int = 0, split: str = "auto"):
    """(row programs, column programs) for an M x N x K template kernel
    (M counting the rows of every batch of a bmm): the eager GEMM's policy
    (runtime/kernels/gemm/gemm_launch.h). One program per core, split along
    the longer side of C counted in micro-tiles (split="auto"; "rows" or
    "cols" force a side: gemm_configs.py), since each program packs its own
    panels; one program for tiny products, where handing work to a second
    core costs more than it saves."""
    cores = _core_count(device_index)
    if m <= 0 or n <= 0:
        return (0, 1)
    if cores <= 1 or m * n * max(k, 1) < 64 * 64 * 64:
        return (1, 1)
    if split == "auto":
        split = "rows" if -(-m // TILE_ROWS) >= -(-n // TILE_COLS) else "cols"
    if split == "rows":
        return (min(cores, m), 1)
    # Column programs take chunks of whole 16-lane vectors.
    return (1, min(cores, -(-n // 16)))
