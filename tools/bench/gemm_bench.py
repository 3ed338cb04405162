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

--zoo-shapes times, the same way, the GEMMs the benchmark zoos run
(model_zoo.py, realistic_zoo.py; found by logging mm/addmm/bmm and the
convolutions' batched GEMMs, see ZOO_SHAPES) in their layouts: nn.Linear's
transposed weight, a convolution's kernel shared by the images of a batch,
a channels-last (column-major) output. The torch baseline of each is the
same product through torch.mm/bmm with the same strides. It prints the time
ratio maia / torch.mm per shape (goal <= 1.05, issue 18).

Usage: python tools/bench/gemm_bench.py [--sizes 1024 4096] [--rounds 3]
           [--reps 5] [--threads 2] [--bench build/release/tools/maia-gemm-bench]
           [--zoo-shapes [--only SUBSTRING] [--baseline-kernel-dir DIR]]
           [--kernel-dir DIR] [--json FILE]
"""

import argparse
import json
import math
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


# (where it comes from, maia-gemm-bench --shape spec: MxNxK, bt = B is an
# nn.Linear weight [N, K] transposed, bB = a batch of B sharing one A, ab =
# A batched too, ct = C column-major).
ZOO_SHAPES = [
    # Issue 18's list: ResNet-18 convolution GEMMs as one row-major product
    # each (both orientations), and two mid-size products.
    ("issue18", "128x784x1152"), ("issue18", "512x49x4608"), ("issue18", "196x256x2304"),
    ("issue18", "256x196x2304"), ("issue18", "512x512x512"), ("issue18", "256x1024x768"),
    ("issue18", "64x3136x576"), ("issue18", "12544x64x576"), ("issue18", "3136x128x1152"),
    # gpt2_small4 (batch 2, seq 256, d 768): q/out, kv, MLP up, MLP down.
    ("gpt2_small4", "512x768x768:bt"), ("gpt2_small4", "512x1536x768:bt"),
    ("gpt2_small4", "512x3072x768:bt"), ("gpt2_small4", "512x768x3072:bt"),
    # bert_base4 (batch 8, seq 128, d 768).
    ("bert_base4", "1024x768x768:bt"), ("bert_base4", "1024x1536x768:bt"),
    ("bert_base4", "1024x3072x768:bt"), ("bert_base4", "1024x768x3072:bt"),
    # llama2l (seq 256, d 1024, GQA kv 512, hidden 2816), no bias.
    ("llama2l", "256x1024x1024:bt"), ("llama2l", "256x512x1024:bt"),
    ("llama2l", "256x2816x1024:bt"), ("llama2l", "256x1024x2816:bt"),
    # resnet18 (batch 4, 224^2): per convolution, [O x C*taps] @ [C*taps x
    # pixels] for each image; the head is a 4-row linear.
    ("resnet18", "64x12544x147:b4"), ("resnet18", "64x3136x576:b4"),
    ("resnet18", "128x784x64:b4"), ("resnet18", "128x784x576:b4"),
    ("resnet18", "128x784x1152:b4"), ("resnet18", "256x196x128:b4"),
    ("resnet18", "256x196x1152:b4"), ("resnet18", "256x196x2304:b4"),
    ("resnet18", "512x49x256:b4"), ("resnet18", "512x49x2304:b4"),
    ("resnet18", "512x49x4608:b4"), ("resnet18", "4x1000x512:bt"),
    # The same convolutions with a channels-last output (compiled models).
    ("resnet18 cl", "128x784x1152:b4:ct"), ("resnet18 cl", "256x196x2304:b4:ct"),
    ("resnet18 cl", "512x49x4608:b4:ct"),
    # The small zoo (tests): mlp, gpt2_block/bert_layer (+ attention bmm),
    # rmsnorm_mlp, hf_gpt2 (Conv1D: row-major weight), hf_bert, cnn.
    ("small zoo", "64x256x256:bt"), ("small zoo", "64x10x256:bt"),
    ("small zoo", "256x128x128:bt"), ("small zoo", "256x384x128:bt"),
    ("small zoo", "256x512x128:bt"), ("small zoo", "256x128x512:bt"),
    ("small zoo", "256x256x128:bt"), ("small zoo", "256x128x256:bt"),
    ("small zoo", "256x384x128"), ("small zoo", "256x128x512"),
    ("small zoo", "64x64x32:b16:ab"), ("small zoo", "64x32x64:b16:ab"),
    ("small zoo", "16x1024x27:b8"), ("small zoo", "32x256x144:b8"),
    # Cubes (keep >= 0.95x: they were ~2x before issue 18's work).
    ("cube", "1024x1024x1024"), ("cube", "2048x2048x2048"),
]


def parse_spec(spec):
    """(m, n, k, batch, b_transposed, c_column_major, a_batched) of a --shape spec."""
    dims, *flags = spec.split(":")
    m, n, k = (int(v) for v in dims.split("x"))
    batch = next((int(f[1:]) for f in flags if f.startswith("b") and f[1:].isdigit()), 1)
    return m, n, k, batch, "bt" in flags, "ct" in flags, "ab" in flags


def torch_shape_seconds(spec, reps):
    """Best seconds of the spec's product through torch.mm / torch.bmm with
    the same operand strides (out= preallocated), after a warm-up."""
    m, n, k, batch, b_t, c_t, a_batched = parse_spec(spec)
    gen = torch.Generator().manual_seed(42)
    a = torch.rand(batch if a_batched else 1, m, k, generator=gen) * 2 - 1
    b = torch.rand(batch, n, k, generator=gen).transpose(1, 2) if b_t else \
        torch.rand(batch, k, n, generator=gen)
    # A column-major C is the row-major transpose: C^T = B^T @ A^T.
    c = torch.empty(batch, n, m) if c_t else torch.empty(batch, m, n)
    if batch == 1:
        a, b, c = a[0], b[0], c[0]
        run = (lambda: torch.mm(b.t(), a.t(), out=c)) if c_t else (lambda: torch.mm(a, b, out=c))
    else:
        a = a.expand(batch, m, k)
        run = (lambda: torch.bmm(b.transpose(1, 2), a.transpose(1, 2), out=c)) if c_t else \
            (lambda: torch.bmm(a, b, out=c))
    run()
    best = float("inf")
    for _ in range(reps):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def maia_shape_run(bench, spec, reps, cores, kernel_dir=None):
    env = dict(os.environ, MAIA_NUM_CORES=str(cores))
    extra = ["--kernel-dir", kernel_dir] if kernel_dir else []
    out = subprocess.run([bench, "--shape", spec, "--reps", str(reps), "--json", *extra],
                         check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def zoo_shapes(args, peak):
    """Each zoo shape ROUNDS times, torch.mm and maia alternated (and the
    --baseline-kernel-dir binaries, if given); best of each."""
    baseline = args.baseline_kernel_dir
    print(f"{'model':<12} {'shape':<22} {'GFLOP':>7} {'torch us':>9} {'maia us':>9} "
          f"{'maia/torch':>10} {'torch GF/s':>10} {'maia GF/s':>9} {'grid':>9}"
          + (f" {'base us':>9} {'base/torch':>10}" if baseline else ""))
    results = []
    for model, spec in ZOO_SHAPES:
        if args.only and args.only not in f"{model} {spec}":
            continue
        m, n, k, batch, *_ = parse_spec(spec)
        flops = 2.0 * m * n * k * batch
        # About 30 ms of work per measurement, 5 to 400 repetitions.
        reps = max(5, min(400, int(0.03 / (flops / (peak * 1e9) * 2))))
        best_torch = best_maia = best_base = float("inf")
        maia_run = None
        for _ in range(args.rounds):
            best_torch = min(best_torch, torch_shape_seconds(spec, reps))
            run = maia_shape_run(args.bench, spec, reps, args.threads, args.kernel_dir)
            if run["best_s"] < best_maia:
                best_maia, maia_run = run["best_s"], run
            if baseline:
                base = maia_shape_run(args.bench, spec, reps, args.threads, baseline)
                best_base = min(best_base, base["best_s"])
        ratio = best_maia / best_torch
        result = {"model": model, "shape": spec, "torch_s": best_torch, "maia_s": best_maia,
                  "time_ratio": ratio, "torch_gflops": flops / best_torch * 1e-9,
                  "maia_gflops": flops / best_maia * 1e-9, "maia": maia_run}
        if baseline:
            result.update(baseline_s=best_base, baseline_time_ratio=best_base / best_torch)
        results.append(result)
        grid = "x".join(str(g) for g in maia_run["grid"])
        base_cols = f" {best_base * 1e6:9.1f} {best_base / best_torch:10.2f}" if baseline else ""
        flag = "" if ratio <= 1.05 else "  <-- above 1.05"
        print(f"{model:<12} {spec:<22} {flops * 1e-9:7.3f} {best_torch * 1e6:9.1f} "
              f"{best_maia * 1e6:9.1f} {ratio:10.2f} {flops / best_torch * 1e-9:10.1f} "
              f"{flops / best_maia * 1e-9:9.1f} {grid:>9}{base_cols}{flag}", flush=True)

    def summary(key, name):
        ratios = [r[key] for r in results]
        worst = max(results, key=lambda r: r[key])
        geomean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        print(f"{name}: {sum(r <= 1.05 for r in ratios)}/{len(ratios)} shapes at time ratio "
              f"<= 1.05; worst {worst[key]:.2f} ({worst['model']} {worst['shape']}); "
              f"geometric mean {geomean:.2f}")

    if results:
        summary("time_ratio", "maia")
        if baseline:
            summary("baseline_time_ratio", "baseline")
    return results


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
    parser.add_argument("--zoo-shapes", action="store_true",
                        help="the zoos' GEMM shapes instead of --sizes cubes")
    parser.add_argument("--kernel-dir", help="maia-gemm-bench --kernel-dir (default: the build's)")
    parser.add_argument("--baseline-kernel-dir",
                        help="with --zoo-shapes: also time these binaries (e.g. a copy of an "
                             "older build's kernels), alternated in the same run")
    parser.add_argument("--only", help="with --zoo-shapes: shapes whose 'model spec' has this")
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
    if args.zoo_shapes:
        results = zoo_shapes(args, peak)
    for n in [] if args.zoo_shapes else args.sizes:
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
