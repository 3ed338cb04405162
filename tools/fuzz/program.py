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
    grad: bool = False          # compare gradients too (float inputs require grad)
    eager: bool = False         # run eagerly on maia instead of compiled

    @property
    def compile_dynamic(self):
        """torch.compile's dynamic=: "auto" is its default (None), called
        twice so that the second call recompiles with dynamic sizes."""
        return None if self.dynamic == "auto" else self.dynamic

    def result_names(self) -> list:
        """What run_results returns, in order: the outputs, then (grad) the
        gradient of each float input."""
        grads = [f"grad {i.name}" for i in self.inputs
                 if self.grad and i.high is None and i.dtype.is_floating_point]
        return list(self.outputs) + grads

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


def run_fn(fn, args, grad=GRAD):
    """fn's outputs and, with grad, the gradient of a weighted sum of its
    float outputs with respect to each float input (zeros where the input
    does not reach them)."""
    if not grad:
        return list(fn(*args))
    leaves = [a.detach().requires_grad_(a.dtype.is_floating_point) for a in args]
    outputs = list(fn(*leaves))
    wanted = [a for a in leaves if a.requires_grad]
    reached = [o for o in outputs if o.requires_grad]
    grads = [None] * len(wanted)
    if reached:
        loss = sum((o.double() * torch.linspace(-1, 1, o.numel(), dtype=torch.float64,
                                                device=o.device).view(o.shape)).sum()
                   for o in reached)
        grads = torch.autograd.grad(loss, wanted, allow_unused=True)
    return [o.detach() for o in outputs] + [
        torch.zeros_like(a) if g is None else g for a, g in zip(wanted, grads)]


def check():
    """Compiles fn on maia (EAGER: runs it eagerly there) and compares each
    call with eager CPU."""
    compiled = fn if EAGER else torch.compile(fn, dynamic=DYNAMIC)
    for sizes in SIZE_SETS:
        args = make_inputs(**sizes)
        expected = run_fn(fn, args)
        actual = run_fn(compiled, [a.to("maia") for a in args])
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
             f"DYNAMIC = {p.compile_dynamic!r}  # {p.dynamic!r}",
             f"GRAD = {p.grad!r}", f"EAGER = {p.eager!r}", "", "",
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
