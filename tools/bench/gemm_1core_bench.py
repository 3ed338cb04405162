"""fp32 GEMM on one core: maia's kernel code vs MKL's torch.mm, alternated call
by call in one process.

On a shared machine two benchmark runs minutes apart can differ by 2x;
two calls microseconds apart see the same load. This compiles the GEMM
kernel sources (runtime/kernels/gemm, -march=x86-64-v4 as the _v4 binary)
into a small host library, calls its single-core gemm() directly (no
driver, no launch) and torch.mm with one thread in turn, and keeps the
best time of each. It measures the per-core code (blocking, packing,
microkernels), not the split across cores: gemm_bench.py does that.

Shapes as maia-gemm-bench --shape: MxNxK[:bt][:ct] (bt: B is an nn.Linear
weight [N, K] transposed; ct: C column-major). Default: gemm_bench.py's
ZOO_SHAPES without batches.

Usage: python tools/bench/gemm_1core_bench.py [--shapes 128x784x1152 ...] [--calls 60]
           [--sources runtime/kernels/gemm]
"""

import argparse
import ctypes
import os
import pathlib
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TORCH_DEVICE_BACKEND_AUTOLOAD", "0")
import torch  # noqa: E402

from gemm_bench import ZOO_SHAPES, parse_spec  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]

SHIM = r"""
#include <chrono>
#include <cstdint>
#include "gemm.h"
// Seconds of one C = A @ B (A row-major m x k; B row-major k x n, or the
// transpose of a row-major n x k if bt; C row-major, or column-major if ct).
extern "C" double maia_gemm_seconds(const float* a, const float* b, float* c, int64_t m,
                                    int64_t n, int64_t k, int bt, int ct) {
  maia_gemm::Problem<float> p{m, n, k, {a, k, 1}, {b, bt ? 1 : n, bt ? k : 1}, c,
                              ct ? 1 : n, ct ? m : 1, 1.0f, 0.0f};
  auto start = std::chrono::steady_clock::now();
  maia_gemm::gemm(p);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
"""


def build_shim(sources, out_dir):
    src = pathlib.Path(out_dir) / "shim.cpp"
    lib = pathlib.Path(out_dir) / "libmaia_gemm_1core.so"
    src.write_text(SHIM)
    subprocess.run(["g++", "-std=c++20", "-O3", "-march=x86-64-v4", "-fno-math-errno", "-fPIC",
                    "-shared", f"-I{sources}", str(src), "-o", str(lib)], check=True)
    shim = ctypes.CDLL(str(lib))
    shim.maia_gemm_seconds.restype = ctypes.c_double
    shim.maia_gemm_seconds.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int64] * 3 + \
        [ctypes.c_int] * 2
    return shim


def bench(shim, spec, calls):
    m, n, k, batch, b_t, c_t, _ = parse_spec(spec)
    if batch != 1:
        raise ValueError(f"{spec}: batches are not measured here (gemm_bench.py)")
    gen = torch.Generator().manual_seed(42)
    a = torch.rand(m, k, generator=gen) * 2 - 1
    b_store = torch.rand(n, k, generator=gen) if b_t else torch.rand(k, n, generator=gen)
    b = b_store.t() if b_t else b_store
    c_torch = torch.empty(n, m) if c_t else torch.empty(m, n)
    c_maia = torch.empty(m * n)
    run_torch = (lambda: torch.mm(b.t(), a.t(), out=c_torch)) if c_t else \
        (lambda: torch.mm(a, b, out=c_torch))
    args = (a.data_ptr(), b_store.data_ptr(), c_maia.data_ptr(), m, n, k, int(b_t), int(c_t))
    run_torch()
    shim.maia_gemm_seconds(*args)
    best_torch = best_maia = float("inf")
    for _ in range(calls):
        start = time.perf_counter()
        run_torch()
        best_torch = min(best_torch, time.perf_counter() - start)
        best_maia = min(best_maia, shim.maia_gemm_seconds(*args))
    got = c_maia.view(n, m).t() if c_t else c_maia.view(m, n)
    torch.testing.assert_close(got, a @ b, atol=1e-3, rtol=1e-4)
    return best_torch, best_maia, 2.0 * m * n * k


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+",
                        default=[spec for _, spec in ZOO_SHAPES if parse_spec(spec)[3] == 1])
    parser.add_argument("--calls", type=int, default=60)
    parser.add_argument("--sources", default=str(ROOT / "runtime/kernels/gemm"))
    args = parser.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        shim = build_shim(args.sources, tmp)
        print(f"{'shape':<22} {'MKL GF/s':>9} {'maia GF/s':>9} {'maia/MKL time':>14}")
        ratios = []
        for spec in args.shapes:
            t_torch, t_maia, flops = bench(shim, spec, args.calls)
            ratios.append(t_maia / t_torch)
            print(f"{spec:<22} {flops / t_torch * 1e-9:9.1f} {flops / t_maia * 1e-9:9.1f} "
                  f"{t_maia / t_torch:14.3f}" + ("" if t_maia / t_torch <= 1.05 else "  > 1.05"),
                  flush=True)
        print(f"{sum(r <= 1.05 for r in ratios)}/{len(ratios)} at <= 1.05")
    return 0


if __name__ == "__main__":
    sys.exit(main())
