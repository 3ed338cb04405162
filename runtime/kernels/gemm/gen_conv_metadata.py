#!/usr/bin/env python3
"""Writes the metadata of a convolution kernel binary: the kernel table
below, whose entry points conv_kernels.cpp defines.

Usage: gen_conv_metadata.py OUT_DIR ISA   (ISA: the -march level, e.g. x86-64-v4)
Writes OUT_DIR/metadata.gen.cpp. conv2d_f32(out, input, weight, bias, kh, kw,
sh, sw, ph, pw, dh, dw, channels_inner, has_bias): out and input rank-4,
weight rank-2 ([K, O]), bias rank-1 f32 memrefs with dynamic strides, then
i64 scalars; the grid is rank 2 (pixels, output channels)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from kernel_binary_gen import kernel, memref, scalar, write_binary_sources  # noqa: E402


def main(out_dir, isa):
    args = ([memref("f32", 4)] * 2 + [memref("f32", 2), memref("f32", 1)] +
            [scalar("i64")] * 10)
    write_binary_sources(out_dir, isa, "gen_conv_metadata.py",
                         [kernel("conv2d_f32", args, grid_rank=2)], {})


if __name__ == "__main__":
    main(*sys.argv[1:])
