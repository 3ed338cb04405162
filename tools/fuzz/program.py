"""A generated program as data, and its standalone Python source.

Sizes are sympy symbols (s0, s1, ...) with values, so the minimizer can
shrink a size everywhere at once and every shape that depends on it (inputs
built to broadcast against an intermediate, index bounds) stays consistent.
The source is the single truth: the runner executes the printed text, so a
failure report is exactly the code that failed.
"""

from __future__ import annotations

import dataclasses
import textwrap
import types

import sympy
import torch
from sympy.printing.str import StrPrinter


@dataclasses.dataclass(frozen=True)
class Input:
    name: str
    shape: tuple          # sympy expressions over the size symbols
    dtype: torch.dtype
    layout: str           # contiguous | offset | transposed | strided | expanded
    high: object = None   # index tensors: values in [0, high) (sympy expression)


@dataclasses.dataclass(frozen=True)
class Op:
    out: str
    expr: str             # Python expression over earlier names
    uses: tuple           # the names expr reads


@dataclasses.dataclass
class Program:
    seed: int
    sizes: dict           # symbol name -> int
    inputs: list
    ops: list
    outputs: list
    dynamic: object = None      # None (static), True (dynamic=True), "auto"
    alt_sizes: dict | None = None  # "auto": second call with these sizes

    @property
    def compile_dynamic(self):
        """torch.compile's dynamic=: "auto" is its default (None), called
        twice so that the second call recompiles with dynamic sizes."""
        return None if self.dynamic == "auto" else self.dynamic

    def size_sets(self):
        return [self.sizes] if self.alt_sizes is None else [self.sizes, self.alt_sizes]

    def source(self) -> str:
        return _render(self)

    def load(self) -> types.ModuleType:
        module = types.ModuleType(f"fuzz_program_{self.seed}")
        exec(compile(self.source(), f"<fuzz seed {self.seed}>", "exec"), module.__dict__)
        return module


def size_symbol(name: str) -> sympy.Symbol:
    return sympy.Symbol(name, integer=True, nonnegative=True)


def evaluate(shape, sizes: dict) -> tuple:
    """A symbolic shape at the given sizes."""
    values = {size_symbol(k): v for k, v in sizes.items()}
    return tuple(int(sympy.sympify(d).subs(values)) for d in shape)


class _Printer(StrPrinter):
    """Sizes as Python integer expressions."""

    def _print_Max(self, expr):
        return f"max({', '.join(self._print(a) for a in expr.args)})"

    def _print_Min(self, expr):
        return f"min({', '.join(self._print(a) for a in expr.args)})"

    def _print_floor(self, expr):
        num, den = expr.args[0].as_numer_denom()
        return f"(({self._print(num)}) // {self._print(den)})"


def size_source(expr) -> str:
    return _Printer().doprint(sympy.sympify(expr))


def shape_source(shape) -> str:
    dims = [size_source(d) for d in shape]
    return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"


def _input_lines(inp: Input) -> list:
    """Statements that build one input from the generator g."""
    dtype = str(inp.dtype)
    shape = list(inp.shape)
    if inp.high is not None:
        return [f"{inp.name} = torch.randint(0, max({size_source(inp.high)}, 1), "
                f"{shape_source(shape)}, generator=g)"]
    # The storage shape, and the view of it the function receives.
    if inp.layout == "offset":       # storage offset: base[1:]
        base, view = [shape[0] + 1] + shape[1:], "[1:]"
    elif inp.layout == "transposed":  # last two dims swapped in memory
        base, view = shape[:-2] + [shape[-1], shape[-2]], ".transpose(-1, -2)"
    elif inp.layout == "strided":    # every other element of the last dim
        base, view = shape[:-1] + [2 * shape[-1]], "[..., ::2]"
    elif inp.layout == "expanded":   # stride 0 along dim 0
        base, view = [1] + shape[1:], f".expand({shape_source(shape)})"
    else:
        base, view = shape, ""
    if inp.dtype.is_floating_point:
        make = f"torch.randn({shape_source(base)}, generator=g)"
        if inp.dtype != torch.float32:
            make += f".to({dtype})"
    elif inp.dtype == torch.bool:
        make = f"torch.randint(0, 2, {shape_source(base)}, generator=g).bool()"
    else:
        make = f"torch.randint(-8, 8, {shape_source(base)}, generator=g, dtype={dtype})"
    return [f"{inp.name} = {make}{view}"]


_MAIN = '''
TOLERANCES = {torch.float64: (1e-10, 1e-10), torch.float32: (1e-4, 1e-4),
              torch.bfloat16: (3e-2, 3e-2), torch.float16: (2e-3, 2e-3)}
# (as test/inductor/compile_support.py)


def check():
    """Compiles fn on maia and compares each call with eager CPU."""
    compiled = torch.compile(fn, dynamic=DYNAMIC)
    for sizes in SIZE_SETS:
        args = make_inputs(**sizes)
        expected = fn(*args)
        actual = compiled(*[a.to("maia") for a in args])
        for got, want in zip(actual, expected):
            atol, rtol = TOLERANCES.get(want.dtype, (0, 0))
            torch.testing.assert_close(got.cpu(), want, atol=atol, rtol=rtol, equal_nan=True)


if __name__ == "__main__":
    check()
    print("ok")
'''


def _render(p: Program) -> str:
    names = sorted(p.sizes)
    lines = [f'"""maia fuzz program, seed {p.seed} (tools/fuzz/fuzz_compile.py)."""',
             "import torch", "",
             f"SIZE_SETS = {[dict(sorted(s.items())) for s in p.size_sets()]!r}",
             f"DYNAMIC = {p.compile_dynamic!r}  # {p.dynamic!r}", "", "",
             f"def make_inputs({', '.join(names)}):",
             f"    g = torch.Generator().manual_seed({p.seed})"]
    for inp in p.inputs:
        lines += ["    " + line for line in _input_lines(inp)]
    lines += [f"    return [{', '.join(i.name for i in p.inputs)}]", "", "",
              f"def fn({', '.join(i.name for i in p.inputs)}):"]
    lines += [f"    {op.out} = {op.expr}" for op in p.ops]
    outs = ", ".join(p.outputs)
    lines += [f"    return ({outs},)" if len(p.outputs) == 1 else f"    return ({outs})", ""]
    return "\n".join(lines) + textwrap.dedent(_MAIN)
