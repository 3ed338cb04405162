"""fp32 GEMM: maia's gemm_f32 device kernel vs PyTorch CPU torch.mm, in one run.

torch.mm (its own BLAS, torch.set_num_threads(THREADS)) and the C++ driver
benchmark maia-gemm-bench (launch + stream synchronize on the device cores,
buffers allocated once) are run alternately, ROUNDS times per size, so both
see the same machine (other processes, frequency, memory bandwidth); the
best GFLOP/s of each is kept and the ratio maia / torch.mm printed against
the issue's targets (>= 0.5, stretch 0.8). maia runs on as many device cores
as torch has threads (MAIA_NUM_CORES), and both are also reported against
the hardware bound: the fp32 FMA peak on that many threads, measured by
maia-fma-peak in the same run.

Usage: python tools/bench/gemm_bench.py [--sizes 1024 4096] [--rounds 3]
           [--reps 5] [--threads 2] [--bench build/release/tools/maia-gemm-bench]
           [--json FILE]
"""

import argparse
import json
import os
import pathlib
import subprocess
import sys
import time

# The baseline is CPU torch only: do not autoload torch_maia, whose driver
# would start device worker threads in the baseline's process.
os.environ.setdefault("TORCH_DEVICE_BACKEND_AUTOLOAD", "0")
import torch  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]


def torch_mm_gflops(n, reps):
    """Best GFLOP/s of torch.mm(a, b, out=c) on n x n fp32, after a warm-up."""
    gen = torch.Generator().manual_seed(42)
    a = torch.rand(n, n, generator=gen) * 2 - 1
    b = torch.rand(n, n, generator=gen) * 2 - 1
    c = torch.empty(n, n)
    torch.mm(a, b, out=c)
    best = float("inf")
    for _ in range(reps):
        start = time.perf_counter()
        torch.mm(a, b, out=c)
        best = min(best, time.perf_counter() - start)
    return 2.0 * n**3 / best * 1e-9


def maia_gflops(bench, n, reps, cores):
    env = dict(os.environ, MAIA_NUM_CORES=str(cores))
    out = subprocess.run([bench, "--size", str(n), "--reps", str(reps), "--json"],
                         check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def fma_peak_gflops(tool, threads):
    out = subprocess.run([tool, "--threads", str(threads)], check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out)["gflops"]


def blas_info():
    """The lines of torch.__config__.show() that say which BLAS torch.mm uses
    (from the long build-settings line, only its BLAS/LAPACK entries)."""
    info = []
    for line in torch.__config__.show().splitlines():
        line = line.strip()
        if line.startswith("- Build settings:"):
            settings = line[len("- Build settings:"):]
            info += [item.strip() for item in settings.split(",")
                     if item.strip().startswith(("BLAS_INFO", "LAPACK_INFO", "USE_MKL", "USE_OPENMP"))]
        elif any(key in line for key in ("BLAS", "LAPACK", "CPU capability", "OpenMP", "MKL")):
            info.append(line.lstrip("- "))
    return info


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024, 4096])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--bench", default=str(ROOT / "build/release/tools/maia-gemm-bench"))
    parser.add_argument("--fma-peak", default=str(ROOT / "build/release/tools/maia-fma-peak"))
    parser.add_argument("--json")
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    info = blas_info()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    for line in info:
        print("  " + line)

    results = []
    peak = fma_peak_gflops(args.fma_peak, args.threads)
    print(f"fp32 FMA peak on {args.threads} threads: {peak:.1f} GFLOP/s")
    for n in args.sizes:
        # Fewer repetitions for the large size: one 4096^3 GEMM is ~0.5 s.
        reps = args.reps if n <= 2048 else max(2, args.reps // 2)
        best_torch = best_maia = 0.0
        maia_run = None
        for _ in range(args.rounds):
            best_torch = max(best_torch, torch_mm_gflops(n, reps))
            run = maia_gflops(args.bench, n, reps, args.threads)
            if run["gflops"] > best_maia:
                best_maia, maia_run = run["gflops"], run
        ratio = best_maia / best_torch
        results.append({"n": n, "torch_mm_gflops": best_torch, "maia_gflops": best_maia,
                        "ratio": ratio, "fma_peak_gflops": peak,
                        "maia_of_peak": best_maia / peak, "torch_of_peak": best_torch / peak,
                        "maia": maia_run})
        print(f"fp32 GEMM {n:5d}^3: maia gemm_f32 ({maia_run['binary']}, {maia_run['cores']} cores) "
              f"{best_maia:7.1f} GFLOP/s | torch.mm {best_torch:7.1f} GFLOP/s | "
              f"ratio {ratio:4.2f} (target >= 0.50, stretch 0.80) | of FMA peak: maia "
              f"{best_maia / peak:4.2f}, torch.mm {best_torch / peak:4.2f}", flush=True)

    if args.json:
        with open(args.json, "w") as f:
            json.dump({"torch_version": torch.__version__, "threads": args.threads,
                       "fma_peak_gflops": peak,
                       "torch_config": torch.__config__.show(), "results": results}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
