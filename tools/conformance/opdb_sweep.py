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
  upstream  compiled maia refuses or is wrong, and Inductor on the CPU
            fails the same sample: a fault of PyTorch's compiler
  timeout   the op took longer than --timeout seconds. The alarm may
            interrupt Dynamo anywhere and leave its state broken, so with
            --jsonl the sweep then restarts in a fresh process and resumes
            after the records the file already holds.
  skipped   op_db itself skips or expects a failure of PyTorch's own
            device-vs-CPU comparison (TestCommon.test_compare_cpu) for this
            op and dtype: random ops, empty, ... (the reason is recorded)
A sample the CPU refuses must be refused on maia too (else: wrong); an
input the CPU leaves unchanged must stay unchanged on maia, and one it
updates in place (running statistics, ...) must end with the CPU's values
(else: wrong).
Decompositions whose vectors are defined up to sign (svd, eigh, ...) are
compared, as PyTorch's own device-vs-CPU test compares them, through the
sample's output_process_fn_grad (|U|, U @ Vh, the values).
Tolerances: op_db's own toleranceOverride for test_compare_cpu where it has
one for the dtype; otherwise assert_close's defaults, and for
float16/bfloat16 those of test/python/opinfo_support.py (PyTorch's
device-vs-CPU comparison).

Usage (the README's environment; MAIA_COMPILE for --compiled):
  .venv/bin/python tools/conformance/opdb_sweep.py --ops '^(add|mul)$' --compiled
  .venv/bin/python tools/conformance/opdb_sweep.py --shard 3/8 --jsonl out.jsonl
  .venv/bin/python tools/conformance/opdb_sweep.py --summarize out*.jsonl
  .venv/bin/python tools/conformance/opdb_sweep.py --markdown out*.jsonl
"""

from __future__ import annotations

import argparse
import collections
import functools
import json
import os
import re
import signal
import sys
import time
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "test" / "python"))
import exact_reference  # noqa: E402
from opinfo_support import LOW_PRECISION_TOLERANCES, new_fallbacks  # noqa: E402

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float64": torch.float64,
          "int64": torch.int64, "bool": torch.bool, "float16": torch.float16}


class Timeout(Exception):
    pass


# Set by the alarm itself: Dynamo wraps exceptions raised inside a compile
# (BackendCompilerFailed), so the exception type cannot tell a timeout.
_timed_out = False


def _on_alarm(signum, frame):
    global _timed_out
    _timed_out = True
    signal.alarm(5)  # again, should something catch this one and carry on
    raise Timeout()


def _to(device):
    def convert(x):
        return x.to(device) if isinstance(x, torch.Tensor) else x
    convert.device = device
    return convert


# Ops whose samples pass tensor arguments that stay on the CPU on every
# device, as ATen requires (op_db makes them on the CPU whatever the device).
HOST_ARGUMENTS = {
    "tensor_split": "tensor_indices_or_sections must be a CPU tensor",
}


def _call(fn, sample, convert, op_name=None):
    from torch.utils._pytree import tree_map

    args_convert = (lambda x: x) if op_name in HOST_ARGUMENTS else convert
    kwargs = tree_map(convert, sample.kwargs)
    if "device" in kwargs:  # factories (linspace's tensor overload): op_db made them for cpu
        kwargs["device"] = convert.device
    return fn(tree_map(convert, sample.input), *tree_map(args_convert, sample.args), **kwargs)


def _recording(convert):
    """convert, remembering each (original, converted) tensor pair."""
    def record(x):
        y = convert(x)
        if isinstance(x, torch.Tensor):
            record.pairs.append((x, y))
        return y
    record.device = convert.device
    record.pairs = []
    return record


def _bytes(t):
    """A copy of t's elements as bytes in row-major order (NaN payloads
    included)."""
    t = t.detach().cpu().clone()
    if t.is_conj():
        t = t.resolve_conj()
    return t.contiguous().view(-1).view(torch.uint8) if t.numel() else t.view(-1)


def _same_updates(pairs, cpu_before, cpu_after, tolerances) -> bool:
    """Whether each input the op updated in place holds the CPU's values on
    maia too. pairs: (pristine input, its maia copy after the op);
    cpu_before/cpu_after: the same inputs of the CPU's run, in order."""
    index = {id(t): i for i, t in enumerate(cpu_before)}
    for pristine, y in pairs:
        i = index.get(id(pristine))
        if y is pristine or i is None:
            continue
        x = cpu_after[i]
        if x.dtype != y.dtype or x.shape != y.shape:
            continue
        try:
            torch.testing.assert_close(y.detach().cpu(), x.detach(), equal_nan=True, **tolerances)
        except AssertionError:
            return False
    return True


