"""Eager maia vs eager CPU, measured in the same run (interleaved rounds,
best round; per-op time = a round of N calls plus a final synchronize, / N):

- small-tensor latency: add, mul, relu, sum, softmax, mm 16x16, empty, copy;
  target: maia at most 1.5x CPU's time per op. The CPU side runs with one
  intra-op thread: these ops are single-threaded on the CPU anyway (same
  times), but otherwise the idle OpenMP/MKL workers of the CPU rounds spin
  on after them and take a vCPU from maia's threads in the interleaved maia
  rounds, inflating maia's times;
- large elementwise: fp32 add and copy of 16M elements, eager and (add)
  under torch.compile, against the hardware bound: a STREAM triad
  (a = b + 3 c) in C++ with non-temporal stores on as many host threads as
  maia has cores (tools/bench/stream_triad.cpp, loaded with ctypes);
  target: at least 85% of its bandwidth. Also reported: the previous
  baseline, the same triad done by PyTorch CPU ops (temporal stores), and
  the same op on the CPU with the same thread count;
- large reductions: fp32 sums of 16M elements (all to one value, and rows)
  in GB/s of input read, vs the same baselines; same target.

Traffic accounting, the same for every row: GB/s = bytes the op must move
(arrays read + arrays written, 4 bytes x 16M each) / time. A triad and an
add move 3 arrays, a copy 2, a sum 1. Reading a line for ownership before
writing it (the write-allocate of temporal stores, 1 more array for a
triad) is not counted: non-temporal stores avoid it, and avoiding it is
part of reaching the bound.

Usage: python tools/bench/eager_bench.py [--json FILE] [--stream-library PATH]
       [--no-compile] [--only small|large] [--rounds N]
"""

import argparse
import ctypes
import json
import pathlib
import time

import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]


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
    cpu_best, maia_best = interleaved_many([(cpu_fn, lambda: None),
                                            (maia_fn, torch.maia.synchronize)],
                                           calls, rounds, settle_s)
    return cpu_best, maia_best


def interleaved_many(fns, calls, rounds=21, settle_s=0.0):
    """Best per-call time of each (fn, sync) of fns, measured in alternation
    (with interleaved()'s pause after each)."""
    best = [float("inf")] * len(fns)
    for _ in range(rounds):
        for i, (fn, sync) in enumerate(fns):
            best[i] = min(best[i], per_call(fn, calls, sync))
            time.sleep(settle_s)
    return best


class StreamTriad:
    """The C++ STREAM triad a = b + scalar * c with non-temporal stores on
    `threads` host threads, over CPU tensors (stream_triad.h)."""

    def __init__(self, library, a, b, c, threads):
        if not pathlib.Path(library).exists():
            raise SystemExit(f"eager_bench: {library} not found: build the tools "
                             "(ninja -C build/release maia_stream_triad) or pass "
                             "--stream-library")
        self.triad = ctypes.CDLL(str(library)).maia_stream_triad
        self.triad.restype = ctypes.c_int
        self.triad.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                               ctypes.c_float, ctypes.c_int64, ctypes.c_int, ctypes.c_int]
        for t in (a, b, c):
            assert t.dtype == torch.float32 and t.is_contiguous() and t.device.type == "cpu"
        self.args = (a.data_ptr(), b.data_ptr(), c.data_ptr(), 3.0, a.numel(), threads)
        self.keep = (a, b, c)

    def __call__(self):
        if self.triad(*self.args, 1) != 0:
            raise RuntimeError("maia_stream_triad refused its arguments")


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


