"""float32 transcendental activations, eager and compiled, maia vs the CPU:
exp, sigmoid, silu, softmax (plain and with a causal mask: half the lanes
-inf), gelu (erf and tanh), tanh at 64K and 4M
elements, for one build or a baseline build and this one alternated in the
same run (--baseline-kernel-dir/--baseline-compile: the eager kernel
binaries and maia-compile of another build).

Each configuration runs in a fresh process (MAIA_KERNEL_DIR and
MAIA_COMPILE are read at load), --rounds times alternating; a case's time
is its best of 30 calls (call + synchronize), the range over the rounds is
printed. The CPU columns (eager torch, Inductor CPU, torch's own threads:
as many as maia's cores) come from the first configuration's processes.

Usage: math_bench.py [--baseline-kernel-dir DIR --baseline-compile PATH] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SIZES = {"64K": 1 << 16, "4M": 1 << 22}
OPS = ["exp", "sigmoid", "silu", "softmax", "softmax_causal", "gelu", "gelu_tanh", "tanh"]


def op_function(name: str):
    import torch
    import torch.nn.functional as F

    return {"exp": torch.exp, "sigmoid": torch.sigmoid, "silu": F.silu,
            "softmax": lambda t: torch.softmax(t.view(-1, 1024), -1),
            # attention's causal mask: half the lanes -inf
            "softmax_causal": lambda t: torch.softmax(t.view(-1, 64, 64).masked_fill(
                torch.ones(64, 64, dtype=torch.bool, device=t.device).triu(1), float("-inf")),
                -1),
            "gelu": F.gelu, "gelu_tanh": lambda t: F.gelu(t, approximate="tanh"),
            "tanh": torch.tanh}[name]


def best_time(fn, x, sync) -> float:
    import time

    for _ in range(5):
        fn(x)
    sync()
    best = float("inf")
    for _ in range(30):
        start = time.perf_counter()
        fn(x)
        sync()
        best = min(best, time.perf_counter() - start)
    return best


def child(with_cpu: bool) -> None:
    import torch

    torch.manual_seed(0)
    torch.set_num_threads(int(torch.maia.get_device_properties(0)["core_count"]))
    result = {}
    devices = ["maia", "cpu"] if with_cpu else ["maia"]
    for device in devices:
        sync = torch.maia.synchronize if device == "maia" else (lambda: None)
        for size_name, size in SIZES.items():
            x = torch.randn(size, device=device)
            for op in OPS:
                fn = op_function(op)
                result[f"{device} eager {op} {size_name}"] = best_time(fn, x, sync)
                torch._dynamo.reset()
                result[f"{device} compiled {op} {size_name}"] = best_time(
                    torch.compile(fn, dynamic=False), x, sync)
    print(json.dumps(result))


def run(kernel_dir: str, compiler: str, with_cpu: bool) -> dict:
    env = dict(os.environ, MAIA_KERNEL_DIR=kernel_dir, MAIA_COMPILE=compiler)
    env.setdefault("MAIA_DEVICE_MEMORY", "2G")
    # A fresh Inductor cache per process: the compiled kernels of the two
    # builds must not be shared.
    with tempfile.TemporaryDirectory() as cache:
        env["TORCHINDUCTOR_CACHE_DIR"] = cache
        command = [sys.executable, __file__, "--child"] + (["--with-cpu"] if with_cpu else [])
        out = subprocess.run(command, env=env, check=True, capture_output=True,
                             text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    if "--child" in sys.argv:
        child("--with-cpu" in sys.argv)
        return
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    build = ROOT / "build" / "release"
    parser.add_argument("--kernel-dir", default=str(build / "kernels"))
    parser.add_argument("--compile", default=str(build / "bin" / "maia-compile"))
    parser.add_argument("--baseline-kernel-dir")
    parser.add_argument("--baseline-compile")
    parser.add_argument("--rounds", type=int, default=2)
    options = parser.parse_args()
    configs = {"this": (options.kernel_dir, options.compile)}
    if options.baseline_kernel_dir:
        configs = {"baseline": (options.baseline_kernel_dir,
                                options.baseline_compile or options.compile), **configs}
    runs = {label: [] for label in configs}
    for _ in range(options.rounds):
        for index, (label, (kernels, compiler)) in enumerate(configs.items()):
            runs[label].append(run(kernels, compiler, with_cpu=index == 0))
    first = runs[next(iter(configs))]
    labels = list(configs)
    print(f"{'case':28}{'cpu us':>10}" + "".join(f"{label + ' us':>20}" for label in labels)
          + "   maia / cpu")
    for mode in ("eager", "compiled"):
        for size_name in SIZES:
            for op in OPS:
                key = f"{mode} {op} {size_name}"
                cpu = min(r[f"cpu {key}"] for r in first) * 1e6
                cells, last = [], 0.0
                for label in labels:
                    times = sorted(r[f"maia {key}"] * 1e6 for r in runs[label])
                    cells.append(f"{times[0]:.1f}-{times[-1]:.1f}")
                    last = times[0]
                print(f"{key:28}{cpu:10.1f}" + "".join(f"{c:>20}" for c in cells)
                      + f"{last / cpu:13.2f}")


if __name__ == "__main__":
    main()
