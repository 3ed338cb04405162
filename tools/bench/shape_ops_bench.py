"""Eager maia vs eager CPU for the ops that left the host fallback in issue
15's kernels commit (sort, topk, roll, flip, interpolate, glu, prelu),
measured in the same run with eager_bench.py's interleaved rounds (best
round; a round is N calls plus a final synchronize). The CPU runs with its
default thread count. Prints a table: CPU ms, maia ms, maia / CPU.

Usage: python tools/bench/shape_ops_bench.py [--rounds N]
"""

import argparse
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from eager_bench import interleaved  # noqa: E402

CASES = {  # name: (calls per round, fn of a dict of inputs)
    "sort (256, 4096) dim 1, stable": (3, lambda t: torch.sort(t["rows"], dim=1, stable=True)),
    "sort (1M,) one slice": (1, lambda t: torch.sort(t["line"])),
    "topk (256, 4096) k=10": (3, lambda t: torch.topk(t["rows"], 10)),
    "roll (64, 1024, 64) dims 0, 1": (3, lambda t: torch.roll(t["cube"], (3, -5), (0, 1))),
    "flip (64, 1024, 64) dim 1": (3, lambda t: torch.flip(t["cube"], (1,))),
    "interpolate nearest x2 (8, 32, 128, 128)":
        (2, lambda t: F.interpolate(t["image"], scale_factor=2)),
    "interpolate bilinear x2 (8, 32, 128, 128)":
        (2, lambda t: F.interpolate(t["image"], scale_factor=2, mode="bilinear")),
    "glu (4096, 2048)": (3, lambda t: F.glu(t["rows2"])),
    "prelu (8, 32, 128, 128)": (3, lambda t: F.prelu(t["image"], t["weight"])),
}


def inputs(device):
    g = torch.Generator().manual_seed(0)
    host = {
        "rows": torch.randn(256, 4096, generator=g),
        "line": torch.randn(1_000_000, generator=g),
        "cube": torch.randn(64, 1024, 64, generator=g),
        "image": torch.randn(8, 32, 128, 128, generator=g),
        "rows2": torch.randn(4096, 2048, generator=g),
        "weight": torch.rand(32, generator=g),
    }
    return {k: v.to(device) for k, v in host.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    cpu, maia = inputs("cpu"), inputs("maia")
    print(f"{'op':44} {'CPU ms':>9} {'maia ms':>9} {'maia/CPU':>9}")
    for name, (calls, fn) in CASES.items():
        cpu_s, maia_s = interleaved(lambda: fn(cpu), lambda: fn(maia), calls, rounds=args.rounds)
        print(f"{name:44} {cpu_s * 1e3:9.2f} {maia_s * 1e3:9.2f} {maia_s / cpu_s:9.2f}")


if __name__ == "__main__":
    main()
