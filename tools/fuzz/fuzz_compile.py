#!/usr/bin/env python3
"""Differential fuzzer: random programs, torch.compile on maia vs eager CPU.

    fuzz_compile.py --seed 0 --count 200 [--minimize] [--out fuzz-failures]
    fuzz_compile.py --show 17          # print the program of seed 17
    fuzz_compile.py --nn --float64 ... # products, convolutions, pools, norms too
    fuzz_compile.py --nn --grad ...    # and the gradients of the float inputs
    fuzz_compile.py --eager ...        # the same programs eagerly on maia

Each failing program is written as standalone Python to OUT/seed_<n>.py
(run it with the maia environment to reproduce), its minimized form to
OUT/seed_<n>_min.py. A summary groups failures by signature.
"""

from __future__ import annotations

import argparse
import collections
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import torch  # noqa: E402

from minimize import minimize  # noqa: E402
from nn_ops import NN_CATEGORIES  # noqa: E402
from ops import CATEGORIES  # noqa: E402
from program_gen import DTYPES, DTYPES_WITH_FLOAT64, generate  # noqa: E402
from runner import run  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0, help="first seed")
    parser.add_argument("--count", type=int, default=100, help="number of programs")
    parser.add_argument("--minimize", action="store_true", help="shrink each failure")
    parser.add_argument("--out", default="fuzz-failures", help="folder for failing programs")
    parser.add_argument("--show", type=int, metavar="SEED", help="print one program and exit")
    parser.add_argument("--float64", action="store_true",
                        help="programs in float64 too (other programs for the same seeds)")
    parser.add_argument("--nn", action="store_true",
                        help="products, convolutions, pools, norms and attention too "
                             "(other programs for the same seeds)")
    parser.add_argument("--grad", action="store_true",
                        help="compare the gradients of the float inputs too (same programs)")
    parser.add_argument("--eager", action="store_true",
                        help="run the programs eagerly on maia instead of compiled")
    args = parser.parse_args(argv)
    options = {"dtypes": DTYPES_WITH_FLOAT64 if args.float64 else DTYPES,
               "categories": NN_CATEGORIES if args.nn else CATEGORIES, "grad": args.grad,
               "eager": args.eager}

    if args.show is not None:
        print(generate(args.show, **options).source())
        return 0
    torch.maia.set_fallback_warnings(False)
    out = pathlib.Path(args.out)
    groups = collections.defaultdict(list)
    start = time.monotonic()
    for seed in range(args.seed, args.seed + args.count):
        program = generate(seed, **options)
        outcome = run(program)
        print(f"seed {seed}: {outcome.status}", flush=True)
        if outcome.ok:
            continue
        groups[outcome.signature()].append(seed)
        _write(out / f"seed_{seed}.py", program, outcome)
        if args.minimize:
            small = minimize(program, outcome)
            _write(out / f"seed_{seed}_min.py", small, run(small))
    ours = sum(len(seeds) for signature, seeds in groups.items()
               if not signature.startswith("upstream"))
    print(f"\n{args.count} programs in {time.monotonic() - start:.0f} s, {ours} failing, "
          f"{sum(map(len, groups.values())) - ours} reproduced by Inductor CPU (upstream)")
    for signature, seeds in sorted(groups.items(), key=lambda g: -len(g[1])):
        print(f"  {len(seeds):3d} x {signature}  (seeds {seeds[:8]})")
    fallbacks = {op: n for op, n in torch.maia.fallback_counts().items() if n}
    if fallbacks:
        print(f"operators that ran on the host fallback: {fallbacks}")
    return 1 if ours else 0


def _write(path: pathlib.Path, program, outcome) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    comment = "\n".join("# " + line for line in f"{outcome.status}: {outcome.message}".splitlines())
    path.write_text(comment + "\n" + program.source())
    print(f"  wrote {path}")


if __name__ == "__main__":
    sys.exit(main())