def _cloned(sample):
    """A copy of sample's tensors (input, args, kwargs), for a second run."""
    import types
    from torch.utils._pytree import tree_map

    def clone(x):
        return x.clone() if isinstance(x, torch.Tensor) else x
    return types.SimpleNamespace(input=tree_map(clone, sample.input),
                                 args=tree_map(clone, sample.args),
                                 kwargs=tree_map(clone, sample.kwargs))


def _sample_tensors(sample):
    """The sample's strided tensors (sparse ones have no bytes to compare)."""
    return [t for t in _flat_tensors((sample.input, sample.args, sample.kwargs))
            if t.layout == torch.strided]


def _runner(op, mode):
    if mode == "eager":
        return op
    import torch._dynamo

    torch._dynamo.reset()
    return torch.compile(lambda *a, **k: op(*a, **k), dynamic=(mode == "dynamic"))


def _active_decorations(op, dtype):
    """The decorators op_db applies to PyTorch's device-vs-CPU comparison
    (TestCommon.test_compare_cpu) of op at dtype on a PrivateUse1 device."""
    from torch.testing._internal.opinfo.core import DecorateInfo

    for info in op.decorators:
        if isinstance(info, DecorateInfo) and info.is_active(
                "TestCommon", "test_compare_cpu", "privateuse1", dtype, {}):
            yield from info.decorators


def upstream_skip(op, dtype) -> str | None:
    """Why op_db skips (or expects to fail) that comparison, if it does,
    or why it cannot be made: the op is random and op_db reseeds the
    generator before each call (wrapper_set_seed), which gives the same
    numbers only on one device type."""
    from torch.testing._internal.common_device_type import toleranceOverride

    code = getattr(op.op, "__code__", None)
    if code is not None and "wrapper_set_seed" in code.co_names:
        return "random op reseeded by wrapper_set_seed (device generators differ)"

    reasons = [getattr(d, "__name__", str(d)) for d in _active_decorations(op, dtype)
               if not isinstance(d, toleranceOverride)]
    return ", ".join(reasons) if reasons else None


def upstream_tolerance(op, dtype) -> dict:
    """op_db's own tolerance for that comparison (a toleranceOverride), as
    assert_close keywords; empty if it has none for dtype."""
    from torch.testing._internal.common_device_type import toleranceOverride

    for decorator in _active_decorations(op, dtype):
        if isinstance(decorator, toleranceOverride) and dtype in decorator.d:
            tol = decorator.d[dtype]
            return {"atol": tol.atol, "rtol": tol.rtol}
    return {}


def _to_cpu(value):
    from torch.utils._pytree import tree_map

    return tree_map(lambda x: x.cpu() if isinstance(x, torch.Tensor) else x, value)


def _statistics_in_float32(expected):
    """For a 16-bit input, native_layer_norm and _batch_norm_with_update
    return their saved statistics (outputs 1 and 2) in float32 on every
    device but the CPU (torch._refs / torch._decomp keep the input dtype only
    `if input.device.type == "cpu"`; CUDA's kernels do the same). maia
    follows the non-CPU convention: compare with the CPU's values in float32."""
    return tuple(t.float() if i in (1, 2) and t.dtype in (torch.float16, torch.bfloat16) else t
                 for i, t in enumerate(expected))


