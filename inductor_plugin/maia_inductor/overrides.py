"""MaiaOverrides: Inductor's ops handler as MLIR (arith, math, vector).

Every op emits into the current kernel's compute buffer and returns a typed
SSA value (a CSE variable that knows its dtype and whether it is a vector).
Operands may mix per-lane vectors and uniform scalars (scalars are broadcast
where needed); uniform computations stay scalar. Ops the device cannot do
raise NotImplementedError naming the op, so Inductor reports it (or falls back).
"""

from __future__ import annotations

import torch
from torch._inductor.codegen.common import OpOverrides
from torch._inductor.utils import sympy_index_symbol
from torch._inductor.virtualized import V

from . import mlir_types as mt


def _k():
    return V.kernel


def _value(x, like=None):
    """An operand as a typed value: Python numbers become constants, of the
    other operand's dtype where that keeps their meaning."""
    if not isinstance(x, (bool, int, float)):
        return x
    if isinstance(x, bool):
        dtype = torch.bool
    elif like is not None and like.mdtype != "index" and (
            mt.is_float(like.mdtype) or not isinstance(x, float)):
        dtype = like.mdtype
    else:
        dtype = torch.float32 if isinstance(x, float) else torch.int64
    return _k().constant(x, dtype)


def _promote(a, b):
    a = _value(a, b if not isinstance(b, (int, float)) else None)
    b = _value(b, a)
    if a.mdtype != b.mdtype:
        dtype = torch.promote_types(a.mdtype, b.mdtype)
        a, b = _k().convert(a, dtype), _k().convert(b, dtype)
    return a, b


_INTEGER_DIVISIONS = ("arith.divsi", "arith.divui", "arith.floordivsi", "arith.remsi",
                      "arith.remui", "arith.ceildivsi")


def _safe_divisor(b):
    """Integer division has no vector instruction: LLVM divides lane by lane,
    and a zero in a masked-off lane (tail, padding) would fault. Those lanes
    divide by one instead."""
    k = _k()
    mask = k.current_mask(k.compute) if k.vector_context() else None
    if mask is None or not b.vec:
        return b
    return k.select(k.compute, mask, b, k.constant(1, b.mdtype))


def _binary(a, b, float_op, int_op, unsigned_op=None):
    a, b = _promote(a, b)
    dtype = a.mdtype
    if mt.is_float(dtype):
        op = float_op
    elif unsigned_op is not None and mt.is_unsigned(dtype):
        op = unsigned_op
    else:
        op = int_op
    if op is None:
        raise NotImplementedError(f"maia: {float_op or int_op} on {dtype}")
    if op in _INTEGER_DIVISIONS:
        b = _safe_divisor(b)
    return _k().logical(_k().compute, op, a, b)


def _float_unary(op, x):
    k = _k()
    x = _value(x)
    if not mt.is_float(x.mdtype):
        x = k.convert(x, torch.float32)
    return k.emit(k.compute, f"{op} {x} : {k.mlir_type(x.mdtype, x.vec)}", x.mdtype, x.vec)


def _compare(a, b, float_pred, signed_pred, unsigned_pred):
    a, b = _promote(a, b)
    dtype = a.mdtype
    pred = float_pred if mt.is_float(dtype) else (
        unsigned_pred if mt.is_unsigned(dtype) else signed_pred)
    return _k().compare(_k().compute, pred, a, b)


def _as_bool(x):
    return _k().convert(_value(x), torch.bool)


def _true_like(x):
    return _k().constant(True, torch.bool, x.vec)


def _float_op(op, rounding=False):
    """ops.<name>(x) as the math op `op` on floats; rounding ops leave
    integers as they are."""
    def unary(x):
        x = _value(x)
        if rounding and not mt.is_float(x.mdtype):
            return x
        return _float_unary(op, x)
    return staticmethod(unary)


def _comparison(float_pred, signed_pred, unsigned_pred):
    return staticmethod(lambda a, b: _compare(a, b, float_pred, signed_pred, unsigned_pred))


def _bitwise(op, unsigned_op=None):
    """Integers and bools only."""
    return staticmethod(lambda a, b: _binary(a, b, None, op, unsigned_op))


def _logical(op):
    return staticmethod(lambda a, b: _k().logical(_k().compute, op, _as_bool(a), _as_bool(b)))


