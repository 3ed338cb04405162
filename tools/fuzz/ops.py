"""The op categories of the generator: each takes a Builder, picks operands,
and adds at most one op (Builder.add_op drops what eager PyTorch rejects).

Float ops are written to stay in range (exp of a clamped value, log of
|x| + 1, division by |y| + 1), so that eager and compiled do not diverge by
overflowing in different places; integer division never divides by zero.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import sympy
import torch

if TYPE_CHECKING:
    from program_gen import Builder

ONE = sympy.Integer(1)
FLOATS = (torch.float32, torch.float16, torch.bfloat16)
LOW_PRECISION_FLOATS = (torch.float16, torch.bfloat16)

# (template, exact result from exact operands, needs exact operands)
FLOAT_UNARY = [
    ("torch.sin({x})", False, False), ("torch.cos({x})", False, False),
    ("torch.tanh({x})", False, False), ("torch.sigmoid({x})", False, False),
    ("torch.exp({x}.clamp(-8, 8))", False, False), ("torch.log({x}.abs() + 1)", False, False),
    ("torch.sqrt({x}.abs())", False, False), ("torch.rsqrt({x}.abs() + 1)", False, False),
    ("torch.erf({x})", False, False), ("torch.atan({x})", False, False),
    ("torch.log1p({x}.abs())", False, False), ("torch.expm1({x}.clamp(-8, 2))", False, False),
    ("torch.reciprocal({x}.abs() + 1)", False, False), ("{x} * {x}", False, False),
    ("torch.nn.functional.gelu({x})", False, False),
    ("torch.nn.functional.silu({x})", False, False),
    ("torch.relu({x})", True, False), ("{x}.abs()", True, False), ("-{x}", True, False),
    ("torch.clamp({x}, -1, 1)", True, False), ("{x} * 2", True, False),
    ("torch.floor({x})", True, True), ("torch.ceil({x})", True, True),
    ("torch.round({x})", True, True), ("torch.trunc({x})", True, True),
    ("{x}.sign()", True, True), ("torch.signbit({x})", True, True),
]
INT_UNARY = ["-{x}", "{x}.abs()", "{x} * 3", "{x} + 5", "torch.bitwise_not({x})", "{x} // 3",
             "{x} % 5", "{x}.sign()", "torch.clamp({x}, -3, 3)", "{x} * {x}"]
BOOL_UNARY = ["~{x}", "torch.logical_not({x})"]

ARITH = ["{a} + {b}", "{a} - {b}", "{a} * {b}", "torch.maximum({a}, {b})",
         "torch.minimum({a}, {b})", "{a} / ({b}.abs() + 1)"]
INT_BINARY = ["{a} // ({b}.abs() + 1)", "torch.remainder({a}, {b}.abs() + 1)",
              "torch.fmod({a}, {b}.abs() + 1)", "{a} & {b}", "{a} | {b}", "{a} ^ {b}"]
COMPARE = [">", "<", ">=", "<=", "==", "!="]


def _is_float(v):
    return v.dtype in FLOATS


def broadcast(a, b):
    """The broadcast of two symbolic shapes, or None if it may not exist."""
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else ONE
        y = b[-i] if i <= len(b) else ONE
        if x == ONE:
            out.append(y)
        elif y == ONE or x == y:
            out.append(x)
        else:
            return None
    return tuple(reversed(out))


def _empty(b: Builder, size) -> bool:
    """Whether a dimension to index into is empty: every index is out of
    range (eager index_add returns early on an empty input, Inductor's
    index_put on the CPU and on maia does not)."""
    return b.concrete([size])[0] == 0


def operand_for(b: Builder, v, dtype=None):
    """A second operand for v: an earlier value of a compatible shape, or a
    new input of v's shape or a shape that broadcasts to it."""
    r = b.rng.random()
    if r < 0.35:
        other = b.pick(lambda w: w is not v and broadcast(v.shape, w.shape) is not None
                       and (dtype is None or w.dtype == dtype))
        if other is not None:
            return other
    shape = list(v.shape)
    if r < 0.7 and shape:
        shape = shape[b.rng.randrange(len(shape) + 1):] if b.rng.random() < 0.4 else shape
        shape = [ONE if b.rng.random() < 0.4 else d for d in shape]
    return b.new_input(tuple(shape), dtype)


def unary(b: Builder):
    v = b.pick()
    if _is_float(v):
        template, exact, needs_exact = b.rng.choice(FLOAT_UNARY)
        if needs_exact and not (v.exact or v.dtype == torch.float32):
            return
        exact = exact and v.exact
    elif v.dtype == torch.bool:
        template, exact = b.rng.choice(BOOL_UNARY), True
    else:
        template, exact = b.rng.choice(INT_UNARY), True
    b.add_op(template.format(x=v.name), [v], v.shape, exact)


