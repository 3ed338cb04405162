#!/usr/bin/env python3
"""Runs PyTorch's OpInfo database (op_db) on maia and compares with the CPU.

For each op and each dtype the CPU supports (of --dtypes), every sample
input runs on the CPU and on maia, eagerly and (with --compiled) under
torch.compile on maia, static and dynamic. Each (op, dtype, mode) gets one
verdict:
  native    every sample matches and nothing ran on the host fallback
  fallback  every sample matches; some ran on the counted host fallback
  refused   maia raised where the CPU did not (the error is recorded)
  wrong     a result differs from the CPU beyond the tolerances
  timeout   the op took longer than --timeout seconds
  skipped   op_db itself skips or expects a failure of PyTorch's own
            device-vs-CPU comparison (TestCommon.test_compare_cpu) for this
            op and dtype: random ops, empty, ... (the reason is recorded)
A sample the CPU refuses must be refused on maia too (else: wrong).
Tolerances: assert_close's defaults, and for float16/bfloat16 those of
test/python/opinfo_support.py (PyTorch's device-vs-CPU comparison).

Usage (the README's environment; MAIA_COMPILE for --compiled):
  .venv/bin/python tools/conformance/opdb_sweep.py --ops '^(add|mul)$' --compiled
  .venv/bin/python tools/conformance/opdb_sweep.py --shard 3/8 --jsonl out.jsonl
  .venv/bin/python tools/conformance/opdb_sweep.py --summarize out*.jsonl
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import signal
import sys
import time
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "test" / "python"))
from opinfo_support import LOW_PRECISION_TOLERANCES, new_fallbacks  # noqa: E402

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float64": torch.float64,
          "int64": torch.int64, "bool": torch.bool, "float16": torch.float16}


class Timeout(Exception):
    pass


def _on_alarm(signum, frame):
    raise Timeout()


def _to(device):
    def convert(x):
        return x.to(device) if isinstance(x, torch.Tensor) else x
    return convert


def _call(fn, sample, convert):
    from torch.utils._pytree import tree_map

    return fn(tree_map(convert, sample.input), *tree_map(convert, sample.args),
              **tree_map(convert, sample.kwargs))


def _runner(op, mode):
    if mode == "eager":
        return op
    import torch._dynamo

    torch._dynamo.reset()
    return torch.compile(lambda *a, **k: op(*a, **k), dynamic=(mode == "dynamic"))


def upstream_skip(op, dtype) -> str | None:
    """Why op_db skips (or expects to fail) PyTorch's device-vs-CPU
    comparison of op at dtype, if it does."""
    from torch.testing._internal.opinfo.core import DecorateInfo

    for info in op.decorators:
        if not isinstance(info, DecorateInfo) or not info.is_active(
                "TestCommon", "test_compare_cpu", "privateuse1", dtype, {}):
            continue
        return ", ".join(getattr(d, "__name__", str(d)) for d in info.decorators)
    return None


def _to_cpu(value):
    from torch.utils._pytree import tree_map

    return tree_map(lambda x: x.cpu() if isinstance(x, torch.Tensor) else x, value)


def judge(op, dtype, mode) -> dict:
    """The verdict for op at dtype in mode, with the first failure's detail."""
    reason = upstream_skip(op, dtype)
    if reason is not None:
        return {"verdict": "skipped", "detail": f"op_db: {reason} on test_compare_cpu"}
    samples = list(op.sample_inputs("cpu", dtype, requires_grad=False))
    if not samples:
        return {"verdict": "no samples"}
    fn = _runner(op, mode)
    tolerances = LOW_PRECISION_TOLERANCES.get(dtype, {})
    fallbacks = collections.Counter()
    for index, sample in enumerate(samples):
        try:
            expected = op(sample.input, *sample.args, **sample.kwargs)
        except Exception:
            try:
                _call(fn, sample, _to("maia"))
                torch.maia.synchronize()
            except Timeout:
                raise
            except Exception:
                continue
            return {"verdict": "wrong", "sample": index, "detail": "the CPU refuses, maia does not"}
        before = torch.maia.fallback_counts()
        try:
            actual = _call(fn, sample, _to("maia"))
            torch.maia.synchronize()
        except Timeout:
            raise
        except Exception as error:
            return {"verdict": "refused", "sample": index,
                    "detail": f"{type(error).__name__}: {str(error).splitlines()[0][:300]}"}
        fallbacks.update({op_name: count - before.get(op_name, 0)
                          for op_name, count in new_fallbacks(before).items()})
        try:
            torch.testing.assert_close(_to_cpu(actual), expected, equal_nan=True,
                                       check_device=False, **tolerances)
        except AssertionError as error:
            return {"verdict": "wrong", "sample": index,
                    "detail": " ".join(str(error).split())[:300]}
        except Exception as error:  # e.g. a tensor where the CPU gave a tuple
            return {"verdict": "wrong", "sample": index,
                    "detail": f"{type(error).__name__}: {str(error).splitlines()[0][:300]}"}
    if fallbacks:
        return {"verdict": "fallback", "fallbacks": dict(fallbacks)}
    return {"verdict": "native"}