_STATISTICS_NOTE = ("device convention: saved statistics in float32 for a 16-bit input, "
                    "as on CUDA (the CPU keeps the input dtype)")

# op -> (what a non-CPU device returns instead of the CPU's result, the note)
DEVICE_CONVENTIONS = {
    "native_layer_norm": (_statistics_in_float32, _STATISTICS_NOTE),
    "_batch_norm_with_update": (_statistics_in_float32, _STATISTICS_NOTE),
}


def judge(op, dtype, mode) -> dict:
    """The verdict for op at dtype in mode, with the first failure's detail."""
    reason = upstream_skip(op, dtype)
    if reason is not None:
        return {"verdict": "skipped", "detail": f"op_db: {reason}"}
    samples = list(op.sample_inputs("cpu", dtype, requires_grad=False))
    if not samples:
        return {"verdict": "no samples"}
    fn = _runner(op, mode)
    tolerances = upstream_tolerance(op, dtype) or LOW_PRECISION_TOLERANCES.get(dtype, {})
    fallbacks = collections.Counter()
    notes = set()
    for index, sample in enumerate(samples):
        pristine = _cloned(sample)  # what maia starts from, whatever the CPU mutates
        try:
            expected = op(sample.input, *sample.args, **sample.kwargs)
        except Exception:
            try:
                _call(fn, pristine, _to("maia"), op.name)
                torch.maia.synchronize()
            except Timeout:
                raise
            except Exception:
                continue
            return {"verdict": "wrong", "sample": index, "detail": "the CPU refuses, maia does not"}
        cpu_before, cpu_after = _sample_tensors(pristine), _sample_tensors(sample)
        pristine_bytes = {id(t): _bytes(t) for t in cpu_before}
        cpu_mutates = any(not torch.equal(pristine_bytes[id(b)], _bytes(a))
                          for b, a in zip(cpu_before, cpu_after))
        counts_before = torch.maia.fallback_counts()
        to_maia = _recording(_to("maia"))
        try:
            actual = _call(fn, pristine, to_maia, op.name)
            torch.maia.synchronize()
        except Timeout:
            raise
        except Exception as error:
            return _unless_upstream(op, sample, mode, expected, tolerances, {
                "verdict": "refused", "sample": index,
                "detail": f"{type(error).__name__}: {str(error).splitlines()[0][:300]}"})
        fallbacks.update({op_name: count - counts_before.get(op_name, 0)
                          for op_name, count in new_fallbacks(counts_before).items()})
        if not cpu_mutates and any(y is not x and id(x) in pristine_bytes
                                   and not torch.equal(pristine_bytes[id(x)], _bytes(y))
                                   for x, y in to_maia.pairs):
            return {"verdict": "wrong", "sample": index,
                    "detail": "maia overwrote an input tensor the CPU leaves unchanged"}
        if cpu_mutates and not _same_updates(to_maia.pairs, cpu_before, cpu_after, tolerances):
            return {"verdict": "wrong", "sample": index,
                    "detail": "maia's in-place update of an input differs from the CPU's"}
        if op.name in DEVICE_CONVENTIONS:
            convert, note = DEVICE_CONVENTIONS[op.name]
            converted = convert(expected)
            if any(a.dtype != b.dtype for a, b in zip(_flat_tensors(converted),
                                                      _flat_tensors(expected))):
                notes.add(note)
            expected = converted
        try:
            torch.testing.assert_close(_to_cpu(actual), expected, equal_nan=True,
                                       check_device=False, **tolerances)
        except AssertionError as error:
            excuse = (_equal_up_to_gauge(sample, expected, _to_cpu(actual), tolerances)
                      or _excuse(op, sample, expected, _to_cpu(actual)))
            if excuse:
                notes.add(excuse)
                continue
            return _unless_upstream(op, sample, mode, expected, tolerances, {
                "verdict": "wrong", "sample": index,
                "detail": " ".join(str(error).split())[:300]})
        except Exception as error:  # e.g. a tensor where the CPU gave a tuple
            return {"verdict": "wrong", "sample": index,
                    "detail": f"{type(error).__name__}: {str(error).splitlines()[0][:300]}"}
    result = {"verdict": "native"}
    if fallbacks:
        result = {"verdict": "fallback", "fallbacks": dict(fallbacks)}
    if notes:
        result["notes"] = sorted(notes)
    return result


