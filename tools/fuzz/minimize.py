"""Shrinks a failing program while it keeps failing the same way.

Greedy passes to a fixed point, cheapest first: drop unused inputs, keep
one output, bypass an op (its uses read one of its operands instead), drop
an op with everything that depends on it, make inputs contiguous, make the
call static, shrink each size. A candidate counts only if eager CPU still runs it and the
compiled run fails with the same signature (status and first line).
"""

from __future__ import annotations

import dataclasses
import re

from runner import run


def minimize(program, outcome, budget: int = 120, log=print):
    target = outcome.signature()
    tried = 0

    def still_fails(candidate) -> bool:
        nonlocal tried
        tried += 1
        result = run(candidate)
        return not result.ok and result.status != "invalid" and result.signature() == target

    changed = True
    while changed and tried < budget:
        changed = False
        for candidate in _candidates(program):
            if tried >= budget:
                break
            if still_fails(candidate):
                log(f"  shrunk: {len(candidate.ops)} ops, sizes {candidate.sizes}")
                program, changed = candidate, True
                break
    return program


def _candidates(p):
    pruned = _prune(p, p.ops, p.outputs)
    if len(pruned.inputs) < len(p.inputs):  # inputs nothing reads
        yield pruned
    if len(p.outputs) > 1:
        for out in p.outputs:
            yield _prune(p, p.ops, [out])
    for i, op in enumerate(p.ops):
        for operand in op.uses:
            if operand.startswith(("v", "a")) and not _is_index_input(p, operand):
                yield _bypass(p, i, operand)
    for i in reversed(range(len(p.ops))):
        yield _drop(p, i)
    for j, inp in enumerate(p.inputs):
        if inp.layout != "contiguous" and inp.high is None:
            inputs = list(p.inputs)
            inputs[j] = dataclasses.replace(inp, layout="contiguous")
            yield dataclasses.replace(p, inputs=inputs)
    if p.dynamic is not None:
        yield dataclasses.replace(p, dynamic=None, alt_sizes=None)
    for name, value in sorted(p.sizes.items()):
        for smaller in sorted({1, 2, value // 2, value - 1}):
            if 0 < smaller < value:
                yield _resized(p, name, smaller)


def _is_index_input(p, name):
    return any(i.name == name and i.high is not None for i in p.inputs)


def _resized(p, name, value):
    sizes = dict(p.sizes, **{name: value})
    alt = None if p.alt_sizes is None else dict(p.alt_sizes, **{name: value + (
        p.alt_sizes[name] - p.sizes[name])})
    return dataclasses.replace(p, sizes=sizes, alt_sizes=alt)


def _bypass(p, i, operand):
    """Op i removed; later ops read operand where they read its result."""
    out = p.ops[i].out
    ops = []
    for op in p.ops[:i] + p.ops[i + 1:]:
        if out in op.uses:
            op = dataclasses.replace(op, expr=re.sub(rf"\b{out}\b", operand, op.expr),
                                     uses=tuple(operand if u == out else u for u in op.uses))
        ops.append(op)
    outputs = [operand if o == out else o for o in p.outputs]
    outputs = [o for o in dict.fromkeys(outputs) if o.startswith("v")] or None
    return _prune(p, ops, outputs)


def _drop(p, i):
    """Op i removed with every op that reads it, directly or not."""
    dead, ops = {p.ops[i].out}, []
    for op in p.ops:
        if op.out in dead or dead & set(op.uses):
            dead.add(op.out)
        else:
            ops.append(op)
    outputs = [o for o in p.outputs if o not in dead]
    return _prune(p, ops, outputs or None)


def _prune(p, ops, outputs):
    """Keeps the ops the outputs need (outputs None: every op's result that
    nothing reads) and the inputs those ops read."""
    if outputs is None:
        used = {u for op in ops for u in op.uses}
        outputs = [op.out for op in ops if op.out not in used][-3:]
    needed = set(outputs)
    kept = []
    for op in reversed(ops):
        if op.out in needed:
            kept.append(op)
            needed |= set(op.uses)
    kept.reverse()
    inputs = [inp for inp in p.inputs if inp.name in needed]
    if not kept:
        return dataclasses.replace(p, ops=[], outputs=[], inputs=[])  # fails as invalid
    return dataclasses.replace(p, ops=kept, outputs=outputs, inputs=inputs)
