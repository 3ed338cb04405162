#!/usr/bin/env python3
"""exp, tanh and erf on maia over every float32 (all 2^32 bit patterns),
eager and compiled: the largest distance in ulp from the correctly rounded
result (the float64 function rounded once) and from the CPU's. exp and erf
compute in float32 arithmetic (runtime/kernels/eager/exponential.h and
error_function.h, compiler/lib/Transforms/ApproximateMath.cpp), tanh in a
float64 core shared by both paths (runtime/kernels/eager/wide_math.h,
WideMath.cpp); all claim 1 ulp from the exact result. The test suite checks sweeps of bit patterns
(test/python/test_eager_math_accuracy.py, test/inductor/test_math_accuracy.py);
this checks them all. About 4 minutes per function and path on 2 cores.

Usage: math_ulp_sweep.py [--functions exp tanh erf] [--paths eager compiled]
                        [--chunk-log2 26]
"""

import argparse
import time

import torch

BITS = {torch.float32: (torch.int32, 32), torch.float16: (torch.int16, 16),
        torch.bfloat16: (torch.int16, 16)}
HUGE_ERROR = 1 << 40


def ulp_distance(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """|a - b| in units in the last place of their dtype (float32, float16 or
    bfloat16): the bit patterns as sign-magnitude integers, mapped to one
    ordered integer line (so -0 == +0 and the distance across zero adds up).
    Both NaN: 0; one NaN: HUGE_ERROR. The test suites use it too
    (test/inductor/test_math_accuracy.py, test/python/test_eager_math_accuracy.py)."""
    assert a.dtype == b.dtype and a.dtype in BITS
    int_dtype, width = BITS[a.dtype]
    magnitude = (1 << (width - 1)) - 1

    def ordered(t):
        i = t.contiguous().view(int_dtype).to(torch.int64)
        return torch.where(i < 0, -(i & magnitude), i)

    d = (ordered(a) - ordered(b)).abs()
    d = torch.where(a.isnan() & b.isnan(), torch.zeros_like(d), d)
    return torch.where(a.isnan() ^ b.isnan(), torch.full_like(d, HUGE_ERROR), d)


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
