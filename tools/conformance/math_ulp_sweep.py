#!/usr/bin/env python3
"""exp, tanh and erf on maia over every float32 (all 2^32 bit patterns),
eager and compiled: the largest distance in ulp from the correctly rounded
result (the float64 function rounded once) and from the CPU's. exp and erf
compute in float32 arithmetic (runtime/kernels/eager/exponential.h and
error_function.h, compiler/lib/Transforms/ApproximateMath.cpp), tanh in a
float64 core shared by both paths (runtime/kernels/eager/wide_math.h,
WideMath.cpp); all claim 1
ulp from the exact result. The test suite checks sweeps of bit patterns
(test/python/test_eager_math_accuracy.py, test/inductor/test_math_accuracy.py);
this checks them all. About 4 minutes per function and path on 2 cores.

Usage: math_ulp_sweep.py [--functions exp tanh erf] [--paths eager compiled]
                        [--chunk-log2 26]
"""

import argparse
import time

import torch

INT_MIN = -(2**31)


def ulp_distance(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    def ordered(t):
        bits = t.view(torch.int32).to(torch.int64)
        return torch.where(bits < 0, INT_MIN - bits, bits)

    distance = (ordered(a) - ordered(b)).abs()
    return torch.where(torch.isnan(a) & torch.isnan(b), 0, distance)


def sweep(fn, on_maia, chunk_log2: int) -> tuple[int, int, float]:
    """(max ulp from the exact result, max ulp from the CPU, worst input)."""
    chunk = 1 << chunk_log2
    worst_exact = worst_cpu = 0
    worst_input = 0.0
    for start in range(0, 2**32, chunk):
        x = torch.arange(start, start + chunk, dtype=torch.int64).to(torch.int32)
        x = x.view(torch.float32)
        actual = on_maia(x.to("maia")).cpu()
        exact = fn(x.double()).float()
        if not torch.equal(torch.isnan(actual), torch.isnan(exact)):
            raise AssertionError(f"NaN where the exact result is not, in [{start}, +{chunk})")
        from_exact = ulp_distance(actual, exact)
        if int(from_exact.max()) > worst_exact:
            worst_exact = int(from_exact.max())
            worst_input = x[int(from_exact.argmax())].item()
        worst_cpu = max(worst_cpu, int(ulp_distance(actual, fn(x)).max()))
    return worst_exact, worst_cpu, worst_input


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--functions", nargs="+", default=["exp"],
                        choices=["exp", "tanh", "erf"])
    parser.add_argument("--paths", nargs="+", default=["eager", "compiled"],
                        choices=["eager", "compiled"])
    parser.add_argument("--chunk-log2", type=int, default=26)
    args = parser.parse_args()
    for name in args.functions:
        fn = getattr(torch, name)
        for path in args.paths:
            on_maia = fn if path == "eager" else torch.compile(fn, dynamic=False)
            start = time.time()
            exact, cpu, where = sweep(fn, on_maia, args.chunk_log2)
            print(f"{path} maia {name} over all 2^32 float32: max {exact} ulp from the "
                  f"correctly rounded result (first worst input {where!r}), max {cpu} ulp "
                  f"from the CPU's torch.{name} ({time.time() - start:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
