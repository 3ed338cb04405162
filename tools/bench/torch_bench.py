"""PyTorch-level maia benchmarks, each a ratio against a baseline measured in
the same run (interleaved, best of N):

- dispatch: a trivial custom operator with identical CPU, PrivateUse1 and
  in-tree MAIA kernels, called on a maia (PrivateUse1) tensor vs a tensor of
  the in-tree MAIA dispatch key (what an in-tree integration dispatches on:
  the question "is PrivateUse1 slower than an in-tree key?"), and vs a CPU
  tensor (target ratio <= 1.05 for both);
- alloc: allocate + free a small tensor, maia caching allocator vs the CPU
  allocator (target <= 1.2);
- import: `import torch` with maia autoloaded vs with autoload disabled
  (target: at most 100 ms more).

Usage: python tools/bench/torch_bench.py [--json FILE] [--ops-library PATH]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import torch


def interleaved(base, candidate, rounds=15, calls=20000):
    """Best per-call time (ns) of base and candidate, measured alternately."""
    best_base = best_candidate = float("inf")
    for _ in range(rounds):
        for fn, slot in ((base, 0), (candidate, 1)):
            start = time.perf_counter_ns()
            for _ in range(calls):
                fn()
            per_call = (time.perf_counter_ns() - start) / calls
            if slot == 0:
                best_base = min(best_base, per_call)
            else:
                best_candidate = min(best_candidate, per_call)
    return best_base, best_candidate


def bench_dispatch(library):
    """(in-tree MAIA key, PrivateUse1) and (CPU, PrivateUse1) per-call ns."""
    torch.ops.load_library(library)
    noop = torch.ops.maia_bench.noop.default
    cpu = torch.ones(4)
    in_tree = torch.ops.maia_bench.in_tree_maia_tensor(cpu)
    maia = torch.ones(4, device="maia")
    return (interleaved(lambda: noop(in_tree), lambda: noop(maia)),
            interleaved(lambda: noop(cpu), lambda: noop(maia)))


def bench_alloc():
    torch.empty(256, device="maia")  # warm the cache
    cpu, maia = torch.device("cpu"), torch.device("maia:0")
    return interleaved(lambda: torch.empty(256, device=cpu),
                       lambda: torch.empty(256, device=maia))


def bench_import(rounds=9):
    """Best wall time of `import torch` with and without maia autoloaded, and
    the cumulative import time of torch_maia itself (python -X importtime)."""

    def timed(autoload):
        env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="1" if autoload else "0")
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import torch"], env=env, check=True)
        return (time.perf_counter() - start) * 1e3

    without, with_maia = [], []
    for _ in range(rounds):
        without.append(timed(False))
        with_maia.append(timed(True))
    trace = subprocess.run([sys.executable, "-X", "importtime", "-c", "import torch"],
                           capture_output=True, text=True, check=True).stderr
    # Top-level torch_maia entries (children are inside their parents' time).
    entries = [line.split("|") for line in trace.splitlines() if "torch_maia" in line]
    depth = min((len(e[2]) - len(e[2].lstrip()) for e in entries), default=0)
    own_us = sum(int(e[1]) for e in entries if len(e[2]) - len(e[2].lstrip()) == depth)
    return min(without), min(with_maia), own_us / 1e3


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--json")
    parser.add_argument("--ops-library", required=True,
                        help="path of libmaia_dispatch_bench_ops.so")
    args = parser.parse_args()
    results = []

    def report(name, unit, baseline_name, baseline, value, target, ratio=None):
        ratio = value / baseline if ratio is None else ratio
        results.append(dict(name=name, unit=unit, baseline_name=baseline_name,
                            baseline=baseline, value=value, ratio=ratio, target=target))
        print(f"{name:42s} {value:9.1f} {unit} | {baseline_name:30s} {baseline:9.1f} {unit}"
              f" | ratio {ratio:5.3f} (target {target})")

    (in_tree_ns, maia_ns), (cpu_ns, maia_cpu_run_ns) = bench_dispatch(args.ops_library)
    report("custom op dispatch, maia (PrivateUse1)", "ns", "same op, in-tree MAIA key",
           in_tree_ns, maia_ns, "<= 1.05")
    report("custom op dispatch, maia (PrivateUse1)", "ns", "same op, CPU tensor", cpu_ns,
           maia_cpu_run_ns, "<= 1.05")
    cpu_ns, maia_ns = bench_alloc()
    report("torch.empty(256) + free, maia", "ns", "torch.empty(256) + free, CPU", cpu_ns,
           maia_ns, "<= 1.2")
    without, with_maia, own_ms = bench_import()
    report("import torch, maia autoloaded", "ms", "import torch, autoload off", without,
           with_maia, "<= +100 ms", ratio=with_maia / without)
    print(f"  import overhead: {with_maia - without:+.1f} ms wall (best of 9 each); "
          f"torch_maia's own cumulative import time: {own_ms:.1f} ms")
    results.append(dict(name="torch_maia cumulative import time", unit="ms", value=own_ms))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"benchmark": "torch_bench", "torch": torch.__version__,
                       "results": results}, f, indent=2)


if __name__ == "__main__":
    main()