def _flat_tensors(value):
    from torch.utils._pytree import tree_leaves

    return [x for x in tree_leaves(value) if isinstance(x, torch.Tensor)]


def _equal_up_to_gauge(sample, expected, actual, tolerances) -> str | None:
    """Whether both results agree once op_db's output_process_fn_grad has
    taken what a decomposition leaves free (the signs of singular vectors
    and eigenvectors: |U|, U @ Vh): how PyTorch's own device-vs-CPU test
    (TestCommon.test_compare_cpu) compares them."""
    process = sample.output_process_fn_grad
    try:
        torch.testing.assert_close(process(actual), process(expected), equal_nan=True,
                                   check_device=False, **tolerances)
    except Exception:
        return None
    return "equal up to the vectors' signs, as op_db's output_process_fn_grad compares them"


def _excuse(op, sample, expected, actual) -> str | None:
    """Why a maia result outside the tolerances is still right, if it is:
    the op is random (the CPU disagrees with itself), or maia is within
    twice the CPU's own error of the float64 result (both round; they
    differ in summation order), or, for the special functions of
    test/python/exact_reference.py, of mpmath's values (the CPU's float64
    results themselves are off there)."""
    again = op(sample.input, *sample.args, **sample.kwargs)
    if any(not torch.equal(a, b) and not (a.isnan() & b.isnan()).any()
           for a, b in zip(_flat_tensors(expected), _flat_tensors(again))
           if a.shape == b.shape and a.dtype == b.dtype):
        return "random: the CPU's own results differ between runs"
    if op.name in exact_reference.FUNCTIONS:
        return _excuse_by_exact_values(op, sample, expected, actual)
    from torch.utils._pytree import tree_map

    def to_double(x):
        return x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x
    excuse = _excuse_by_double_result(op, sample, expected, actual, to_double)
    if (excuse is None and isinstance(sample.input, torch.Tensor)
            and not sample.input.is_floating_point()):
        # An integer input promoted to a float result (e.g. the FFTs): the
        # float64 result is that of the input as float64.
        def input_to_double(x):
            return (x.double() if isinstance(x, torch.Tensor) and x.dtype != torch.bool
                    else to_double(x))
        excuse = _excuse_by_double_result(op, sample, expected, actual, input_to_double,
                                          input_only=True)
    return excuse


def _excuse_by_double_result(op, sample, expected, actual, to_double, input_only=False):
    from torch.utils._pytree import tree_map

    args = sample.args if input_only else tree_map(to_double, sample.args)
    kwargs = sample.kwargs if input_only else tree_map(to_double, sample.kwargs)
    try:
        exact = op(tree_map(to_double, sample.input), *args, **kwargs)
    except Exception:
        return None
    triples = list(zip(_flat_tensors(expected), _flat_tensors(actual), _flat_tensors(exact)))
    if not triples:
        return None
    broken = False
    for cpu, maia, ref in triples:
        if cpu.shape != maia.shape or cpu.dtype != maia.dtype or not cpu.is_floating_point():
            return None
        ref = ref.double()
        cpu_deviation, maia_deviation = _deviation(cpu, ref), _deviation(maia, ref)
        if not cpu_deviation.isfinite().all():
            # The CPU's result is NaN or infinite where the float64 result is
            # finite: twice its error says nothing; maia must be within the
            # dtype's relative tolerance of the float64 result's magnitude.
            broken = True
            tolerance = _relative_tolerance(maia.dtype)
            if not maia_deviation.abs().max() <= tolerance * ref.abs().max().nan_to_num(0):
                return None
        elif not _within_twice_the_cpus_error(cpu_deviation, maia_deviation):
            return None
    if broken:
        return ("the CPU's result is not finite where the float64 result is; maia's is within "
                "the dtype's tolerance of the float64 result")
    return "within twice the CPU's error of the float64 result"


