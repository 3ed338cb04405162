"""Prints Inductor's sympy index expressions as MLIR index arithmetic.

An expression is emitted bottom-up into a buffer of the kernel; each node
becomes one SSA value of type `index` (uniform across the vector lanes) or
`vector<VLxindex>` (one index per lane), and the kernel's CSE shares equal
subexpressions. Integer-valued functions follow Inductor's definitions:
FloorDiv rounds toward negative infinity, ModularIndexing(x, d, m) is
(x // d) % m, PythonMod takes the sign of the divisor.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import sympy

from torch.utils._sympy.functions import (
    CleanDiv,
    FloorDiv,
    Identity,
    Max,
    Min,
    ModularIndexing,
    PythonMod,
)

from .mlir_types import index_type

if TYPE_CHECKING:
    from .kernel import MaiaKernel


class IndexEmitter:
    def __init__(self, kernel: MaiaKernel, buffer,
                 lookup: Callable[[sympy.Symbol], object]):
        self.kernel = kernel
        self.buffer = buffer
        self.lookup = lookup  # Symbol -> CSE variable (scalar or vector index)

    def emit(self, expr: sympy.Expr):
        expr = sympy.sympify(expr)
        if isinstance(expr, sympy.Integer):
            return self.kernel.index_constant(int(expr))
        if isinstance(expr, sympy.Symbol):
            return self.lookup(expr)
        if isinstance(expr, sympy.Add):
            return self._fold(expr.args, "arith.addi")
        if isinstance(expr, sympy.Mul):
            return self._fold(expr.args, "arith.muli")
        if isinstance(expr, sympy.Pow) and isinstance(expr.exp, sympy.Integer) and expr.exp > 0:
            return self._fold([expr.base] * int(expr.exp), "arith.muli")
        if isinstance(expr, FloorDiv):
            return self._binary("arith.floordivsi", *expr.args)
        if isinstance(expr, CleanDiv):
            return self._binary("arith.divsi", *expr.args)
        if isinstance(expr, ModularIndexing):
            base, divisor, modulus = expr.args
            quotient = (self.emit(base) if divisor == 1
                        else self._binary("arith.floordivsi", base, divisor))
            return self._python_mod(quotient, self.emit(modulus),
                                    nonnegative=bool(base.is_nonnegative))
        if isinstance(expr, (PythonMod, sympy.Mod)):
            lhs, rhs = expr.args
            return self._python_mod(self.emit(lhs), self.emit(rhs),
                                    nonnegative=bool(lhs.is_nonnegative and rhs.is_positive))
        if isinstance(expr, Min):
            return self._fold(expr.args, "arith.minsi")
        if isinstance(expr, Max):
            return self._fold(expr.args, "arith.maxsi")
        if isinstance(expr, Identity):
            return self.emit(expr.args[0])
        raise NotImplementedError(
            f"maia: cannot print the index expression {expr} ({type(expr).__name__})")

    def _fold(self, args, op):
        values = [self.emit(arg) for arg in args]
        result = values[0]
        for value in values[1:]:
            result = self._apply(op, result, value)
        return result

    def _binary(self, op, lhs, rhs):
        return self._apply(op, self.emit(lhs), self.emit(rhs))

    def _apply(self, op, a, b):
        a, b = self.kernel.unify_shape(a, b, self.buffer)
        vec = a.vec
        return self.kernel.emit(self.buffer, f"{op} {a}, {b} : {index_type(vec)}", "index", vec)

    def _python_mod(self, a, b, nonnegative: bool):
        remainder = self._apply("arith.remsi", a, b)
        if nonnegative:
            return remainder
        return self.kernel.python_remainder(self.buffer, remainder, b)