def binary(b: Builder):
    a = b.pick()
    if b.rng.random() < 0.2:  # a Python scalar
        scalars = ["2", "-3", "0.5", "1.5"] if _is_float(a) else ["2", "-3"]
        scalar = b.rng.choice(scalars)
        template = b.rng.choice(["{a} + S", "{a} * S", "S - {a}", "torch.maximum({a}, "
                                 "torch.tensor(S, dtype={a}.dtype))"]).replace("S", scalar)
        b.add_op(template.format(a=a.name), [a], a.shape, a.exact and not _is_float(a))
        return
    other = operand_for(b, a)
    shape = broadcast(a.shape, other.shape)
    both_int = not _is_float(a) and not _is_float(other)
    templates = ARITH + (INT_BINARY if both_int else [])
    template = b.rng.choice(templates)
    exact = a.exact and other.exact and (both_int or "maximum" in template or "minimum" in template)
    b.add_op(template.format(a=a.name, b=other.name), [a, other], shape, exact)


def compare_where(b: Builder):
    """A comparison of exact values (or float32 ones, where ties are rare),
    then often a where or masked_fill choosing by it."""
    a = b.pick(lambda v: v.exact or v.dtype == torch.float32)
    if a is None:
        return
    other = operand_for(b, a)
    if not (other.exact or other.dtype == torch.float32):
        return
    shape = broadcast(a.shape, other.shape)
    cond = b.add_op(f"{a.name} {b.rng.choice(COMPARE)} {other.name}", [a, other], shape, True)
    if cond is None or b.rng.random() < 0.3:
        return
    x = b.pick(lambda v: v is not cond and broadcast(v.shape, cond.shape) is not None
               and v.dtype != torch.bool)
    if x is None:
        return
    if b.rng.random() < 0.4:
        fill = b.rng.choice(["0.0", "-1.5", "2"]) if _is_float(x) else b.rng.choice(["0", "-2"])
        # masked_fill keeps x's shape: the mask must broadcast to it
        if broadcast(x.shape, cond.shape) == tuple(x.shape):
            b.add_op(f"{x.name}.masked_fill({cond.name}, {fill})", [x, cond], x.shape, x.exact)
        return
    y = operand_for(b, x)
    shape = broadcast(broadcast(cond.shape, x.shape) or (), y.shape)
    if shape is None or broadcast(cond.shape, x.shape) is None:
        return
    b.add_op(f"torch.where({cond.name}, {x.name}, {y.name})", [cond, x, y], shape,
             x.exact and y.exact)


def view(b: Builder):
    v = b.pick()
    shape, n = list(v.shape), len(v.shape)
    choices = ["unsqueeze", "flatten"]
    if n >= 1:
        choices += ["slice_start", "slice_step", "slice_end", "flip", "roll", "pad", "expand"]
    if n >= 2:
        choices += ["transpose", "transpose", "permute", "flatten_tail"]
    if ONE in shape:
        choices.append("squeeze")
    kind = b.rng.choice(choices)
    x = v.name
    if kind == "unsqueeze":
        d = b.rng.randint(0, n)
        expr, shape = f"{x}.unsqueeze({d})", shape[:d] + [ONE] + shape[d:]
    elif kind == "flatten":
        expr, shape = f"{x}.reshape(-1)", [sympy.Mul(*shape) if shape else ONE]
    elif kind == "flatten_tail":
        expr, shape = f"{x}.flatten(1)", [shape[0], sympy.Mul(*shape[1:])]
    elif kind == "flip":
        expr = f"torch.flip({x}, ({b.rng.randrange(n)},))"
    elif kind == "roll":
        d = b.rng.randrange(n)
        expr = f"torch.roll({x}, {b.rng.choice([1, -2, 5])}, {d})"
    elif kind == "pad":  # last dim: 2 before, 1 after; a masked load for the border
        expr = f"torch.nn.functional.pad({x}, (2, 1), value={b.rng.choice(['0', '-1'])})"
        shape[-1] = shape[-1] + 3
    elif kind == "expand":  # a stride-0 leading dim
        expr, shape = f"{x}.unsqueeze(0).expand(3, *{x}.shape)", [sympy.Integer(3)] + shape
    elif kind == "squeeze":
        d = shape.index(ONE)
        expr, shape = f"{x}.squeeze({d})", shape[:d] + shape[d + 1:]
    elif kind == "transpose":
        i, j = b.rng.sample(range(n), 2)
        expr = f"{x}.transpose({i}, {j})"
        shape[i], shape[j] = shape[j], shape[i]
    elif kind == "permute":
        order = list(range(n))
        b.rng.shuffle(order)
        expr, shape = f"{x}.permute{tuple(order)}", [shape[i] for i in order]
    else:
        d = b.rng.randrange(n)
        if kind == "slice_start":   # a view with a storage offset
            part, shape[d] = "1:", sympy.Max(shape[d] - 1, 0)
        elif kind == "slice_end":
            part, shape[d] = ":-1", sympy.Max(shape[d] - 1, 0)
        else:
            part, shape[d] = "::2", sympy.floor((shape[d] + 1) / 2)
        expr = f"{x}[{', '.join([':'] * d + [part])}]"
    b.add_op(expr, [v], tuple(shape), v.exact)


