"""Large float32 reductions on maia: time and accuracy, for one kernel
directory or two alternated in the same run (a baseline build's kernels
against this build's: the reduce kernels are a binary of their own).

Each configuration runs in a fresh process (MAIA_KERNEL_DIR is read when
torch_maia loads), --rounds times alternating; the time of a case is its
best of 15 calls. Accuracy: the max abs error against the float64 sum of
the same values, beside the CPU's (PyTorch's cascade sums) and one ulp of
the largest result.

Usage: reduce_bench.py [--kernel-dir DIR] [--baseline-kernel-dir DIR] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ELEMENTS = 16 * 1024 * 1024
# name: (view of the 16M elements, reduction)
CASES = {
    "sum all 16M": ((ELEMENTS,), "sum", None),
    "sum(dim=1) 4096x4096": ((4096, 4096), "sum", 1),
    "sum(dim=0) 4096x4096": ((4096, 4096), "sum", 0),
    "sum(dim=0) 262144x64": ((262144, 64), "sum", 0),
    "mean(dim=1) 64x262144": ((64, 262144), "mean", 1),
    "norm 16M": ((ELEMENTS,), "norm", None),
}
ACCURACY = {  # (shape, dim) of randn + 3 float32 values
    "sum(dim=0) 100000x4": ((100000, 4), 0),
    "sum(dim=1) 4x100000": ((4, 100000), 1),
    "sum(dim=0) 6150x3": ((6150, 3), 0),
}


def child() -> None:
    import time

    import torch

    def reduce(t, op, dim):
        if op == "norm":
            return torch.linalg.vector_norm(t) if dim is None else torch.linalg.vector_norm(
                t, dim=dim)
        return getattr(t, op)() if dim is None else getattr(t, op)(dim)

    torch.manual_seed(0)
    data = torch.randn(ELEMENTS, device="maia")
    result = {}
    for name, (shape, op, dim) in CASES.items():
        view = data.view(shape)
        best = float("inf")
        for _ in range(15):
            torch.maia.synchronize()
            start = time.perf_counter()
            reduce(view, op, dim)
            torch.maia.synchronize()
            best = min(best, time.perf_counter() - start)
        result[name] = best
    for name, (shape, dim) in ACCURACY.items():
        x = torch.randn(shape) + 3
        exact = x.double().sum(dim)
        result[name] = {
            "maia": (x.to("maia").sum(dim).cpu().double() - exact).abs().max().item(),
            "cpu": (x.sum(dim).double() - exact).abs().max().item(),
            "ulp": exact.abs().max().item() * torch.finfo(torch.float32).eps}
    print(json.dumps(result))


def run(kernel_dir: str) -> dict:
    env = dict(os.environ, MAIA_KERNEL_DIR=kernel_dir)
    env.setdefault("MAIA_DEVICE_MEMORY", "2G")
    out = subprocess.run([sys.executable, __file__, "--child"], env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    if "--child" in sys.argv:
        child()
        return
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kernel-dir", default=str(ROOT / "build" / "release" / "kernels"))
    parser.add_argument("--baseline-kernel-dir")
    parser.add_argument("--rounds", type=int, default=2)
    options = parser.parse_args()
    dirs = {"this": options.kernel_dir}
    if options.baseline_kernel_dir:
        dirs = {"baseline": options.baseline_kernel_dir, **dirs}
    runs = {label: [] for label in dirs}
    for _ in range(options.rounds):
        for label, directory in dirs.items():
            runs[label].append(run(directory))
    labels = list(dirs)
    print("case                       " + "".join(f"{label + ' ms':>22}" for label in labels))
    for name in CASES:
        cells = []
        for label in labels:
            times = sorted(r[name] * 1e3 for r in runs[label])
            cells.append(f"{times[0]:.2f}-{times[-1]:.2f} ({ELEMENTS * 4 / times[0] / 1e6:.0f} GB/s)")
        print(f"{name:26} " + "".join(f"{c:>22}" for c in cells))
    print("\naccuracy (max abs error vs float64)  cpu        " +
          "".join(f"{label:>12}" for label in labels) + "        ulp")
    for name in ACCURACY:
        first = runs[labels[0]][0][name]
        cells = "".join(f"{runs[label][0][name]['maia']:12.2e}" for label in labels)
        print(f"{name:36} {first['cpu']:.2e} {cells}   {first['ulp']:.2e}")


if __name__ == "__main__":
    main()
