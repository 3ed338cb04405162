"""fp32 conv2d forward: maia's convolution vs PyTorch CPU (oneDNN), in one run.

The ResNet-18 convolution shapes at 224 x 224, batch 4, with bias, in NCHW
and channels-last (input and weight, as model.to(memory_format=
torch.channels_last) makes them; "cl-input": the input only). For each shape and layout, CPU
F.conv2d (torch.set_num_threads(THREADS)) and maia F.conv2d + synchronize
(MAIA_NUM_CORES = THREADS device cores) run alternately, ROUNDS rounds of
REPS calls each, and the best time of each is kept: both see the same
machine. A pause of --settle seconds follows each round: libgomp's idle
threads spin for milliseconds after oneDNN's parallel region, and maia's
idle cores for MAIA_SPIN_US, so a round started at once would measure
that contention (as eager_bench.py does). Prints ms, GFLOP/s and the ratio maia time / CPU time (the goal:
<= 1.05). The CPU's time is that of its own layout: oneDNN on NCHW is
several times slower than on channels-last for the 3-channel first layer.

Usage: python tools/bench/conv_bench.py [--rounds 5] [--reps 5] [--threads 2] [--settle 0.05]
           [--layouts nchw cl cl-input] [--json FILE]
"""

import argparse
import json
import os
import time

THREADS_DEFAULT = 2

# (N, C, H, W, Cout, k, stride); padding k // 2 as in ResNet-18.
SHAPES = [
    (4, 3, 224, 224, 64, 7, 2),
    (4, 64, 56, 56, 64, 3, 1),
    (4, 64, 56, 56, 128, 3, 2),
    (4, 128, 28, 28, 128, 3, 1),
    (4, 128, 28, 28, 256, 3, 2),
    (4, 256, 14, 14, 256, 3, 1),
    (4, 256, 14, 14, 512, 3, 2),
    (4, 512, 7, 7, 512, 3, 1),
    (4, 64, 56, 56, 128, 1, 2),
]


def best_time(fn, sync, reps):
    best = float("inf")
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        sync()
        best = min(best, time.perf_counter() - start)
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--threads", type=int, default=THREADS_DEFAULT)
    parser.add_argument("--layouts", nargs="+", default=["nchw", "cl"],
                        choices=["nchw", "cl", "cl-input"])
    parser.add_argument("--settle", type=float, default=0.05)
    parser.add_argument("--json")
    args = parser.parse_args()
    os.environ["MAIA_NUM_CORES"] = str(args.threads)
    import torch
    import torch.nn.functional as F
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} CPU threads vs {args.threads} maia cores, "
          f"best of {args.rounds} x {args.reps}")
    print(f"{'shape (N,C,H,W,Cout,k,s)':32} {'layout':8} {'cpu ms':>8} {'maia ms':>8} "
          f"{'cpu GF/s':>9} {'maia GF/s':>9} {'maia/cpu':>8}")
    rows = []
    nothing = lambda: None  # noqa: E731
    for shape in SHAPES:
        n, c, h, w, o, k, s = shape
        gen = torch.Generator().manual_seed(0)
        x = torch.randn(n, c, h, w, generator=gen)
        wt = torch.randn(o, c, k, k, generator=gen) * 0.05
        b = torch.randn(o, generator=gen)
        for layout in args.layouts:
            cl, nchw = torch.channels_last, torch.contiguous_format
            xc = x.to(memory_format=nchw if layout == "nchw" else cl)
            wc = wt.to(memory_format=cl if layout == "cl" else nchw)
            xm, wm, bm = xc.to("maia"), wc.to("maia"), b.to("maia")
            cpu = lambda: F.conv2d(xc, wc, b, s, k // 2)  # noqa: E731
            maia = lambda: F.conv2d(xm, wm, bm, s, k // 2)  # noqa: E731
            torch.testing.assert_close(maia().cpu(), cpu(), rtol=1e-3, atol=1e-3)
            t_cpu = t_maia = float("inf")
            for _ in range(args.rounds):
                t_cpu = min(t_cpu, best_time(cpu, nothing, args.reps))
                time.sleep(args.settle)
                t_maia = min(t_maia, best_time(maia, torch.maia.synchronize, args.reps))
                time.sleep(args.settle)
            oh = (h + 2 * (k // 2) - k) // s + 1
            flops = 2.0 * n * o * oh * oh * c * k * k
            row = dict(shape=shape, layout=layout, cpu_ms=t_cpu * 1e3, maia_ms=t_maia * 1e3,
                       cpu_gflops=flops / t_cpu * 1e-9, maia_gflops=flops / t_maia * 1e-9,
                       ratio=t_maia / t_cpu)
            rows.append(row)
            print(f"{str(shape):32} {layout:8} {row['cpu_ms']:8.2f} {row['maia_ms']:8.2f} "
                  f"{row['cpu_gflops']:9.0f} {row['maia_gflops']:9.0f} {row['ratio']:8.2f}",
                  flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