def cat_stack(b: Builder):
    v = b.pick(lambda w: len(w.shape) >= 1)
    if v is None:
        return
    d = b.rng.randrange(len(v.shape))
    if b.rng.random() < 0.4:  # one part computed from the other: torch.cat([x, x * 2])
        part = f"~{v.name}" if v.dtype == torch.bool else f"{v.name} * 2"
        args, part_shape = [v], v.shape
    else:  # another input, of the same shape or another length along d
        shape = list(v.shape)
        if b.rng.random() < 0.5:
            shape[d] = b.size_symbol(2000)
        w = b.new_input(tuple(shape))
        part, args, part_shape = w.name, [v, w], w.shape
    if part_shape == v.shape and b.rng.random() < 0.3:
        s = b.rng.randint(0, len(v.shape))
        shape = list(v.shape[:s]) + [sympy.Integer(2)] + list(v.shape[s:])
        expr = f"torch.stack([{v.name}, {part}], dim={s})"
    else:
        shape = list(v.shape)
        shape[d] = v.shape[d] + part_shape[d]
        expr = f"torch.cat([{v.name}, {part}], dim={d})"
    b.add_op(expr, args, tuple(shape), all(a.exact for a in args))


REDUCTIONS = ["sum", "mean", "amax", "amin", "prod", "var", "std", "argmax", "argmin",
              "norm", "any"]


def reduce(b: Builder):
    v = b.pick()
    op = b.rng.choice(REDUCTIONS)
    n = len(v.shape)
    if op in ("argmax", "argmin") and not v.exact:
        return  # ties after rounding are noise
    if op in ("amax", "amin") and not b.ties_safe(v):
        return
    keep = b.rng.random() < 0.4
    x = v.name
    if op == "prod" and _is_float(v):
        x = f"({x}.tanh() * 0.5 + 1)"  # factors near 1: no overflow in 1000-long products
    if n == 0 or b.rng.random() < 0.2:
        dims = None
    elif op in ("prod", "argmax", "argmin", "any") or b.rng.random() < 0.6:
        dims = (b.rng.randrange(n),)
    else:
        dims = tuple(sorted(b.rng.sample(range(n), b.rng.randint(1, n))))
    if dims is None:
        expr = f"{x}.{op}()" if op not in ("norm",) else f"{x}.norm()"
        shape = ()
    else:
        dim = dims[0] if len(dims) == 1 else dims
        kwargs = f"dim={dim}" + (", keepdim=True" if keep else "")
        expr = f"{x}.{op}({kwargs})"
        shape = [ONE if (i in dims and keep) else d for i, d in enumerate(v.shape)
                 if keep or i not in dims]
    exact = (not _is_float(v) and op not in ("mean", "var", "std", "norm")) or \
        op in ("argmax", "argmin", "any") or (op in ("amax", "amin") and v.exact)
    b.add_op(expr, [v], tuple(shape), exact)


def normalize(b: Builder):
    """Reductions fused with their epilogue: softmax and friends, and scans
    (cumsum, which Inductor hands to the eager kernel)."""
    v = b.pick(lambda w: len(w.shape) >= 1)
    if v is None:
        return
    d = b.rng.randrange(len(v.shape))
    op = b.rng.choice(["softmax", "log_softmax", "logsumexp", "cumsum", "cummax"])
    if op == "cummax" and not b.ties_safe(v):
        return
    if op in ("softmax", "log_softmax", "logsumexp") and not _is_float(v):
        return  # eager takes bool, Inductor's decomposition does not: not a maia bug
    if op == "logsumexp":
        shape = v.shape[:d] + v.shape[d + 1:]
        expr = f"torch.logsumexp({v.name}, {d})"
    elif op == "cummax":
        shape, expr = v.shape, f"torch.cummax({v.name}, {d}).values"
    else:
        shape, expr = v.shape, f"{v.name}.{op}({d})"
    exact = op == "cummax" and v.exact or (op == "cumsum" and not _is_float(v))
    b.add_op(expr, [v], shape, exact)