def _relative_tolerance(dtype) -> float:
    """assert_close's default rtol for dtype (float16/bfloat16: that of
    test/python/opinfo_support.py)."""
    from torch.testing._comparison import default_tolerances

    if dtype in LOW_PRECISION_TOLERANCES:
        return LOW_PRECISION_TOLERANCES[dtype]["rtol"]
    return default_tolerances(dtype)[0]


def _deviation(x, ref):
    """x - ref in float64: 0 where they are equal (infinities included) or
    the reference is NaN (it cannot judge), infinite where x alone is NaN."""
    x = x.double()
    unjudged = (x == ref) | ref.isnan()
    deviation = torch.where(unjudged, torch.zeros_like(x), x - ref)
    return deviation.nan_to_num(float("inf"), float("inf"), float("-inf"))


def _within_twice_the_cpus_error(cpu_deviation, maia_deviation) -> bool:
    """The excuses' rule: maia's largest deviation from the reference is at
    most twice the CPU's."""
    return bool(maia_deviation.abs().max() <= 2 * cpu_deviation.abs().max())


def _excuse_by_exact_values(op, sample, expected, actual) -> str | None:
    """For a special function with an mpmath reference: maia's largest error
    from the exact values is at most twice the CPU's (where the exact value
    is finite; the special values must match the CPU exactly)."""
    arity = exact_reference.FUNCTIONS[op.name][1]
    arguments = [sample.input, *sample.args][:arity]
    if not all(isinstance(a, torch.Tensor) for a in arguments):
        return None
    exact = exact_reference.exact(op.name, *arguments)
    finite = exact.isfinite()
    cpu, maia = expected.double(), actual.double()
    if not torch.equal(cpu[~finite].nan_to_num(7.0), maia[~finite].nan_to_num(7.0)):
        return None
    if not _within_twice_the_cpus_error((cpu - exact)[finite], (maia - exact)[finite]):
        return None
    return "within twice the CPU's error of the exact (mpmath) values"


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
    if args.modes:
        modes = [mode for mode in args.modes.split(",") if mode in modes]
    done = _recorded(args.jsonl)
    out = open(args.jsonl, "a") if args.jsonl else sys.stdout
    signal.signal(signal.SIGALRM, _on_alarm)
    for op in ops:
        supported = op.supported_dtypes("cpu")
        for dtype_name in args.dtypes.split(","):
            dtype = DTYPES[dtype_name]
            if dtype not in supported:
                continue
            for mode in modes:
                if (op.name, op.variant_test_name, dtype_name, mode) in done:
                    continue
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
                if _timed_out:
                    result = {"verdict": "timeout",
                              "detail": f"over {args.timeout} s ({result.get('detail', '')})"}
                result.update(op=op.name, variant=op.variant_test_name, dtype=dtype_name,
                              mode=mode, seconds=round(time.monotonic() - start, 2))
                print(json.dumps(result), file=out, flush=True)
                if _timed_out and args.jsonl:
                    out.close()
                    os.execv(sys.executable, [sys.executable, *sys.argv])


def _record_key(record: dict) -> tuple:
    """What one record is about: one verdict per (op, variant, dtype, mode)."""
    return record["op"], record["variant"], record["dtype"], record["mode"]


def _recorded(jsonl: str | None) -> set:
    """The keys of the records an earlier run left in jsonl."""
    if not jsonl or not os.path.exists(jsonl):
        return set()
    with open(jsonl) as records:
        return {_record_key(r) for r in map(json.loads, records)}


