"""F.scaled_dot_product_attention at GPT-2-small-like sizes: maia's fused
attention (the overrideable backend, runtime/kernels/nn/attention.h) vs the
math path on maia (matmul, softmax, matmul on maia's own kernels; forced
with sdpa_kernel([SDPBackend.MATH])) vs CPU SDPA (torch's flash attention
for CPU, as many threads as maia has device cores), in the same run:
forward alone and forward + backward, causal and not, per dtype. Rounds of
the three alternate; best round; a round is `calls` calls plus one
synchronize. Ratios < 1: maia fused is faster.

Usage: python tools/bench/sdpa_bench.py [--shape 4 12 256 64]
           [--dtypes float32 bfloat16] [--calls 5] [--rounds 7] [--json FILE]
"""

import argparse
import json
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def per_call(fn, calls, sync):
    fn()
    sync()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    sync()
    return (time.perf_counter() - start) / calls


def make_case(device, shape, dtype, causal, backward, backend):
    batch, heads, seq, dim = shape
    torch.manual_seed(0)
    q, k, v = [torch.randn(batch, heads, seq, dim).to(dtype).to(device).requires_grad_(backward)
               for _ in range(3)]
    grad = torch.randn(batch, heads, seq, dim).to(dtype).to(device)

    def run():
        with sdpa_kernel([backend]):
            out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        if backward:
            torch.autograd.grad(out, (q, k, v), grad)
        return out

    return run


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", type=int, nargs=4, default=[4, 12, 256, 64],
                        metavar=("BATCH", "HEADS", "SEQ", "DIM"))
    parser.add_argument("--dtypes", nargs="+", default=["float32", "bfloat16"])
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()

    cores = torch.maia.get_device_properties(0)["core_count"]
    torch.set_num_threads(cores)
    shape = tuple(args.shape)
    batch, heads, seq, dim = shape
    print(f"SDPA {shape} (batch, heads, seq, head_dim); {cores} maia cores, "
          f"{torch.get_num_threads()} CPU threads; ms per call, best of {args.rounds} rounds")
    header = (f"{'dtype':>8} {'causal':>6} {'pass':>8} {'fused ms':>9} {'math ms':>9} "
              f"{'cpu ms':>8} {'math/fused':>10} {'cpu/fused':>9} {'fused GFLOP/s':>13}")
    print(header)
    results = []
    sync_maia, sync_cpu = torch.maia.synchronize, (lambda: None)
    for dtype_name in args.dtypes:
        dtype = getattr(torch, dtype_name)
        for causal in (False, True):
            for backward in (False, True):
                fused = make_case("maia", shape, dtype, causal, backward, SDPBackend.OVERRIDEABLE)
                math = make_case("maia", shape, dtype, causal, backward, SDPBackend.MATH)
                cpu_backend = SDPBackend.FLASH_ATTENTION
                cpu = make_case("cpu", shape, dtype, causal, backward, cpu_backend)
                torch.testing.assert_close(fused().detach().cpu().float(),
                                           cpu().detach().float(), atol=3e-2, rtol=3e-2)
                best = {"fused": float("inf"), "math": float("inf"), "cpu": float("inf")}
                for _ in range(args.rounds):
                    best["fused"] = min(best["fused"], per_call(fused, args.calls, sync_maia))
                    best["math"] = min(best["math"], per_call(math, args.calls, sync_maia))
                    best["cpu"] = min(best["cpu"], per_call(cpu, args.calls, sync_cpu))
                    time.sleep(0.02)  # let idle worker threads stop spinning
                # QK^T and PV: 4 B H L S D flops (half when causal); the
                # backward does 2.5x that (5 products of which the forward has 2).
                flops = 4 * batch * heads * seq * seq * dim * (0.5 if causal else 1.0)
                flops *= 3.5 if backward else 1.0
                row = dict(dtype=dtype_name, causal=causal,
                           passes="fwd+bwd" if backward else "fwd",
                           fused_ms=best["fused"] * 1e3, math_ms=best["math"] * 1e3,
                           cpu_ms=best["cpu"] * 1e3,
                           math_over_fused=best["math"] / best["fused"],
                           cpu_over_fused=best["cpu"] / best["fused"],
                           fused_gflops=flops / best["fused"] * 1e-9)
                results.append(row)
                print(f"{dtype_name:>8} {str(causal):>6} {row['passes']:>8} "
                      f"{row['fused_ms']:>9.2f} {row['math_ms']:>9.2f} {row['cpu_ms']:>8.2f} "
                      f"{row['math_over_fused']:>10.2f} {row['cpu_over_fused']:>9.2f} "
                      f"{row['fused_gflops']:>13.1f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"shape": shape, "cores": cores, "results": results,
                       "torch_config": torch.__config__.show()}, f, indent=1)


if __name__ == "__main__":
    main()
