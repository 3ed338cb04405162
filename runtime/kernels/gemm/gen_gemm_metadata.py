#!/usr/bin/env python3
"""Writes the metadata of a GEMM kernel binary: the kernel table below,
whose entry points gemm_kernels.cpp defines.

Usage: gen_gemm_metadata.py OUT_DIR ISA   (ISA: the -march level, e.g. x86-64-v4)
Writes OUT_DIR/metadata.gen.cpp. gemm_<dtype>(A, B, C, alpha, beta): A, B, C
rank-3 memrefs of the dtype with dynamic strides, alpha and beta f32
scalars; the grid is rank 3 (rows, columns, batch)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from kernel_binary_gen import kernel, memref, scalar, write_binary_sources  # noqa: E402

GEMM_DTYPES = ["f32", "bf16", "f16"]


def main(out_dir, isa):
    kernels = [kernel(f"gemm_{dtype}", [memref(dtype, 3)] * 3 + [scalar("f32")] * 2, grid_rank=3)
               for dtype in GEMM_DTYPES]
    write_binary_sources(out_dir, isa, "gen_gemm_metadata.py", kernels, {})


if __name__ == "__main__":
    main(*sys.argv[1:])