def _squeezed_pointwise_of_dynamic_extent(x):
    # A pointwise buffer of extent (s+1)//2 + 1 read through a squeeze view:
    # converting the view to a strided one asks whether the stride
    # ((s+1)//2 + 1) divides the expanded ((s+1)//2)**2 + 2*((s+1)//2) + 1,
    # and torch's value-range analysis raises on the quotient's negative power.
    n = (x.shape[-1] + 1) // 2 + 1
    return (x[None, :, :n, :n] * 2)[0]


# Compiled failures that Inductor CPU does not show on the op's own sample,
# because its CPU-only lowering avoids the pattern, but does show on a
# minimal program of that pattern. The reproducer runs in every sweep: if
# Inductor stops failing it, the verdict is maia's again.
# (op, mode) -> (reproducer, its input, why the CPU's own sample passes).
UPSTREAM_REPRODUCERS = {
    (name, "dynamic"): (
        _squeezed_pointwise_of_dynamic_extent, lambda: torch.randn(3, 8, 8),
        "Inductor peels a convolution's bias into a pointwise add on every device but the "
        "CPU (kernel/conv.py); on an unbatched input that add is read through a squeeze")
    for name in ("nn.functional.conv1d", "nn.functional.conv2d", "nn.functional.conv3d",
                 "nn.functional.conv_transpose1d", "nn.functional.conv_transpose2d",
                 "nn.functional.conv_transpose3d")
}


@functools.cache
def _reproducer_error(key: tuple) -> str | None:
    """Inductor CPU's error on the known reproducer of key, None if it
    passes; the same for every dtype of the op, so computed once."""
    program, make_input, _ = UPSTREAM_REPRODUCERS[key]
    torch._dynamo.reset()
    try:
        torch.compile(program, dynamic=True)(make_input())
        return None
    except Timeout:
        raise
    except Exception as error:
        return f"{type(error).__name__}: {str(error).splitlines()[0][:300]}"


def _upstream_reproducer_fails(op, mode, failure: dict) -> str | None:
    """Why the failure is upstream, if the known reproducer of (op, mode)
    fails on Inductor CPU the way maia failed."""
    key = (op.name, mode)
    if key not in UPSTREAM_REPRODUCERS:
        return None
    cpu = _reproducer_error(key)
    if cpu is None or cpu not in failure["detail"]:
        return None
    return f"{UPSTREAM_REPRODUCERS[key][2]}; Inductor CPU fails a minimal program of it ({cpu})"


def _unless_upstream(op, sample, mode, expected, tolerances, failure: dict) -> dict:
    """failure, unless Inductor on the CPU fails the same sample too (or a
    known reproducer of the same failure, UPSTREAM_REPRODUCERS): then the
    fault is in PyTorch's compiler, not in maia, and the verdict is
    `upstream` with both details."""
    if mode == "eager":
        return failure
    reproduced = _upstream_reproducer_fails(op, mode, failure)
    if reproduced:
        return {"verdict": "upstream", "sample": failure["sample"],
                "detail": f"{reproduced}; maia: {failure['detail']}"}
    try:
        actual = _call(_runner(op, mode), sample, _to("cpu"))
        torch.testing.assert_close(actual, expected, equal_nan=True, **tolerances)
        return failure
    except Timeout:
        raise
    except Exception as error:
        cpu = f"{type(error).__name__}: {' '.join(str(error).split())[:200]}"
    return {"verdict": "upstream", "sample": failure["sample"],
            "detail": f"Inductor CPU fails too ({cpu}); maia: {failure['detail']}"}


def _latest_records(paths) -> list[dict]:
    """The records of all files, one per (op, variant, dtype, mode): a later
    file or line replaces an earlier one (a re-run of some ops after a full
    run)."""
    latest = {}
    for path in paths:
        for line in open(path):
            r = json.loads(line)
            latest[_record_key(r)] = r
    return list(latest.values())


