"""Typed MLIR values of a MaiaKernel: the CSE that records each value's type,
and the emitters of constants, broadcasts, comparisons, selects and dtype
conversions that every other part builds on."""

from __future__ import annotations

import torch
from torch._inductor.codegen.common import CSE, CSEVariable, OpsValue
from torch._inductor.virtualized import V

from . import mlir_types as mt


class Typed(str):
    """MLIR text of one operation, with the dtype ("index" or a torch dtype)
    and shape (vector or scalar) of its result."""

    def __new__(cls, text: str, dtype, vec: bool):
        obj = super().__new__(cls, text)
        obj.dtype = dtype
        obj.vec = vec
        return obj


class MaiaCSEVariable(CSEVariable):
    def __init__(self, name, bounds, dtype=None, shape=None):
        super().__init__(name, bounds, dtype, shape)
        self.mdtype = None  # the MLIR value's dtype: a torch dtype or "index"
        self.vec = False
        self.scope = "loop"  # "global" (kernel entry), "x" (per x), "loop"

    def __str__(self) -> str:
        # Named tmpN for Inductor (indirect indexing symbols must start with
        # "tmp"), printed as the SSA value %tmpN.
        return f"%{self.name}"


class MaiaCSE(CSE):
    """CSE that records each value's type, and keeps the values computed
    after a reduction loop (the stores buffer) apart from those inside it:
    neither may be used where the other is in scope. The region is part of
    the cache key (upstream's augment_key)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.after_loop = False  # generating into the buffer after the loop

    def augment_key(self, cache_key):
        return (cache_key, self.after_loop)

    def generate(self, buffer, expr, **kwargs):
        if isinstance(expr, OpsValue):
            expr = expr.value
        kernel = V.kernel
        outer, self.after_loop = self.after_loop, (
            isinstance(kernel, ValueEmitter) and buffer is kernel.stores)
        try:
            var = super().generate(buffer, expr, **kwargs)
        finally:
            self.after_loop = outer
        if isinstance(expr, Typed) and isinstance(var, MaiaCSEVariable) and var.mdtype is None:
            var.mdtype = expr.dtype
            var.vec = expr.vec
            if var.dtype is None:  # what Inductor's dtype checks read
                if isinstance(expr.dtype, torch.dtype):
                    var.dtype = expr.dtype
                else:  # index values, or narrow f32 vectors of lane merges
                    var.dtype = torch.int64 if expr.dtype == "index" else torch.float32
            var.scope = kernel.scope_of(buffer)
        return var


class _Arg(str):
    """A named SSA value that is not a CSE variable (arguments, loop variables)."""

    def __new__(cls, name: str, dtype, vec: bool = False):
        obj = super().__new__(cls, name)
        obj.mdtype = dtype
        obj.vec = vec
        obj.scope = "global"
        obj.name = name
        return obj


class ValueEmitter:
    """Mixin of MaiaKernel: emits typed values into its buffers."""

    def dtype_to_str(self, dtype: torch.dtype) -> str:
        return mt.element_type(dtype)

    def mlir_type(self, dtype, vec: bool) -> str:
        if dtype == "index":
            return mt.index_type(vec)
        return mt.value_type(dtype, vec)

    def emit(self, buffer, text: str, dtype, vec: bool):
        return self.cse.generate(buffer, Typed(text, dtype, vec))

    def typed_newvar(self, buffer, dtype, vec: bool):
        """A fresh variable, outside the CSE, defined by the caller in buffer."""
        var = self.cse.newvar()
        var.mdtype, var.vec, var.scope = dtype, vec, self.scope_of(buffer)
        return var

    def call_libm(self, buffer, function: str, x):
        """function(x) by libm, lane by lane: for the float64 functions MLIR
        19's math dialect lacks (erfc)."""
        scalar_type = self.mlir_type(x.mdtype, False)
        self.libm_functions[function] = f"({scalar_type}) -> {scalar_type}"
        if not x.vec:
            return self.emit(buffer, f"func.call @{function}({x}) : ({scalar_type}) -> "
                             f"{scalar_type}", x.mdtype, False)
        vector_type = self.mlir_type(x.mdtype, True)
        result = self.constant(0, x.mdtype, True)
        for lane in range(mt.VL):
            element = self.emit(buffer, f"vector.extract {x}[{lane}] : {scalar_type} from "
                                f"{vector_type}", x.mdtype, False)
            value = self.emit(buffer, f"func.call @{function}({element}) : ({scalar_type}) -> "
                              f"{scalar_type}", x.mdtype, False)
            result = self.emit(buffer, f"vector.insert {value}, {result}[{lane}] : "
                               f"{scalar_type} into {vector_type}", x.mdtype, True)
        return result

    def emit_uncached(self, buffer, text: str, dtype, vec: bool):
        """For reads of mutable state (accumulator slots): never shared."""
        var = self.typed_newvar(buffer, dtype, vec)
        buffer.writeline(f"{var} = {text}")
        return var

    def emit_pair(self, buffer, text: str, dtype, vec: bool):
        """An operation with two results (e.g. arith.mului_extended)."""
        first, second = self.typed_newvar(buffer, dtype, vec), self.typed_newvar(buffer, dtype, vec)
        buffer.writeline(f"{first}, {second} = {text}")
        return first, second

    def constant(self, value, dtype, vec: bool = False):
        ty = self.mlir_type(dtype, vec)
        lit = str(int(value)) if dtype == "index" else mt.literal(value, dtype)
        if vec:
            text = f"arith.constant dense<{lit}> : {ty}"
        elif dtype == torch.bool:
            text = f"arith.constant {lit}"  # true/false carry their type
        else:
            text = f"arith.constant {lit} : {ty}"
        return self.emit(self.prologue, text, dtype, vec)

    def index_constant(self, value: int):
        return self.constant(value, "index")

    def bool_constant(self, value: bool, vec: bool):
        return self.constant(value, torch.bool, vec)

    def broadcast(self, value, buffer=None):
        if value.vec:
            return value
        buffer = self.compute if buffer is None else buffer
        dtype = value.mdtype
        scalar = self.mlir_type(dtype, False)
        return self.emit(buffer, f"vector.broadcast {value} : {scalar} to "
                         f"{self.mlir_type(dtype, True)}", dtype, True)

    def unify_shape(self, a, b, buffer=None):
        if a.vec and not b.vec:
            b = self.broadcast(b, buffer)
        elif b.vec and not a.vec:
            a = self.broadcast(a, buffer)
        return a, b

    def to_context(self, value, buffer=None):
        """value as the current context needs it: a vector inside vector loops."""
        if self.vector_context() and not value.vec:
            return self.broadcast(value, buffer)
        return value

    def compare(self, buffer, predicate: str, a, b):
        a, b = self.unify_shape(a, b, buffer)
        dtype = a.mdtype
        if dtype != "index" and mt.is_float(dtype):
            op = "arith.cmpf"
        else:
            op = "arith.cmpi"
        return self.emit(buffer, f"{op} {predicate}, {a}, {b} : {self.mlir_type(dtype, a.vec)}",
                         torch.bool, a.vec)

    def logical(self, buffer, op: str, a, b):
        a, b = self.unify_shape(a, b, buffer)
        return self.emit(buffer, f"{op} {a}, {b} : {self.mlir_type(a.mdtype, a.vec)}",
                         a.mdtype, a.vec)

    def select(self, buffer, cond, a, b):
        a, b = self.unify_shape(a, b, buffer)
        if a.vec and not cond.vec:
            cond = self.broadcast(cond, buffer)
        elif cond.vec and not a.vec:
            a, b = self.broadcast(a, buffer), self.broadcast(b, buffer)
        ty = self.mlir_type(a.mdtype, a.vec)
        cond_ty = f"{self.mlir_type(torch.bool, True)}, " if cond.vec else ""
        return self.emit(buffer, f"arith.select {cond}, {a}, {b} : {cond_ty}{ty}",
                         a.mdtype, a.vec)

    def python_remainder(self, buffer, r, b):
        """Python's a % b (the divisor's sign) from the truncated remainder
        r = a rem b: add b where r is nonzero and its sign differs from b's."""
        r, b = self.unify_shape(r, b, buffer)
        is_float = r.mdtype != "index" and mt.is_float(r.mdtype)
        less, not_equal = ("olt", "une") if is_float else ("slt", "ne")
        zero = self.constant(0, r.mdtype)
        signs_differ = self.logical(buffer, "arith.xori", self.compare(buffer, less, r, zero),
                                    self.compare(buffer, less, b, zero))
        fix = self.logical(buffer, "arith.andi", signs_differ,
                           self.compare(buffer, not_equal, r, zero))
        shifted = self.logical(buffer, "arith.addf" if is_float else "arith.addi", r, b)
        return self.select(buffer, fix, shifted, r)

    # ------------------------------------------------------------- conversion
    def convert(self, value, dtype: torch.dtype, buffer=None):
        """value converted to dtype (a compute dtype), keeping its shape.
        float16/bfloat16 round through their storage type."""
        buffer = self.compute if buffer is None else buffer
        src = value.mdtype
        if dtype in (torch.float16, torch.bfloat16):
            narrow = self.convert(value, torch.float32, buffer)
            vec = value.vec
            f32 = self.mlir_type(torch.float32, vec)
            low = self.mlir_type(dtype, vec)
            rounded = self.emit(buffer, f"arith.truncf {narrow} : {f32} to {low}", dtype, vec)
            return self.emit(buffer, f"arith.extf {rounded} : {low} to {f32}",
                             torch.float32, vec)
        if src == dtype:
            return value
        vec = value.vec
        if src == "index":
            as_i64 = self.emit(buffer, f"arith.index_cast {value} : {mt.index_type(vec)} to "
                               f"{self.mlir_type(torch.int64, vec)}", torch.int64, vec)
            return self.convert(as_i64, dtype, buffer)
        src_ty, dst_ty = self.mlir_type(src, vec), self.mlir_type(dtype, vec)
        if dtype == torch.bool:
            zero = self.constant(0, src, vec)
            pred = "une" if mt.is_float(src) else "ne"
            op = "arith.cmpf" if mt.is_float(src) else "arith.cmpi"
            return self.emit(buffer, f"{op} {pred}, {value}, {zero} : {src_ty}", torch.bool, vec)
        if mt.is_float(src) and mt.is_float(dtype):
            op = "arith.extf" if mt.bit_width(dtype) > mt.bit_width(src) else "arith.truncf"
        elif mt.is_float(src):
            op = "arith.fptoui" if mt.is_unsigned(dtype) else "arith.fptosi"
        elif mt.is_float(dtype):
            op = "arith.uitofp" if mt.is_unsigned(src) else "arith.sitofp"
        elif mt.bit_width(dtype) > mt.bit_width(src):
            op = "arith.extui" if mt.is_unsigned(src) else "arith.extsi"
        elif mt.bit_width(dtype) < mt.bit_width(src):
            op = "arith.trunci"
        else:
            return self.emit(buffer, f"arith.addi {value}, {self.constant(0, src, vec)} : "
                             f"{src_ty}", dtype, vec)  # int8 <-> uint8: same bits
        return self.emit(buffer, f"{op} {value} : {src_ty} to {dst_ty}", dtype, vec)

    def index_value(self, value, buffer):
        """An integer value as an index (for indirect indexing)."""
        vec = value.vec
        as_i64 = self.convert(value, torch.int64, buffer)
        return self.emit(buffer, f"arith.index_cast {as_i64} : {self.mlir_type(torch.int64, vec)}"
                         f" to {mt.index_type(vec)}", "index", vec)