def large_ops(cores, stream_library, compiled, rounds=21):
    """fp32 ops over 16M elements, in GB/s (see the module docstring for the
    accounting), each measured in alternation with the C++ non-temporal
    triad and PyTorch's triad: an add and a copy (eager, and the add under
    torch.compile), and sums (1 array read) of the whole tensor and of 4096
    rows of 4096. Yields (name, traffic word, NT triad GB/s, PyTorch triad
    GB/s, maia GB/s, same op on the CPU GB/s)."""
    n = 16 << 20
    a, b, c = (torch.randn(n) for _ in range(3))
    ad, bd, cd = (t.to("maia") for t in (a, b, c))
    torch.set_num_threads(cores)
    nt_triad = StreamTriad(stream_library, a, b, c, cores)
    torch_triad = lambda: torch.add(b, c, alpha=3.0, out=a)
    array_gb = n * 4 / 1e9
    ops = [
        ("fp32 add, 16M elements", 3, "", lambda: torch.add(bd, cd, out=ad),
         lambda: torch.add(b, c, out=a)),
        ("fp32 copy, 16M elements", 2, "", lambda: ad.copy_(bd), lambda: a.copy_(b)),
    ]
    if compiled:
        add = torch.compile(lambda x, y: x + y, dynamic=False)
        add(bd, cd)  # compile outside the timing
        ops.append(("fp32 add, 16M, torch.compile", 3, "", lambda: add(bd, cd),
                    lambda: torch.add(b, c, out=a)))
    ops += [
        ("fp32 sum, 16M elements", 1, "read ", lambda: bd.sum(), lambda: b.sum()),
        ("fp32 sum(dim=1), 4096 x 4096", 1, "read ",
         lambda: bd.view(4096, 4096).sum(dim=1), lambda: b.view(4096, 4096).sum(dim=1))]
    host = lambda: None
    for name, arrays, traffic, fn, peer in ops:
        nt_s, torch_s, maia_s = interleaved_many(
            [(nt_triad, host), (torch_triad, host), (fn, torch.maia.synchronize)],
            calls=5, rounds=rounds, settle_s=0.05)
        # The same op on the CPU (same thread count) is the peer: for a sum,
        # a read-only stream, the bound a triad (2 reads, 1 write) understates.
        peer_s, maia_again_s = interleaved(peer, fn, calls=5, rounds=rounds, settle_s=0.05)
        yield (name, traffic, 3 * array_gb / nt_s, 3 * array_gb / torch_s,
               arrays * array_gb / min(maia_s, maia_again_s), arrays * array_gb / peer_s)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--json")
    parser.add_argument("--stream-library",
                        default=str(ROOT / "build/release/tools/libmaia_stream_triad.so"),
                        help="the C++ STREAM triad (tools/bench/stream_triad.cpp)")
    parser.add_argument("--no-compile", action="store_true",
                        help="skip the torch.compile'd add")
    parser.add_argument("--rounds", type=int, default=21,
                        help="rounds of the large ops (best round counts; more on a busy machine)")
    parser.add_argument("--only", choices=("small", "large"),
                        help="run only the small-op or only the large-op rows")
    args = parser.parse_args()
    torch.maia.set_fallback_warnings(False)
    cores = torch.maia.get_device_properties(0)["core_count"]
    results = []
    if args.only != "large":
        print(f"{'op':24s} {'cpu us':>9s} {'maia us':>9s} {'ratio':>7s}  (target <= 1.5)")
        for name, (cpu, maia) in small_ops().items():
            results.append(dict(name=name, cpu_us=cpu * 1e6, maia_us=maia * 1e6,
                                ratio=maia / cpu))
            print(f"{name:24s} {cpu * 1e6:9.2f} {maia * 1e6:9.2f} {maia / cpu:7.2f}")
    if args.only == "small":
        large = []
    else:
        large = large_ops(cores, args.stream_library, not args.no_compile, args.rounds)
    if large:
        print(f"\nGB/s; baselines on {cores} host threads: the C++ triad with non-temporal "
              "stores (NT triad), PyTorch's triad, the same op on the CPU")
        print(f"{'op':30s} {'maia':>6s} {'NT triad':>9s} {'ratio':>6s} (>= 0.85) "
              f"{'torch triad':>11s} {'ratio':>6s} {'cpu op':>7s} {'ratio':>6s}")
    for name, traffic, nt_gbs, torch_gbs, gbs, peer_gbs in large:
        print(f"{name:30s} {gbs:6.1f} {nt_gbs:9.1f} {gbs / nt_gbs:6.2f}          "
              f"{torch_gbs:11.1f} {gbs / torch_gbs:6.2f} {peer_gbs:7.1f} {gbs / peer_gbs:6.2f}"
              + ("  (GB/s read)" if traffic else ""))
        results.append(dict(name=name, gbs=gbs, baseline="nt_triad", baseline_gbs=nt_gbs,
                            ratio=gbs / nt_gbs, torch_triad_gbs=torch_gbs,
                            ratio_to_torch_triad=gbs / torch_gbs, cpu_op_gbs=peer_gbs,
                            ratio_to_cpu_op=gbs / peer_gbs))
    fallbacks = torch.maia.fallback_counts()
    if fallbacks:
        print("ops that ran on the host fallback:", ", ".join(sorted(fallbacks)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"benchmark": "eager_bench", "results": results,
                       "fallbacks": fallbacks}, f, indent=2)


if __name__ == "__main__":
    main()