def summarize(paths):
    """A markdown table: op, then per mode the verdict counts over dtypes,
    then the first non-native detail."""
    rows = collections.defaultdict(dict)
    totals = collections.defaultdict(collections.Counter)
    for r in _latest_records(paths):
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


QUIET_VERDICTS = {"native", "fallback", "skipped", "no samples"}


def per_op_table(paths) -> str:
    """One markdown row per op and mode: the dtypes under each verdict, the
    host-fallback operators and the first reason of anything else."""
    ops = collections.defaultdict(lambda: collections.defaultdict(list))
    totals = collections.defaultdict(collections.Counter)
    host_only = set()
    for r in _latest_records(paths):
        name = f"{r['op']}.{r['variant']}".rstrip(".")
        ops[(name, r["mode"])][r["verdict"]].append(r)
        totals[r["mode"]][r["verdict"]] += 1
    for (name, mode), verdicts in ops.items():
        if mode == "eager" and "fallback" in verdicts and "native" not in verdicts:
            host_only.add(name)
    verdict_names = ["native", "fallback", "refused", "wrong", "upstream", "timeout", "skipped",
                     "no samples"]
    lines = ["| mode | " + " | ".join(verdict_names) + " |",
             "|---" * (len(verdict_names) + 1) + "|"]
    for mode, counter in sorted(totals.items()):
        lines.append(f"| {mode} | " + " | ".join(str(counter[v]) for v in verdict_names) + " |")
    lines += ["", f"Ops that run only through the host fallback (eager, no dtype native): "
              f"**{len(host_only)}**. Compiled (static, dynamic) rows are listed only where "
              "a dtype is refused, wrong, upstream or timed out.", "",
              "| op | mode | native | host fallback | refused / wrong / skipped: reason |",
              "|---|---|---|---|---|"]
    for (name, mode), verdicts in sorted(ops.items()):
        if mode != "eager" and not set(verdicts) - QUIET_VERDICTS:
            continue  # compiled rows only where something went wrong
        native = " ".join(r["dtype"] for r in verdicts.get("native", []))
        fallback = " ".join(r["dtype"] for r in verdicts.get("fallback", []))
        if fallback:
            used = sorted({f for r in verdicts["fallback"] for f in r.get("fallbacks", {})})
            fallback += f" ({', '.join(used)})"
        others = []
        for verdict in ("refused", "wrong", "upstream", "timeout", "skipped", "no samples"):
            for r in verdicts.get(verdict, [])[:1]:
                dtypes = " ".join(x["dtype"] for x in verdicts[verdict])
                detail = (r.get("detail") or "")[:160].replace("|", "/")
                others.append(f"{verdict} {dtypes}: {detail}")
        lines.append(f"| {name} | {mode} | {native} | {fallback} | {'; '.join(others)} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ops", help="regex over op names (name.variant)")
    parser.add_argument("--shard", default="0/1", help="i/n: every n-th op from the i-th")
    parser.add_argument("--dtypes", default="float32,bfloat16,float64,int64,bool")
    parser.add_argument("--compiled", action="store_true", help="also torch.compile on maia")
    parser.add_argument("--modes", help="with --compiled: only these of eager,static,dynamic")
    parser.add_argument("--timeout", type=int, default=120, help="seconds per (op, dtype, mode)")
    parser.add_argument("--jsonl", help="append results here (default: stdout)")
    parser.add_argument("--summarize", nargs="+", metavar="JSONL",
                        help="print the markdown summary of earlier results")
    parser.add_argument("--markdown", nargs="+", metavar="JSONL",
                        help="print the per-op table docs/conformance.md publishes")
    args = parser.parse_args()
    if args.markdown:
        print(per_op_table(args.markdown))
    elif args.summarize:
        summarize(args.summarize)
    else:
        sweep(args)


if __name__ == "__main__":
    main()