def index_add(b: Builder):
    """Accumulating stores (atomic adds in the kernel)."""
    v = b.pick(lambda w: len(w.shape) >= 1 and w.dtype != torch.bool)
    if v is None:
        return
    d = b.rng.randrange(len(v.shape))
    if _empty(b, v.shape[d]):
        return
    # float16/bfloat16 sums of many duplicates round at every add, in an
    # order that differs between eager and atomic adds: a few only.
    count = b.size_symbol(64) if v.dtype not in LOW_PRECISION_FLOATS else \
        sympy.Integer(b.rng.choice([1, 2, 3]))
    idx = b.new_input((count,), high=v.shape[d])
    src_shape = list(v.shape)
    src_shape[d] = count
    src = b.new_input(tuple(src_shape), dtype=v.dtype)
    if b.rng.random() < 0.5:
        expr = f"torch.index_add({v.name}, {d}, {idx.name}, {src.name})"
    else:
        expr = f"{v.name}.index_put(({idx.name},), {src.name}, accumulate=True)" if d == 0 else \
            f"torch.index_add({v.name}, {d}, {idx.name}, {src.name}, alpha=2)"
    b.add_op(expr, [v, idx, src], v.shape, not _is_float(v) and v.exact)


def index(b: Builder):
    v = b.pick(lambda w: len(w.shape) >= 1)
    if v is None:
        return
    n = len(v.shape)
    kind = b.rng.choice(["gather", "index_select", "advanced", "advanced_inner"])
    d = b.rng.randrange(n)
    count = b.size_symbol(64) if b.rng.random() < 0.5 else sympy.Integer(b.rng.choice([1, 3, 5]))
    indexed = {"advanced": 0, "advanced_inner": 1}.get(kind, d) if n > 1 else 0
    if _empty(b, v.shape[indexed]):
        return
    if kind == "gather":
        idx_shape = list(v.shape)
        idx_shape[d] = count
        idx = b.new_input(tuple(idx_shape), high=v.shape[d])
        expr, shape = f"torch.gather({v.name}, {d}, {idx.name})", idx_shape
    elif kind == "index_select":
        idx = b.new_input((count,), high=v.shape[d])
        expr = f"torch.index_select({v.name}, {d}, {idx.name})"
        shape = list(v.shape[:d]) + [count] + list(v.shape[d + 1:])
    elif kind == "advanced" or n == 1:
        idx_shape = (count,) if b.rng.random() < 0.6 else (ONE * 2, count)
        idx = b.new_input(idx_shape, high=v.shape[0],
                          index_dtype=b.rng.choice([torch.int64, torch.int32]))
        expr, shape = f"{v.name}[{idx.name}]", list(idx_shape) + list(v.shape[1:])
    else:
        idx = b.new_input((count,), high=v.shape[1])
        expr = f"{v.name}[:, {idx.name}]"
        shape = [v.shape[0], count] + list(v.shape[2:])
    b.add_op(expr, [v, idx], tuple(shape), v.exact)


def cast(b: Builder):
    v = b.pick()
    dtype = b.rng.choice([torch.float32, torch.float16, torch.bfloat16, torch.int32,
                          torch.int64, torch.bool])
    if _is_float(v) and not dtype.is_floating_point and not v.exact:
        return  # truncating an inexact float: ties at integers are noise
    b.add_op(f"{v.name}.to({dtype})", [v], v.shape, v.exact)


def size_scalar(b: Builder):
    """Python float arithmetic on a size: under dynamic shapes it becomes a
    float sympy expression in the kernel (ToFloat, FloatTrueDiv, ...)."""
    v = b.pick(lambda w: len(w.shape) >= 1 and _is_float(w))
    if v is None:
        return
    d = b.rng.randrange(len(v.shape))
    scalar = b.rng.choice([f"{v.name}.shape[{d}] * 0.5", f"1.0 / max({v.name}.shape[{d}], 1)",
                           f"float({v.name}.shape[{d}])"])
    template = b.rng.choice(["{x} * ({s})", "{x}.masked_fill({x} > 0, {s})",
                             "torch.full_like({x}, {s}) - {x}"])
    b.add_op(template.format(x=v.name, s=scalar), [v], v.shape, False)


CATEGORIES = {  # name: (weight, generator)
    "unary": (3, unary), "binary": (3, binary), "compare_where": (2, compare_where),
    "view": (2, view), "cat_stack": (1.5, cat_stack), "reduce": (2.5, reduce),
    "index": (1.5, index), "cast": (1, cast), "size_scalar": (0.7, size_scalar),
    "normalize": (1, normalize), "index_add": (0.7, index_add),
}
