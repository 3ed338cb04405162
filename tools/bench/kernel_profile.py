"""Device time per kernel of one zoo model on maia, compiled or eager: the
profiler's maia activity (ProfilerActivity.PrivateUse1) over --rounds
forward calls, each kernel's minimum over the rounds (so a busy machine
inflates it least), largest first. For finding which kernels a compiled
graph spends its time in, and comparing two builds kernel by kernel when
wall times are too noisy: run it once per build, alternating.

Usage: kernel_profile.py MODEL [--eager] [--rounds 5] [--top 20] [--group SUBSTRING ...]
(MODEL from model_zoo.py or realistic_zoo.py; --group sums the kernels
whose names contain each substring, e.g. --group gemm stack.)
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def kernel_minimums(call, rounds: int) -> tuple[float, dict[str, tuple[float, int]]]:
    """(wall min in s, {kernel: (device us min, launches per call)})."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    wall, kernels = float("inf"), {}
    for _ in range(rounds):
        torch.maia.synchronize()
        start = time.perf_counter()
        call()
        torch.maia.synchronize()
        wall = min(wall, time.perf_counter() - start)
        with profile(activities=[ProfilerActivity.PrivateUse1]) as prof:
            call()
            torch.maia.synchronize()
        for event in prof.key_averages():
            # aten:: rows and the compiled graph's row repeat their kernels' time
            if event.self_device_time_total <= 0 or event.key.startswith(("aten::", "## Call")):
                continue
            best = kernels.get(event.key, (float("inf"), 0))
            kernels[event.key] = min(best, (event.self_device_time_total, event.count))
    return wall, kernels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model")
    parser.add_argument("--eager", action="store_true", help="eager maia, not torch.compile")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument("--group", nargs="*", default=[])
    options = parser.parse_args()

    import torch

    import model_zoo

    torch.maia.set_fallback_warnings(False)
    model, inputs = model_zoo.build(options.model)
    model = model.to("maia")
    inputs = tuple(x.to("maia") for x in inputs)
    forward = model if options.eager else torch.compile(model)
    with torch.no_grad():
        for _ in range(2):
            forward(*inputs)
        wall, kernels = kernel_minimums(lambda: forward(*inputs), options.rounds)

    total = sum(us for us, _ in kernels.values())
    mode = "eager" if options.eager else "compiled"
    print(f"{options.model} {mode}: wall min {wall * 1e3:.2f} ms, "
          f"device (sum of per-kernel minimums) {total / 1e3:.2f} ms")
    for name, (us, count) in sorted(kernels.items(), key=lambda kv: -kv[1][0])[:options.top]:
        print(f"{us / 1e3:10.3f} ms {count:4d}x  {name[:100]}")
    for group in options.group:
        us = sum(v for name, (v, _) in kernels.items() if group in name)
        print(f"group {group!r}: {us / 1e3:.3f} ms")


if __name__ == "__main__":
    main()