class MaiaOverrides(OpOverrides):
    @staticmethod
    def paren(x):
        return x

    # ------------------------------------------------------------ values
    @staticmethod
    def constant(value, dtype):
        if dtype in (torch.float16, torch.bfloat16):
            value = float(torch.tensor(value, dtype=dtype))  # round like the storage type
        return _k().constant(value, mt.compute_dtype(dtype))

    @staticmethod
    def index_expr(expr, dtype):
        k = _k()
        index = k.emit_index(k.prepare_indexing(expr), k.compute)
        return k.convert(index, mt.compute_dtype(dtype) if dtype not in (
            torch.float16, torch.bfloat16) else dtype)

    value_expr = index_expr  # index_expr already yields the requested dtype

    @staticmethod
    def to_dtype(x, dtype, src_dtype=None, use_compute_types=True):
        return _k().convert(_value(x), dtype)

    @staticmethod
    def to_dtype_bitcast(x, dtype, src_dtype):
        k = _k()
        x = _value(x)
        if mt.bit_width(dtype) != mt.bit_width(src_dtype):
            raise NotImplementedError(f"maia: bitcast {src_dtype} to {dtype}")
        if src_dtype in (torch.float16, torch.bfloat16):
            x = k.to_storage(x, src_dtype, k.compute)
        src_ty = k.mlir_type(src_dtype, x.vec)
        dst_ty = k.mlir_type(dtype, x.vec)
        cast = k.emit(k.compute, f"arith.bitcast {x} : {src_ty} to {dst_ty}", dtype, x.vec)
        if dtype in (torch.float16, torch.bfloat16):
            return k.emit(k.compute, f"arith.extf {cast} : {dst_ty} to "
                          f"{k.mlir_type(torch.float32, x.vec)}", torch.float32, x.vec)
        return cast

    @staticmethod
    def indirect_indexing(var, size, check=True, wrap_neg=True):
        # The symbol names the CSE variable; MaiaKernel looks it up when an
        # index uses it.
        return sympy_index_symbol(var.name)

    @staticmethod
    def masked(mask, body, other):
        k = _k()
        with k.mask_loads(mask, other) as combined:
            result = body()
        result = _value(result)
        return k.select(k.compute, combined, result,
                        k.constant(mt.masked_fill(other, result.mdtype), result.mdtype))

    @staticmethod
    def rand(seed, offset):
        from . import random_ops

        return random_ops.rand(_k(), _value(seed), _value(offset))

    @staticmethod
    def randn(seed, offset):
        from . import random_ops

        return random_ops.randn(_k(), _value(seed), _value(offset))

    @staticmethod
    def randint64(seed, offset, low, high):
        from . import random_ops

        return random_ops.randint64(_k(), _value(seed), _value(offset), _value(low),
                                    _value(high))

    @staticmethod
    def where(cond, a, b):
        a, b = _promote(a, b)
        return _k().select(_k().compute, _as_bool(cond), a, b)

    # ------------------------------------------------------- arithmetic
    @staticmethod
    def add(a, b):
        return _binary(a, b, "arith.addf", "arith.addi")

    @staticmethod
    def sub(a, b):
        return _binary(a, b, "arith.subf", "arith.subi")

    @staticmethod
    def mul(a, b):
        return _binary(a, b, "arith.mulf", "arith.muli")

    @staticmethod
    def truediv(a, b):
        return _binary(a, b, "arith.divf", None)

    @staticmethod
    def div(a, b):
        return _binary(a, b, "arith.divf", "arith.divsi", "arith.divui")

    @staticmethod
    def int_truediv(a, b):
        k = _k()
        a, b = _value(a), _value(b)
        return MaiaOverrides.truediv(k.convert(a, torch.float64), k.convert(b, torch.float64))

    @staticmethod
    def floordiv(a, b):
        return _binary(a, b, None, "arith.floordivsi", "arith.divui")

    @staticmethod
    def truncdiv(a, b):
        return _binary(a, b, None, "arith.divsi", "arith.divui")

    @staticmethod
    def mod(a, b):
        return _binary(a, b, "arith.remf", "arith.remsi", "arith.remui")

    fmod = mod  # C's fmod truncates like mod

    @staticmethod
    def remainder(a, b):
        a, b = _promote(a, b)
        r = MaiaOverrides.mod(a, b)
        if mt.is_unsigned(a.mdtype):
            return r
        return _k().python_remainder(_k().compute, r, b)

    @staticmethod
    def pow(a, b):
        k = _k()
        a, b = _promote(a, b)
        if mt.is_float(a.mdtype):
            return k.logical(k.compute, "math.powf", a, b)
        return k.logical(k.compute, "math.ipowi", a, b)

    @staticmethod
    def maximum(a, b):
        return _binary(a, b, "arith.maximumf", "arith.maxsi", "arith.maxui")

    @staticmethod
    def minimum(a, b):
        return _binary(a, b, "arith.minimumf", "arith.minsi", "arith.minui")

    @staticmethod
    def fma(a, b, c):
        k = _k()
        a, b = _promote(a, b)
        a, c = _promote(a, c)
        a, b = _promote(a, b)
        if not mt.is_float(a.mdtype):
            return MaiaOverrides.add(MaiaOverrides.mul(a, b), c)
        a, b = k.unify_shape(a, b)
        a, c = k.unify_shape(a, c)
        b, c = k.unify_shape(b, c)
        return k.emit(k.compute, f"math.fma {a}, {b}, {c} : {k.mlir_type(a.mdtype, a.vec)}",
                      a.mdtype, a.vec)

    @staticmethod
    def neg(x):
        k = _k()
        x = _value(x)
        if mt.is_float(x.mdtype):
            return k.emit(k.compute, f"arith.negf {x} : {k.mlir_type(x.mdtype, x.vec)}",
                          x.mdtype, x.vec)
        return MaiaOverrides.sub(k.constant(0, x.mdtype), x)

    @staticmethod
    def abs(x):
        k = _k()
        x = _value(x)
        if mt.is_unsigned(x.mdtype):
            return x
        op = "math.absf" if mt.is_float(x.mdtype) else "math.absi"
        return k.emit(k.compute, f"{op} {x} : {k.mlir_type(x.mdtype, x.vec)}", x.mdtype, x.vec)

    @staticmethod
    def sign(x):
        k = _k()
        x = _value(x)
        zero, one = k.constant(0, x.mdtype), k.constant(1, x.mdtype)
        minus = k.constant(-1, x.mdtype) if not mt.is_unsigned(x.mdtype) else zero
        positive = _compare(x, zero, "ogt", "sgt", "ugt")
        negative = _compare(x, zero, "olt", "slt", "ult")
        result = k.select(k.compute, negative, minus, k.to_context(zero) if x.vec else zero)
        return k.select(k.compute, positive, one, result)  # NaN: 0, as in PyTorch

    @staticmethod
    def reciprocal(x):
        x = _value(x)
        if not mt.is_float(x.mdtype):
            x = _k().convert(x, torch.float32)
        return MaiaOverrides.truediv(_k().constant(1.0, x.mdtype), x)

    @staticmethod
    def square(x):
        return MaiaOverrides.mul(x, x)

    @staticmethod
    def relu(x):
        x = _value(x)
        return MaiaOverrides.maximum(x, _k().constant(0, x.mdtype))

    @staticmethod
    def sigmoid(x):
        x = _value(x)
        if not mt.is_float(x.mdtype):
            x = _k().convert(x, torch.float32)
        one = _k().constant(1.0, x.mdtype)
        return MaiaOverrides.truediv(one, MaiaOverrides.add(one, MaiaOverrides.exp(
            MaiaOverrides.neg(x))))

    @staticmethod
    def erfc(x):
        """erfc(x): the maia dialect's op (MLIR 19 has no math.erfc, and
        1 - erf(x) loses every digit for large x); float64: libm's erfc."""
        x = _value(x)
        if x.mdtype == torch.float64:
            return _k().call_libm(_k().compute, "erfc", x)
        return _float_unary("maia.erfc", x)

    # Comparisons, and the logical and bitwise binaries: see _install_tables.

    @staticmethod
    def isnan(x):
        x = _value(x)
        if not mt.is_float(x.mdtype):
            return _k().constant(False, torch.bool, x.vec)
        return _k().compare(_k().compute, "uno", x, x)

    @staticmethod
    def isinf(x):
        x = _value(x)
        if not mt.is_float(x.mdtype):
            return _k().constant(False, torch.bool, x.vec)
        return _k().compare(_k().compute, "oeq", MaiaOverrides.abs(x),
                            _k().constant(float("inf"), x.mdtype))

    @staticmethod
    def signbit(x):
        k = _k()
        x = _value(x)
        if not mt.is_float(x.mdtype):
            return MaiaOverrides.lt(x, k.constant(0, x.mdtype))
        int_dtype = torch.int64 if x.mdtype == torch.float64 else torch.int32
        bits = k.emit(k.compute, f"arith.bitcast {x} : {k.mlir_type(x.mdtype, x.vec)} to "
                      f"{k.mlir_type(int_dtype, x.vec)}", int_dtype, x.vec)
        return MaiaOverrides.lt(bits, k.constant(0, int_dtype))

    # --------------------------------------------------- logical/bitwise
    @staticmethod
    def logical_not(a):
        a = _as_bool(a)
        return _k().logical(_k().compute, "arith.xori", a, _true_like(a))

    @staticmethod
    def bitwise_not(a):
        a = _value(a)
        ones = _k().constant(True if a.mdtype == torch.bool else -1, a.mdtype)
        return _k().logical(_k().compute, "arith.xori", a, ones)

    # ------------------------------------ one MLIR op per class of dtype
    exp = _float_op("math.exp")
    exp2 = _float_op("math.exp2")
    expm1 = _float_op("math.expm1")
    log = _float_op("math.log")
    log2 = _float_op("math.log2")
    log10 = _float_op("math.log10")
    log1p = _float_op("math.log1p")
    sqrt = _float_op("math.sqrt")
    rsqrt = _float_op("math.rsqrt")
    sin = _float_op("math.sin")
    cos = _float_op("math.cos")
    tan = _float_op("math.tan")
    tanh = _float_op("math.tanh")
    sinh = _float_op("math.sinh")
    cosh = _float_op("math.cosh")
    asin = _float_op("math.asin")
    acos = _float_op("math.acos")
    atan = _float_op("math.atan")
    asinh = _float_op("math.asinh")
    acosh = _float_op("math.acosh")
    atanh = _float_op("math.atanh")
    erf = _float_op("math.erf")
    cbrt = _float_op("math.cbrt")
    floor = _float_op("math.floor", rounding=True)
    ceil = _float_op("math.ceil", rounding=True)
    trunc = _float_op("math.trunc", rounding=True)
    round = _float_op("math.roundeven", rounding=True)

    @staticmethod
    def atan2(a, b):
        a, b = _promote(a, b)
        if not mt.is_float(a.mdtype):
            a, b = _k().convert(a, torch.float32), _k().convert(b, torch.float32)
        return _k().logical(_k().compute, "math.atan2", a, b)

    @staticmethod
    def copysign(a, b):
        a, b = _promote(a, b)
        return _k().logical(_k().compute, "math.copysign", a, b)

    # predicates: float, signed, unsigned
    eq = _comparison("oeq", "eq", "eq")
    ne = _comparison("une", "ne", "ne")
    lt = _comparison("olt", "slt", "ult")
    le = _comparison("ole", "sle", "ule")
    gt = _comparison("ogt", "sgt", "ugt")
    ge = _comparison("oge", "sge", "uge")

    bitwise_and = and_ = _bitwise("arith.andi")
    bitwise_or = or_ = _bitwise("arith.ori")
    bitwise_xor = xor = _bitwise("arith.xori")
    bitwise_left_shift = lshift = _bitwise("arith.shli")
    bitwise_right_shift = rshift = _bitwise("arith.shrsi", "arith.shrui")

    logical_and = _logical("arith.andi")
    logical_or = _logical("arith.ori")
    logical_xor = _logical("arith.xori")


def _name_unimplemented():
    """Ops without a MAIA lowering fail with their name, not a bare error."""
    from torch._inductor.codegen.common import OpDecompositions
    from torch._inductor.ops_handler import OpsHandler

    routed_to_kernel = {"load", "store", "store_reduction", "reduction", "scan", "sort",
                        "bucketize", "check_bounds", "device_assert_async", "partial_accumulate"}
    for name, fn in vars(OpsHandler).items():
        if name.startswith("_") or not callable(fn) or name in routed_to_kernel:
            continue
        if name in vars(MaiaOverrides) or name in vars(OpDecompositions) or name in vars(
                OpOverrides):
            continue
        setattr(MaiaOverrides, name, OpOverrides._unimplemented(name))


_name_unimplemented()
