"""Complex elementwise arithmetic, maia eager kernels vs the CPU, same run.

Usage: MAIA_NUM_CORES=<torch threads> .venv/bin/python tools/bench/complex_bench.py
Prints the best of interleaved rounds per (op, dtype) for 1M elements."""

import os
import time

import torch


N = 1 << 20
ROUNDS, REPS = 5, 10
OPS = {
    "add": lambda a, b: a + b,
    "mul": lambda a, b: a * b,
    "neg": lambda a, b: -a,
}


def best_us(fn, a, b, sync):
    best = float("inf")
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for _ in range(REPS):
            fn(a, b)
        sync()
        best = min(best, (time.perf_counter() - start) / REPS * 1e6)
    return best


def main():
    print(f"threads {torch.get_num_threads()}, MAIA_NUM_CORES {os.environ.get('MAIA_NUM_CORES')}")
    print(f"{'op':6} {'dtype':11} {'cpu us':>9} {'maia us':>9} {'maia/cpu':>9}")
    for dtype in (torch.complex64, torch.complex128):
        a, b = torch.randn(N, dtype=dtype), torch.randn(N, dtype=dtype)
        ma, mb = a.to("maia"), b.to("maia")
        for name, fn in OPS.items():
            fn(ma, mb)
            torch.maia.synchronize()
            cpu = best_us(fn, a, b, lambda: None)
            dev = best_us(fn, ma, mb, torch.maia.synchronize)
            print(f"{name:6} {str(dtype)[6:]:11} {cpu:9.1f} {dev:9.1f} {dev / cpu:9.2f}")


if __name__ == "__main__":
    main()