def sweep(args):
    from torch.testing._internal.common_methods_invocations import op_db

    torch.maia.set_fallback_warnings(False)
    warnings.filterwarnings("ignore")
    # Every sample of a static compile is its own graph: without this, Dynamo
    # stops compiling after 8 and runs the rest eagerly.
    torch._dynamo.config.recompile_limit = 10_000
    torch._dynamo.config.accumulated_recompile_limit = 100_000
    pattern = re.compile(args.ops) if args.ops else None
    index, count = (int(v) for v in args.shard.split("/"))
    ops = [op for op in op_db
           if pattern is None or pattern.search(f"{op.name}.{op.variant_test_name}".rstrip("."))]
    ops = ops[index::count]
    modes = ["eager"] + (["static", "dynamic"] if args.compiled else [])
    out = open(args.jsonl, "a") if args.jsonl else sys.stdout
    signal.signal(signal.SIGALRM, _on_alarm)
    for op in ops:
        supported = op.supported_dtypes("cpu")
        for dtype_name in args.dtypes.split(","):
            dtype = DTYPES[dtype_name]
            if dtype not in supported:
                continue
            for mode in modes:
                start = time.monotonic()
                signal.alarm(args.timeout)
                try:
                    result = judge(op, dtype, mode)
                except Timeout:
                    result = {"verdict": "timeout"}
                except Exception as error:  # the sweep itself must go on
                    result = {"verdict": "refused",
                              "detail": f"{type(error).__name__}: {str(error)[:300]}"}
                finally:
                    signal.alarm(0)
                result.update(op=op.name, variant=op.variant_test_name, dtype=dtype_name,
                              mode=mode, seconds=round(time.monotonic() - start, 2))
                print(json.dumps(result), file=out, flush=True)


def summarize(paths):
    """A markdown table: op, then per mode the verdict counts over dtypes,
    then the first non-native detail."""
    rows = collections.defaultdict(dict)
    totals = collections.defaultdict(collections.Counter)
    for path in paths:
        for line in open(path):
            r = json.loads(line)
            name = f"{r['op']}.{r['variant']}".rstrip(".")
            rows[name][(r["mode"], r["dtype"])] = r
            totals[r["mode"]][r["verdict"]] += 1
    print("| mode | " + " | ".join(sorted({v for c in totals.values() for v in c})) + " |")
    for mode, counter in totals.items():
        print(f"| {mode} | " + " | ".join(str(counter[v]) for v in
                                            sorted({v for c in totals.values() for v in c})) + " |")
    print()
    print("| op | dtype | mode | verdict | detail |")
    print("|---|---|---|---|---|")
    for name in sorted(rows):
        for (mode, dtype), r in sorted(rows[name].items()):
            if r["verdict"] == "native":
                continue
            detail = r.get("detail") or ", ".join(sorted(r.get("fallbacks", {})))
            print(f"| {name} | {dtype} | {mode} | {r['verdict']} | {detail.replace('|', '/')} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ops", help="regex over op names (name.variant)")
    parser.add_argument("--shard", default="0/1", help="i/n: every n-th op from the i-th")
    parser.add_argument("--dtypes", default="float32,bfloat16,float64,int64,bool")
    parser.add_argument("--compiled", action="store_true", help="also torch.compile on maia")
    parser.add_argument("--timeout", type=int, default=120, help="seconds per (op, dtype, mode)")
    parser.add_argument("--jsonl", help="append results here (default: stdout)")
    parser.add_argument("--summarize", nargs="+", metavar="JSONL",
                        help="print the markdown summary of earlier results")
    args = parser.parse_args()
    if args.summarize:
        summarize(args.summarize)
    else:
        sweep(args)


if __name__ == "__main__":
    main()
