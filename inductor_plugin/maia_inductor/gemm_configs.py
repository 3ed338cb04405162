"""Tile configurations of the GEMM template kernels (gemm_kernel.py): the
blocks of C per micro-kernel call and how the grid splits C. The default
is what every compile uses; mode="max-autotune" times the others and the
extern kernel on the device (gemm_autotune.py). Kept free of Inductor
imports, like gemm_grid.py."""

from __future__ import annotations

import dataclasses

# What a product becomes when it is the eager GEMM's call (extern_kernels.mm
# or .bmm) and its epilogue a kernel of its own.
EXTERN = "extern"


@dataclasses.dataclass(frozen=True)
class GemmConfig:
    """The block of C per micro-kernel call, at most: rows x columns, the
    epilogue reading the block back from cache. The micro-kernel packs a
    column block's panel of B (all of K) once and reuses it for every row
    block, so rows cost only A's packing (1/columns per multiply-add); the
    packed panel is held to `packed_b_floats` by narrowing the column
    blocks for deep products. `split`: which side of C the grid's programs
    divide: "auto" the longer one (the eager GEMM's policy, gemm_grid.py),
    or always "rows" / "cols"."""

    name: str
    block_rows: int = 252
    block_cols: int = 2048
    packed_b_floats: int = 1 << 20  # 4 MiB of fp32: stays in L3 beside the other core's
    split: str = "auto"


DEFAULT = GemmConfig("default")
# What max-autotune chooses among, with EXTERN: the default, each split
# forced, narrower blocks (the epilogue reads the block back from L2) and
# wider ones (fewer calls, a panel of B up to 8 MiB).
CONFIGS = (
    DEFAULT,
    GemmConfig("rows", split="rows"),
    GemmConfig("cols", split="cols"),
    GemmConfig("small", block_rows=126, block_cols=512),
    GemmConfig("large", block_rows=504, block_cols=4096, packed_b_floats=1 << 21),
)
CHOICE_NAMES = tuple(c.name for c in CONFIGS) + (EXTERN,)


def config_named(name: str):
    """The config (or EXTERN) called name; a clear error for anything else."""
    if name == EXTERN:
        return EXTERN
    for config in CONFIGS:
        if config.name == name:
            return config
    raise ValueError(f"maia: unknown GEMM template config {name!r} "
                     f"(MAIA_INDUCTOR_GEMM_CONFIG / maia_inductor.config.gemm_config); "
                     f"one of {', '.join(CHOICE_NAMES)}")
