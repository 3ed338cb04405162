"""Eager maia vs eager CPU, measured in the same run (interleaved rounds,
best round; per-op time = a round of N calls plus a final synchronize, / N):

- small-tensor latency: add, mul, relu, sum, softmax, mm 16x16, empty, copy;
  target: maia at most 1.5x CPU's time per op. The CPU side runs with one
  intra-op thread: these ops are single-threaded on the CPU anyway (same
  times), but otherwise the idle OpenMP/MKL workers of the CPU rounds spin
  on after them and take a vCPU from maia's threads in the interleaved maia
  rounds, inflating maia's times;
- large elementwise: fp32 add of 16M elements vs a STREAM triad
  (a = b + s * c, PyTorch CPU with the same thread count as maia has cores);
  target: at least 85% of the triad's bandwidth;
- large reductions: fp32 sums of 16M elements (all to one value, and rows)
  in GB/s of input read, vs the same triad; same target.

Usage: python tools/bench/eager_bench.py [--json FILE]
"""

import argparse
import json
import time

import torch


def per_call(fn, calls, sync):
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    sync()
    return (time.perf_counter() - start) / calls


def interleaved(cpu_fn, maia_fn, calls, rounds=21, settle_s=0.0):
    """settle_s: a pause after each round, so that each starts on a quiet
    machine. After a parallel region libgomp's idle threads spin for
    milliseconds (and maia's idle cores for MAIA_SPIN_US): a maia round
    started at once would share the vCPUs with them and measure the
    contention, not maia."""
    cpu_best = maia_best = float("inf")
    for _ in range(rounds):
        cpu_best = min(cpu_best, per_call(cpu_fn, calls, lambda: None))
        time.sleep(settle_s)
        maia_best = min(maia_best, per_call(maia_fn, calls, torch.maia.synchronize))
        time.sleep(settle_s)
    return cpu_best, maia_best


def small_ops():
    def make(device):
        a = torch.randn(64, 64, device=device)
        b = torch.randn(64, 64, device=device)
        m = torch.randn(16, 16, device=device)
        host = torch.randn(64, 64)
        return {
            "add": lambda: a + b,
            "mul": lambda: a * b,
            "relu": lambda: torch.relu(a),
            "sum": lambda: a.sum(),
            "softmax": lambda: torch.softmax(a, dim=1),
            "mm 16x16": lambda: m @ m,
            "empty": lambda: torch.empty(64, 64, device=device),
            # CPU: a host copy of the same bytes; maia: the host-to-device copy.
            "copy 64x64 from host": (lambda: host.clone()) if device == "cpu"
            else (lambda: host.to(device)),
        }
    cpu_ops, maia_ops = make("cpu"), make("maia")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return {name: interleaved(cpu_ops[name], maia_ops[name], calls=2000)
                for name in cpu_ops}
    finally:
        torch.set_num_threads(threads)


def large_ops(cores):
    """fp32 ops over 16M elements, in GB/s, each against a STREAM triad
    (a = b + 3 c, STREAM's 3 arrays of traffic) measured interleaved with
    it: an add (3 arrays of traffic) and sums (1 array read) of the whole
    tensor and of 4096 rows of 4096. Yields (name, traffic word, triad GB/s,
    maia GB/s)."""
    n = 16 << 20
    a, b, c = (torch.randn(n) for _ in range(3))
    ad, bd, cd = (t.to("maia") for t in (a, b, c))
    torch.set_num_threads(cores)
    triad = lambda: torch.add(b, c, alpha=3.0, out=a)
    array_gb = n * 4 / 1e9
    for name, arrays, traffic, fn, peer in [
            ("fp32 add, 16M elements", 3, "", lambda: torch.add(bd, cd, out=ad),
             lambda: torch.add(b, c, out=a)),
            ("fp32 sum, 16M elements", 1, "read ", lambda: bd.sum(), lambda: b.sum()),
            ("fp32 sum(dim=1), 4096 x 4096", 1, "read ",
             lambda: bd.view(4096, 4096).sum(dim=1), lambda: b.view(4096, 4096).sum(dim=1))]:
        cpu_s, maia_s = interleaved(triad, fn, calls=5, settle_s=0.05)
        # The same op on the CPU (same thread count) is the peer: for a sum,
        # a read-only stream, the bound a triad (2 reads, 1 write) understates.
        peer_s, maia_again_s = interleaved(peer, fn, calls=5, settle_s=0.05)
        yield (name, traffic, 3 * array_gb / cpu_s, arrays * array_gb / min(maia_s, maia_again_s),
               arrays * array_gb / peer_s)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--json")
    args = parser.parse_args()
    torch.maia.set_fallback_warnings(False)
    cores = torch.maia.get_device_properties(0)["core_count"]
    results = []
    print(f"{'op':24s} {'cpu us':>9s} {'maia us':>9s} {'ratio':>7s}  (target <= 1.5)")
    for name, (cpu, maia) in small_ops().items():
        results.append(dict(name=name, cpu_us=cpu * 1e6, maia_us=maia * 1e6, ratio=maia / cpu))
        print(f"{name:24s} {cpu * 1e6:9.2f} {maia * 1e6:9.2f} {maia / cpu:7.2f}")
    for name, traffic, triad_gbs, gbs, peer_gbs in large_ops(cores):
        print(f"{name}: {gbs:.1f} GB/s {traffic}vs STREAM triad ({cores} threads) "
              f"{triad_gbs:.1f} GB/s: ratio {gbs / triad_gbs:.2f} (target >= 0.85); "
              f"vs the same op on the CPU {peer_gbs:.1f} GB/s: ratio {gbs / peer_gbs:.2f}")
        results.append(dict(name=name, gbs=gbs, baseline_gbs=triad_gbs, ratio=gbs / triad_gbs,
                            cpu_op_gbs=peer_gbs, ratio_to_cpu_op=gbs / peer_gbs))
    fallbacks = torch.maia.fallback_counts()
    if fallbacks:
        print("ops that ran on the host fallback:", ", ".join(sorted(fallbacks)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"benchmark": "eager_bench", "results": results,
                       "fallbacks": fallbacks}, f, indent=2)


if __name__ == "__main__":
    main()
