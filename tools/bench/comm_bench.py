"""Collective bandwidth and latency of the maia c10d backend, like nccl-tests.

all_reduce, all_gather_single and reduce_scatter_single (torch 2.13's names
for all_gather_into_tensor and reduce_scatter_tensor) from 8 B to
256 MiB on 2 and 4 ranks (one process per rank, rank r on maia:r with
MAIA_NUM_CORES=1), against, in the same run:
  - Gloo on CPU tensors (the same collectives, same sizes, same processes:
    the default group is "cpu:gloo,maia:maia");
  - the host's memcpy bandwidth with 2 threads (two threads each copying
    their own 256 MiB buffer at once; bytes copied by both / wall time),
    measured before each world.

Sizes are nccl-tests' "size": the bytes of the larger buffer (all_reduce:
the tensor; all_gather: the output; reduce_scatter: the input). Time per
collective: the slowest rank's mean over the iterations of a round (host
clock from a barrier to the device being idle; maia collectives are issued
back to back as nccl-tests launches them, Gloo's block), minimum over
--rounds rounds (the machine is shared: the least disturbed round).
algbw = size / time; busbw = algbw x 2(n-1)/n for all_reduce and
x (n-1)/n for all_gather and reduce_scatter (nccl-tests' PERFORMANCE.md):
the bandwidth each rank's link must carry, comparable across rank counts
and with a copy bandwidth.

Usage: python tools/bench/comm_bench.py [--ranks 2 4] [--max-bytes 256M]
       [--min-bytes 64M] [--collectives all_reduce ...]
       [--rounds 3] [--quick] [--json FILE]
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import json
import os
import socket
import sys
import threading
import time

MIB = 1 << 20
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter")


def parse_bytes(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    if text[-1].upper() in units:
        return int(text[:-1]) * units[text[-1].upper()]
    return int(text)


def sizes_up_to(max_bytes: int, quick: bool) -> list[int]:
    sizes, s = [], 8
    while s <= max_bytes:
        sizes.append(s)
        s *= 8 if quick else 4
    if sizes[-1] != max_bytes:
        sizes.append(max_bytes)
    if 8 << 10 not in sizes:  # the latency target's upper end
        sizes = sorted(sizes + [8 << 10])
    return sizes


def memcpy_bandwidth(threads: int = 2, bytes_per_thread: int = 256 * MIB, reps: int = 5) -> float:
    """GB/s copied by `threads` threads at once (ctypes.memmove releases the
    GIL), best of reps."""
    import torch

    bufs = [(torch.ones(bytes_per_thread, dtype=torch.uint8),
             torch.empty(bytes_per_thread, dtype=torch.uint8)) for _ in range(threads)]
    best = 0.0
    for _ in range(reps):
        start = threading.Barrier(threads + 1)

        def copy(src, dst):
            start.wait()
            ctypes.memmove(dst.data_ptr(), src.data_ptr(), bytes_per_thread)

        workers = [threading.Thread(target=copy, args=b) for b in bufs]
        for w in workers:
            w.start()
        start.wait()
        t0 = time.perf_counter()
        for w in workers:
            w.join()
        elapsed = time.perf_counter() - t0
        best = max(best, threads * bytes_per_thread / elapsed / 1e9)
    return best


def bus_factor(collective: str, n: int) -> float:
    return 2 * (n - 1) / n if collective == "all_reduce" else (n - 1) / n


def _iterations(size: int, quick: bool) -> int:
    if size <= 64 << 10:
        return 50 if quick else 200
    if size <= 4 * MIB:
        return 10 if quick else 30
    return 2 if quick else 5


def _worker(rank, world, port, sizes, quick, rounds, collectives, results):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    import torch
    import torch.distributed as dist

    torch.maia.set_device(rank)
    dist.init_process_group(backend="cpu:gloo,maia:maia", rank=rank, world_size=world,
                            device_id=torch.device("maia", rank),
                            timeout=datetime.timedelta(seconds=300))
    maia_backend = dist.group.WORLD._get_backend(torch.device("maia", rank))
    transport = maia_backend.transport
    out = []
    for collective in collectives:
        for size in sizes:
            elems = max(1, size // 4)
            if collective != "all_reduce":
                elems = max(world, elems // world * world)
            for backend in ("maia", "gloo"):
                device = torch.device("maia", rank) if backend == "maia" else torch.device("cpu")
                sync = torch.maia.synchronize if backend == "maia" else (lambda: None)
                if collective == "all_reduce":
                    t = torch.ones(elems, device=device)

                    def run(t=t):
                        dist.all_reduce(t)
                elif collective == "all_gather":
                    inp = torch.ones(elems // world, device=device)
                    outp = torch.empty(elems, device=device)

                    def run(inp=inp, outp=outp):
                        dist.all_gather_single(outp, inp)
                else:
                    inp = torch.ones(elems, device=device)
                    outp = torch.empty(elems // world, device=device)

                    def run(inp=inp, outp=outp):
                        dist.reduce_scatter_single(outp, inp)
                run()
                sync()
                iters = _iterations(size, quick)
                best = float("inf")
                for _ in range(rounds):
                    dist.barrier()
                    t0 = time.perf_counter()
                    for _ in range(iters):
                        run()
                    sync()
                    elapsed = (time.perf_counter() - t0) / iters
                    slowest = torch.tensor([elapsed], dtype=torch.float64)
                    dist.all_reduce(slowest, op=dist.ReduceOp.MAX)  # a CPU tensor: gloo
                    best = min(best, slowest.item())
                out.append((collective, elems * 4, backend, best))
                del run
    if rank == 0:
        results.put((transport, out))
    dist.barrier()
    dist.destroy_process_group()


def run_world(world: int, sizes, quick: bool, rounds: int, collectives=COLLECTIVES):
    import torch.multiprocessing as mp

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(r, world, port, sizes, quick, rounds, collectives,
                                                     results))
             for r in range(world)]
    for p in procs:
        p.start()
    transport, rows = results.get(timeout=3600)
    for p in procs:
        p.join()
        if p.exitcode != 0:
            raise SystemExit(f"rank process exited with {p.exitcode}")
    return transport, rows


def human(size: int) -> str:
    for unit, scale in (("MiB", MIB), ("KiB", 1 << 10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} B"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--max-bytes", default="256M")
    parser.add_argument("--min-bytes", default="8",
                        help="leave out smaller sizes (8 KiB is kept only if in range)")
    parser.add_argument("--collectives", nargs="+", choices=COLLECTIVES, default=COLLECTIVES)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json")
    args = parser.parse_args()

    os.environ.setdefault("MAIA_VISIBLE_DEVICES", ",".join(str(i) for i in range(max(args.ranks))))
    os.environ.setdefault("MAIA_NUM_CORES", "1")
    os.environ.setdefault("MAIA_DEVICE_MEMORY", "2G")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    min_bytes = parse_bytes(args.min_bytes)
    sizes = [s for s in sizes_up_to(parse_bytes(args.max_bytes), args.quick) if s >= min_bytes]
    report = []
    for world in args.ranks:
        memcpy = memcpy_bandwidth()
        transport, rows = run_world(world, sizes, args.quick, args.rounds,
                                    tuple(args.collectives))
        times = {(c, s, b): t for c, s, b, t in rows}
        print(f"\n{world} ranks, maia transport '{transport}', 2-thread memcpy {memcpy:.2f} GB/s")
        print(f"{'collective':<15}{'size':>10}{'maia us':>11}{'gloo us':>11}{'maia busbw':>12}"
              f"{'gloo busbw':>12}{'x gloo':>8}{'/memcpy':>9}")
        for c in args.collectives:
            for s in sorted({s for (cc, s, _) in times if cc == c}):
                tm, tg = times[(c, s, "maia")], times[(c, s, "gloo")]
                bm = s / tm * bus_factor(c, world) / 1e9
                bg = s / tg * bus_factor(c, world) / 1e9
                print(f"{c:<15}{human(s):>10}{tm * 1e6:>11.1f}{tg * 1e6:>11.1f}{bm:>12.3f}"
                      f"{bg:>12.3f}{tg / tm:>8.2f}{bm / memcpy:>9.2f}")
                report.append(dict(ranks=world, collective=c, bytes=s, maia_s=tm, gloo_s=tg,
                                   maia_busbw=bm, gloo_busbw=bg, memcpy=memcpy,
                                   transport=transport))
        sys.stdout.flush()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
