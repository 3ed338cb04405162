#!/usr/bin/env python3
"""Writes the metadata of a GEMM kernel binary: the kernel table below,
whose entry points gemm_kernels.cpp defines.

Usage: gen_gemm_metadata.py OUT_DIR ISA   (ISA: the -march level, e.g. x86-64-v4)
Writes OUT_DIR/metadata.gen.cpp. gemm_<dtype>(A, B, C, alpha, beta): A, B, C
rank-3 memrefs of the dtype with dynamic strides, alpha and beta f32
scalars (f64 for f64, i64 for the integers); the grid is rank 3 (rows, columns, batch)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from kernel_binary_gen import DTYPES, kernel, memref, scalar, write_binary_sources  # noqa: E402

# Each GEMM dtype (kernel-name suffix) and the type of its alpha and beta.
GEMM_DTYPES = {"f32": "f32", "bf16": "f32", "f16": "f32", "f64": "f64",
               "i64": "i64", "i32": "i64", "i16": "i64", "i8": "i64", "u8": "i64"}


def main(out_dir, isa):
    metadata_dtype = {suffix: meta for suffix, _, meta, _ in DTYPES}
    kernels = [kernel(f"gemm_{suffix}",
                      [memref(metadata_dtype[suffix], 3)] * 3 + [scalar(scalar_type)] * 2,
                      grid_rank=3)
               for suffix, scalar_type in GEMM_DTYPES.items()]
    write_binary_sources(out_dir, isa, "gen_gemm_metadata.py", kernels, {})


if __name__ == "__main__":
    main(*sys.argv[1:])
