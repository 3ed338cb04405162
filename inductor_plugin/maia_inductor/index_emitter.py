"""Prints Inductor's sympy index expressions as MLIR index arithmetic.

An expression is emitted bottom-up into a buffer of the kernel; each node
becomes one SSA value of type `index` (uniform across the vector lanes) or
`vector<VLxindex>` (one index per lane), and the kernel's CSE shares equal
subexpressions. Integer-valued functions follow Inductor's definitions:
FloorDiv rounds toward negative infinity, ModularIndexing(x, d, m) is
(x // d) % m, PythonMod takes the sign of the divisor, Mod (torch's, not
sympy's) is the remainder of nonnegative integers.

Float-valued expressions reach the printer through `ops.index_expr` when a
graph uses Python arithmetic on dynamic sizes (`1.0 / x.shape[1]` is
FloatTrueDiv(1.0, ToFloat(ks0)), `x.shape[1] * 0.5` has a Float factor).
They are f64 scalars, like the `double` of Inductor's C++ printer; the
caller converts them to the requested dtype. An operation with one float
operand is a float operation on all of them. TruncToInt and its rounding
siblings turn them back into indices (interpolate's scaled sizes).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import sympy

import torch
from torch.utils._sympy.functions import (
    CeilToInt,
    CleanDiv,
    FloatPow,
    FloatTrueDiv,
    FloorDiv,
    FloorToInt,
    Identity,
    IntTrueDiv,
    Max,
    Min,
    Mod,
    ModularIndexing,
    PowByNatural,
    PythonMod,
    RoundToInt,
    ToFloat,
    TruncToInt,
    Where,
)

FLOAT = torch.float64  # the type of float-valued index expressions

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
        if isinstance(expr, (sympy.Float, sympy.Rational)):  # Rational: not an Integer
            return self.kernel.constant(float(expr), FLOAT)
        if isinstance(expr, sympy.Symbol):
            return self.lookup(expr)
        if isinstance(expr, sympy.Add):
            return self._fold(expr.args, "arith.addi", "arith.addf")
        if isinstance(expr, sympy.Mul):
            return self._fold(expr.args, "arith.muli", "arith.mulf")
        if isinstance(expr, (sympy.Pow, PowByNatural)) and isinstance(expr.args[1], sympy.Integer) \
                and expr.args[1] != 0:
            base, exp = expr.args
            power = self._fold([base] * abs(int(exp)), "arith.muli", "arith.mulf")
            if exp > 0:
                return power
            return self._apply("arith.divf", self.kernel.constant(1.0, FLOAT),
                               self._float(power))  # x**-n only arises on floats
        if isinstance(expr, (FloatPow, sympy.Pow)):  # a float power: std::pow for C++
            lhs, rhs = (self._float(self.emit(arg)) for arg in expr.args)
            return self._apply("math.powf", lhs, rhs)
        function = getattr(expr.func, "_torch_handler_name", None)
        if function in self._UNARY_MATH:  # math.sqrt(x.shape[0]) and the like
            value = self._float(self.emit(expr.args[0]))
            ty = self.kernel.mlir_type(FLOAT, value.vec)
            return self.kernel.emit(self.buffer, f"{self._UNARY_MATH[function]} {value} : {ty}",
                                    FLOAT, value.vec)
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
        if isinstance(expr, Mod):  # torch's C-style Mod: defined for p >= 0, q >= 1 (roll)
            return self._binary("arith.remsi", *expr.args)
        if isinstance(expr, Min):
            return self._fold(expr.args, "arith.minsi", "arith.minimumf")
        if isinstance(expr, Max):
            return self._fold(expr.args, "arith.maxsi", "arith.maximumf")
        if isinstance(expr, sympy.Abs):  # reflection pads index through it
            value = self.emit(expr.args[0])
            if value.mdtype == FLOAT:
                negated = self._apply("arith.subf", self.kernel.constant(0.0, FLOAT), value)
                return self._apply("arith.maximumf", value, negated)
            negated = self._apply("arith.subi", self.kernel.index_constant(0), value)
            return self._apply("arith.maxsi", value, negated)
        if isinstance(expr, Identity):
            return self.emit(expr.args[0])
        if isinstance(expr, Where):  # wrapping of negative indices (pad of a roll)
            cond, then, other = expr.args
            a, b = self._same_kind(self.emit(then), self.emit(other))
            return self.kernel.select(self.buffer, self._condition(cond), a, b)
        if isinstance(expr, ToFloat):
            return self._float(self.emit(expr.args[0]))
        if isinstance(expr, (TruncToInt, FloorToInt, CeilToInt, RoundToInt)):
            return self._to_int(type(expr), self.emit(expr.args[0]))
        if isinstance(expr, (FloatTrueDiv, IntTrueDiv)):  # Python's / on floats or ints
            lhs, rhs = (self._float(self.emit(arg)) for arg in expr.args)
            return self._apply("arith.divf", lhs, rhs)
        raise NotImplementedError(
            f"maia: cannot print the index expression {expr} ({type(expr).__name__})")

    # Inductor's OpaqueUnaryFn_<name> (Python's math.<name> of a size) -> the
    # MLIR math operation, on f64 like the C++ printer's std:: functions.
    _UNARY_MATH = {name: f"math.{name}" for name in (
        "sqrt", "exp", "log", "log2", "sin", "cos", "tan", "tanh", "sinh", "cosh", "asin",
        "acos", "atan", "asinh")}

    # Python's int(), math.floor, math.ceil and round() of a float; the
    # conversion to an integer truncates, so only these three round first.
    _ROUNDING = {FloorToInt: "math.floor", CeilToInt: "math.ceil", RoundToInt: "math.roundeven"}

    def _to_int(self, function, value):
        """An f64 value rounded as `function` does, as an index (interpolate's
        output sizes scaled by a float factor under dynamic shapes)."""
        if value.mdtype != FLOAT:
            return value  # already an integer
        rounding = self._ROUNDING.get(function)
        if rounding is not None:
            ty = self.kernel.mlir_type(FLOAT, value.vec)
            value = self.kernel.emit(self.buffer, f"{rounding} {value} : {ty}", FLOAT, value.vec)
        return self.kernel.index_value(value, self.buffer)

    def _float(self, value):
        """value as an f64 scalar (or vector): index -> i64 -> f64."""
        if value.mdtype == FLOAT:
            return value
        return self.kernel.convert(value, FLOAT, self.buffer)

    def _condition(self, cond):
        """A sympy relation as an i1 value."""
        preds = {sympy.StrictLessThan: ("slt", "olt"), sympy.LessThan: ("sle", "ole"),
                 sympy.StrictGreaterThan: ("sgt", "ogt"), sympy.GreaterThan: ("sge", "oge"),
                 sympy.Equality: ("eq", "oeq"), sympy.Unequality: ("ne", "une")}
        if type(cond) not in preds:
            raise NotImplementedError(f"maia: cannot print the index condition {cond}")
        a, b = self._same_kind(self.emit(cond.lhs), self.emit(cond.rhs))
        int_pred, float_pred = preds[type(cond)]
        return self.kernel.compare(self.buffer, float_pred if a.mdtype == FLOAT else int_pred,
                                   a, b)

    def _same_kind(self, a, b):
        """Both index, or both f64 when either is a float."""
        if FLOAT in (a.mdtype, b.mdtype):
            return self._float(a), self._float(b)
        return a, b

    def _fold(self, args, int_op, float_op=None):
        values = [self.emit(arg) for arg in args]
        op = int_op
        if float_op is not None and any(v.mdtype == FLOAT for v in values):
            values, op = [self._float(v) for v in values], float_op
        result = values[0]
        for value in values[1:]:
            result = self._apply(op, result, value)
        return result

    def _binary(self, op, lhs, rhs):
        return self._apply(op, self.emit(lhs), self.emit(rhs))

    def _apply(self, op, a, b):
        a, b = self.kernel.unify_shape(a, b, self.buffer)
        ty = self.kernel.mlir_type(a.mdtype, a.vec)
        return self.kernel.emit(self.buffer, f"{op} {a}, {b} : {ty}", a.mdtype, a.vec)

    def _python_mod(self, a, b, nonnegative: bool):
        remainder = self._apply("arith.remsi", a, b)
        if nonnegative:
            return remainder
        return self.kernel.python_remainder(self.buffer, remainder, b)
