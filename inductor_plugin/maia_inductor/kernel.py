"""MaiaKernel: one fused group of Inductor nodes as one MLIR maia kernel.

Inductor (SIMDKernel) flattens the iteration space of a fused group into a
pointwise range `x` and, for reductions, a reduction range `r0_`; every node's
loop body replays its ops through this kernel (loads, stores, reductions)
and MaiaOverrides (everything else), and each op becomes MLIR text.

Execution model of the generated code (docs/inductor.md has the picture):
- The vectorized range (x for pointwise kernels, r0_ for reductions) is
  walked as rows of `inner` elements: index = row * inner + lane, where
  `inner` is the largest length dividing every way the fused nodes split the
  range. Inside a row the lanes are VL-wide vectors with a tail mask, so an
  index expression is affine in the lane for the usual layouts: stride 1
  becomes a masked vector load/store, stride 0 a scalar load and broadcast,
  other strides a gather/scatter; anything else (indirect indexing, odd
  splits) is computed per lane and gathered.
- Pointwise kernels split rows and row chunks over a 2-D grid of programs.
  Reduction kernels give each program a contiguous block of x; per x, each
  reduction loop accumulates into per-lane accumulators (stack slots that
  LLVM promotes to registers), then reduces across lanes.
"""

from __future__ import annotations

import contextlib
import itertools
import math
from typing import Any

import sympy
import torch
from torch._inductor import config
from torch._inductor.codegen.common import (
    CSE,
    CSEVariable,
    DeferredLine,
    IndentedBuffer,
    OpsValue,
    PythonPrinter,
)
from torch._inductor.codegen.simd import SIMDKernel
from torch._inductor.utils import sympy_index_symbol
from torch._inductor.virtualized import V
from torch.utils._ordered_set import OrderedSet
from torch.utils._sympy.value_ranges import ValueRanges
from torch.utils._sympy.functions import FloorDiv, ModularIndexing

from . import mlir_types as mt
from .index_emitter import IndexEmitter
from .mlir_types import VL
from .overrides import MaiaOverrides

pexpr = PythonPrinter().doprint

LANE = sympy.Symbol("maia_lane", integer=True, nonnegative=True)
LANE_START = sympy.Symbol("maia_lane_start", integer=True, nonnegative=True)
ROW = sympy.Symbol("maia_row", integer=True, nonnegative=True)


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
    neither may be used where the other is in scope."""

    def generate(self, buffer, expr, **kwargs):
        if isinstance(expr, OpsValue):
            expr = expr.value
        kernel = V.kernel
        after_loop = isinstance(kernel, MaiaKernel) and buffer is kernel.stores
        if after_loop:
            inside, self._cache = self._cache, getattr(self, "after_loop_cache", {})
        try:
            var = super().generate(buffer, expr, **kwargs)
        finally:
            if after_loop:
                self.after_loop_cache, self._cache = self._cache, inside
        if isinstance(expr, Typed) and isinstance(var, MaiaCSEVariable) and var.mdtype is None:
            var.mdtype = expr.dtype
            var.vec = expr.vec
            if var.dtype is None:  # what Inductor's dtype checks read
                if isinstance(expr.dtype, torch.dtype):
                    var.dtype = expr.dtype
                else:  # index values, or narrow f32 vectors of lane merges
                    var.dtype = torch.int64 if expr.dtype == "index" else torch.float32
            var.scope = V.kernel.scope_of(buffer)
        return var


class VectorRange:
    """How one range tree is walked: rows of `inner` lanes."""

    def __init__(self, tree, inner: sympy.Expr):
        self.tree = tree
        self.inner = inner  # in graph symbols

    def divides(self, value: sympy.Expr) -> bool:
        return V.graph.sizevars.statically_known_multiple_of(value, self.inner)

    def lane_form(self, entry):
        """entry = uniform(ROW) + (LANE if lane_coefficient else 0), or None
        when the entry is not affine in the lane under this split."""
        divisor, length = entry.divisor, entry.length
        if divisor == 1 and self.divides(length):
            if V.graph.sizevars.statically_known_equals(length, self.tree.numel):
                return ROW * self.inner, 1
            return ModularIndexing(ROW, 1, length / self.inner) * self.inner, 1
        if divisor != 1 and self.divides(divisor):
            step = sympy.simplify(divisor / self.inner)
            if isinstance(entry.expr, FloorDiv):
                return FloorDiv(ROW, step), 0
            return ModularIndexing(ROW, step, length), 0
        return None


class MaiaKernel(SIMDKernel):
    overrides = MaiaOverrides  # type: ignore[assignment]
    newvar_prefix = ""
    suffix = ""
    kexpr = pexpr
    sexpr = pexpr

    def __init__(self, tiling: dict[str, sympy.Expr], **kwargs: Any) -> None:
        super().__init__(tiling, **kwargs)
        self.cse = MaiaCSE(self.newvar_prefix, self.suffix)
        self.prologue = IndentedBuffer()  # constants and accumulator slots
        self.segment_init = IndentedBuffer()  # accumulator resets, before a loop
        self.vector_ranges: dict[str, VectorRange] = {}
        self.lane_mask = None  # tail mask of the current vector loop
        self.lane_start = None  # induction variable of the current vector loop
        self.row_var = None
        self.segment = 0
        self._slot_ids = itertools.count()
        self._segment_ids = itertools.count()  # per kernel: equal groups, equal text
        self.origins_comment = ""
        self._first_segment = self.segment = next(self._segment_ids)
        self._begin_vector_loop()
        self.x_var = _Arg("%x", "index")
        # Reductions over a non-contiguous dimension (sum over rows, bias
        # gradients, batch norm) put the lanes on x instead: see finalize_indexing.
        self.outer_reduction = False

    # ----------------------------------------------------------------- basics
    def create_cse_var(self, *args, **kwargs):
        return MaiaCSEVariable(*args, **kwargs)

    @property
    def is_reduction_kernel(self) -> bool:
        return self.features.is_reduction()

    @property
    def lanes_over_x(self) -> bool:
        """Whether the lanes walk x (pointwise kernels, outer reductions) or
        the reduction range (inner reductions)."""
        return not self.is_reduction_kernel or self.outer_reduction

    def vector_context(self) -> bool:
        """Whether values computed now are per lane (vectors)."""
        return self.lanes_over_x or self.inside_reduction

    def scope_of(self, buffer) -> str:
        if buffer is self.prologue:
            return "global"
        if self.is_reduction_kernel and (not self.inside_reduction or buffer is self.stores):
            return "x"
        return "loop"

    def should_use_persistent_reduction(self) -> bool:
        return False  # every reduction is a loop: see codegen_body

    def should_use_cooperative_reduction(self) -> bool:
        return False

    def codegen_iteration_ranges_entry(self, entry) -> None:
        pass  # entries are materialized where an index uses them

    def dtype_to_str(self, dtype: torch.dtype) -> str:
        return mt.element_type(dtype)

    def mlir_type(self, dtype, vec: bool) -> str:
        if dtype == "index":
            return mt.index_type(vec)
        return mt.value_type(dtype, vec)

    def emit(self, buffer, text: str, dtype, vec: bool):
        return self.cse.generate(buffer, Typed(text, dtype, vec))

    def emit_uncached(self, buffer, text: str, dtype, vec: bool):
        """For reads of mutable state (accumulator slots): never shared."""
        var = self.cse.newvar()
        var.mdtype, var.vec, var.scope = dtype, vec, self.scope_of(buffer)
        buffer.writeline(f"{var} = {text}")
        return var

    def emit_pair(self, buffer, text: str, dtype, vec: bool):
        """An operation with two results (e.g. arith.mului_extended)."""
        first, second = self.cse.newvar(), self.cse.newvar()
        for var in (first, second):
            var.mdtype, var.vec, var.scope = dtype, vec, self.scope_of(buffer)
        buffer.writeline(f"{first}, {second} = {text}")
        return first, second

    def constant(self, value, dtype, vec: bool = False):
        ty = self.mlir_type(dtype, vec)
        lit = "0" if dtype == "index" and value == 0 else (
            str(int(value)) if dtype == "index" else mt.literal(value, dtype))
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

    # --------------------------------------------------------------- indexing
    def vector_range(self, tree) -> VectorRange:
        """The row split of tree, chosen on first use from every way the
        fused nodes split it."""
        if tree.prefix not in self.vector_ranges:
            inner = None
            for entry in self.range_tree_nodes.values():
                if entry.root is not tree:
                    continue
                part = entry.length if entry.divisor == 1 else entry.divisor
                inner = part if inner is None else sympy.gcd(inner, part)
            if inner is None:
                inner = tree.numel
            self.vector_ranges[tree.prefix] = VectorRange(tree, V.graph.sizevars.simplify(inner))
        return self.vector_ranges[tree.prefix]

    def vector_tree(self):
        prefix = "x" if self.lanes_over_x else "r0_"
        return next(t for t in self.range_trees if t.prefix == prefix)

    def scalar_tree(self):
        """The range walked one index at a time (reduction kernels)."""
        prefix = "r0_" if self.lanes_over_x else "x"
        return next(t for t in self.range_trees if t.prefix == prefix)

    def scalar_var(self):
        return self.r_var if self.lanes_over_x else self.x_var

    def x_tree(self):
        return next(t for t in self.range_trees if t.prefix == "x")

    def finalize_indexing(self, indices) -> None:
        # Every entry exists now: choose the lanes' range and freeze its row
        # split before any code uses it.
        if self.is_reduction_kernel:
            self.outer_reduction = self._prefers_outer_lanes(indices)
        for tree in self.range_trees:
            if tree.prefix in ("x", "r0_"):
                self.vector_range(tree)

    def _prefers_outer_lanes(self, indices) -> bool:
        """Vote over the accesses inside the reduction: contiguous along the
        reduction (inner lanes) or only along x (outer lanes)."""
        def innermost(prefix):
            return [e.symbol() for e in self.range_tree_nodes.values()
                    if e.root.prefix == prefix and e.divisor == 1]

        r_vars, x_vars = innermost("r0_"), innermost("x")
        inner = outer = 0
        for index in indices:
            if not any(v in index.free_symbols for v in r_vars):
                continue  # stores of results: x only
            if any(_stride(index, v) == 1 for v in r_vars):
                inner += 1
            elif any(_stride(index, v) == 1 for v in x_vars):
                outer += 1
        return outer > inner

    def _symbol_value(self, symbol, buffer, lane_vector):
        """The SSA value of a symbol of an index expression."""
        name = symbol.name
        if symbol == ROW:
            return self.row_var
        if symbol == LANE_START:
            return self.lane_start
        if symbol == LANE:
            return lane_vector()
        if name in self.cse.varname_map:  # indirect indexing through a value
            return self.index_value(self.cse.varname_map[name], buffer)
        entry = self.range_tree_nodes.get(symbol)
        if entry is not None:
            return self._entry_value(entry, buffer, lane_vector)
        if name == self.scalar_tree().name:
            return self.scalar_var()
        if name in self.args.sizevars.values():
            return _Arg(f"%{name}", "index")
        raise NotImplementedError(f"maia: unknown symbol {name} in an index expression")

    def _entry_value(self, entry, buffer, lane_vector):
        if self.is_reduction_kernel and entry.root is self.scalar_tree():
            return self._emitter(buffer, lane_vector).emit(self._renamed(entry.expr))
        expr = self._lane_substituted(sympy_index_symbol(entry.name))
        return self._emitter(buffer, lane_vector).emit(self._renamed(expr))

    def _renamed(self, expr):
        return self.rename_indexing(expr) if expr.free_symbols else expr

    def _lane_vector(self, buffer):
        def make():
            iota = self.emit(self.prologue, "arith.constant dense<[" + ", ".join(
                str(i) for i in range(VL)) + f"]> : {mt.index_type(True)}", "index", True)
            start = self.broadcast(self.lane_start, buffer)
            return self.emit(buffer, f"arith.addi {start}, {iota} : {mt.index_type(True)}",
                             "index", True)
        return make

    def _emitter(self, buffer, lane_vector=None):
        lane_vector = lane_vector or self._lane_vector(buffer)
        return IndexEmitter(self, buffer,
                            lambda symbol: self._symbol_value(symbol, buffer, lane_vector))

    def affine_split(self, index: sympy.Expr):
        """(base, stride) with index = base + stride * lane for the vector
        range, base and stride uniform; None if index is not affine."""
        tree = self.vector_tree()
        vrange = self.vector_range(tree)
        subs = {}
        for symbol in index.free_symbols:
            entry = self.range_tree_nodes.get(symbol)
            if symbol.name in self.cse.varname_map:
                if self.cse.varname_map[symbol.name].vec:
                    return None
                continue
            if entry is None or entry.root is not tree:
                continue
            form = vrange.lane_form(entry)
            if form is None:
                return None
            uniform, lane = form
            subs[symbol] = uniform + (LANE if lane else 0)
        expanded = sympy.expand(index.subs(subs, simultaneous=True))
        stride = expanded.coeff(LANE)
        base = sympy.expand(expanded - stride * LANE)
        if LANE in base.free_symbols or LANE in stride.free_symbols:
            return None
        return base, stride

    def emit_index(self, index: sympy.Expr, buffer):
        """Emits index for the current context: an `index` scalar, or per lane."""
        if not self.vector_context():
            return self._emitter(buffer).emit(self._renamed(index))
        return self._emitter(buffer).emit(self._renamed(self._lane_substituted(index)))

    def _lane_substituted(self, index):
        tree = self.vector_tree()
        vrange = self.vector_range(tree)
        subs = {}
        for symbol in index.free_symbols:
            entry = self.range_tree_nodes.get(symbol)
            if entry is None or entry.root is not tree:
                continue
            form = vrange.lane_form(entry)
            if form is None:
                root = sympy_index_symbol(entry.root.name)
                subs[symbol] = entry.expr.subs(root, ROW * vrange.inner + LANE)
            else:
                uniform, lane = form
                subs[symbol] = uniform + (LANE if lane else 0)
        return index.subs(subs, simultaneous=True)

    def address(self, index: sympy.Expr, buffer):
        """How the lanes address memory at index: ("scalar" | "broadcast" |
        "contiguous" | "gather", base, per-lane offsets from base)."""
        if not self.vector_context():
            return "scalar", self._emitter(buffer).emit(self._renamed(index)), None
        split = self.affine_split(index)
        if split is not None:
            base, stride = split
            if stride == 0:
                return "broadcast", self._emitter(buffer).emit(self._renamed(base)), None
            # lane l of the vector starting at LANE_START is at base + stride * (LANE_START + l)
            start = self._emitter(buffer).emit(self._renamed(base + stride * LANE_START))
            if stride == 1:
                return "contiguous", start, None
            offsets = self._emitter(buffer, self._iota_vector).emit(self._renamed(stride * LANE))
            return "gather", start, self.broadcast(offsets, buffer)
        lanes = self._emitter(buffer).emit(self._renamed(self._lane_substituted(index)))
        return "gather", self.index_constant(0), self.broadcast(lanes, buffer)

    def _iota_vector(self):
        return self.emit(self.prologue, "arith.constant dense<[" + ", ".join(
            str(i) for i in range(VL)) + f"]> : {mt.index_type(True)}", "index", True)

    # ------------------------------------------------------ loads and stores
    def memref_type(self, name: str) -> str:
        return f"memref<?x{mt.memory_type(V.graph.get_dtype(name))}>"

    def _current_mask(self, buffer):
        mask = self.lane_mask
        if self._load_mask is not None:
            load_mask = self._load_mask
            if not isinstance(load_mask, MaiaCSEVariable):
                raise NotImplementedError(f"maia: unexpected load mask {load_mask!r}")
            if mask is None:
                return load_mask
            return self.logical(buffer, "arith.andi", self.to_context(load_mask, buffer), mask)
        return mask

    def load(self, name: str, index: sympy.Expr):
        var = f"%{self.args.input(name)}"
        dtype = V.graph.get_dtype(name)
        if V.graph.is_unspec_arg(name):
            # A 0-d CPU tensor (e.g. an optimizer's step count): the wrapper
            # passes its value as a scalar argument.
            scalar = MaiaCSEVariable(self.args.input(name), ValueRanges.unknown(), dtype)
            scalar.mdtype, scalar.vec, scalar.scope = mt.compute_dtype(dtype), False, "global"
            return scalar
        # Loads, computation and stores stay in program order in one buffer:
        # an index computed for one of them may serve the next.
        buffer = self.compute
        index = self.prepare_indexing(index)
        mem_ty = self.memref_type(name)
        elem = mt.memory_type(dtype)
        kind, base, offsets = self.address(index, buffer)
        mask = self._current_mask(buffer) if self.vector_context() else None
        other = self._load_other if self._load_other is not None else 0
        if kind == "scalar" or kind == "broadcast":
            scalar_mask = self._load_mask if (kind == "scalar" and self._load_mask is not None) else None
            raw = self._scalar_load(buffer, var, base, mem_ty, elem, dtype, scalar_mask, other)
            # Uniform across the lanes: stays scalar until an op needs lanes
            # (and as an index, keeps indirect accesses contiguous).
            return self._to_compute(raw, dtype, buffer)
        vty = f"vector<{VL}x{elem}>"
        mask_ty = self.mlir_type(torch.bool, True)
        passthru = self.constant(other if dtype != torch.bool else int(bool(other)),
                                 torch.int8 if dtype in (torch.bool, torch.uint8) else dtype, True)
        if kind == "contiguous":
            text = (f"vector.maskedload {var}[{base}], {mask}, {passthru} : {mem_ty}, "
                    f"{mask_ty}, {vty} into {vty}")
        else:
            text = (f"vector.gather {var}[{base}][{offsets}], {mask}, {passthru} : {mem_ty}, "
                    f"{mt.index_type(True)}, {mask_ty}, {vty} into {vty}")
        raw = self.emit(buffer, text, _storage_dtype(dtype), True)
        return self._to_compute(raw, dtype, buffer)

    def _scalar_load(self, buffer, var, index, mem_ty, elem, dtype, mask, other):
        load = f"memref.load {var}[{index}] : {mem_ty}"
        if mask is None:
            return self.emit(buffer, load, _storage_dtype(dtype), False)
        # A masked scalar load must not touch memory when the mask is off.
        other_value = self.constant(other, _storage_dtype(dtype))
        result = self.cse.newvar()
        result.mdtype, result.vec, result.scope = _storage_dtype(dtype), False, self.scope_of(buffer)
        buffer.writeline(f"{result} = scf.if {mask} -> ({elem}) {{")
        with buffer.indent():
            buffer.writeline(f"%loaded{result.name[2:]} = {load}")
            buffer.writeline(f"scf.yield %loaded{result.name[2:]} : {elem}")
        buffer.writeline("} else {")
        with buffer.indent():
            buffer.writeline(f"scf.yield {other_value} : {elem}")
        buffer.writeline("}")
        return result

    def _to_compute(self, raw, dtype, buffer):
        if dtype == torch.bool:
            zero = self.constant(0, torch.int8, raw.vec)
            return self.emit(buffer, f"arith.cmpi ne, {raw}, {zero} : "
                             f"{self.mlir_type(torch.int8, raw.vec)}", torch.bool, raw.vec)
        if dtype in (torch.float16, torch.bfloat16):
            return self.emit(buffer, f"arith.extf {raw} : {self.mlir_type(dtype, raw.vec)} to "
                             f"{self.mlir_type(torch.float32, raw.vec)}", torch.float32, raw.vec)
        if dtype == torch.uint8:
            return raw  # stored as i8; the CSE variable keeps uint8 semantics
        return raw

    def _to_storage(self, value, dtype, buffer):
        if dtype == torch.bool:
            value = self.convert(value, torch.bool, buffer)
            return self.emit(buffer, f"arith.extui {value} : {self.mlir_type(torch.bool, value.vec)}"
                             f" to {self.mlir_type(torch.int8, value.vec)}", torch.int8, value.vec)
        if dtype in (torch.float16, torch.bfloat16):
            value = self.convert(value, torch.float32, buffer)
            return self.emit(buffer, f"arith.truncf {value} : "
                             f"{self.mlir_type(torch.float32, value.vec)} to "
                             f"{self.mlir_type(dtype, value.vec)}", dtype, value.vec)
        return self.convert(value, dtype, buffer)

    def store(self, name: str, index: sympy.Expr, value, mode=None) -> None:
        # see load(): the store stays in program order
        self._store_lanes(name, self.prepare_indexing(index), value, self.compute, mode)

    def _store_lanes(self, name, index, value, buffer, mode=None) -> None:
        var = f"%{self.args.output(name)}"
        dtype = V.graph.get_dtype(name)
        value = self.to_context(value, buffer)
        stored = self._to_storage(value, dtype, buffer)
        mem_ty = self.memref_type(name)
        elem = mt.memory_type(dtype)
        kind, base, offsets = self.address(index, buffer)
        if mode == "atomic_add":
            self._atomic_add(buffer, name, var, kind, base, offsets, stored, mem_ty, elem)
            return
        if mode is not None:
            raise NotImplementedError(f"maia: store mode {mode!r} is not supported")
        if kind == "scalar":
            line = f"memref.store {stored}, {var}[{base}] : {mem_ty}"
        else:
            mask = self._current_mask(buffer)
            vty = f"vector<{VL}x{elem}>"
            mask_ty = self.mlir_type(torch.bool, True)
            if kind == "contiguous":
                line = f"vector.maskedstore {var}[{base}], {mask}, {stored} : {mem_ty}, {mask_ty}, {vty}"
            else:
                if kind == "broadcast":
                    offsets = self.broadcast(self.index_constant(0), buffer)
                line = (f"vector.scatter {var}[{base}][{offsets}], {mask}, {stored} : {mem_ty}, "
                        f"{mt.index_type(True)}, {mask_ty}, {vty}")
        buffer.writeline(DeferredLine(name, line))

    def _atomic_add(self, buffer, name, var, kind, base, offsets, stored, mem_ty, elem):
        op = "addf" if mt.is_float(V.graph.get_dtype(name)) else "addi"
        if kind == "scalar":
            buffer.writeline(DeferredLine(
                name, f"%atomic{next(self._slot_ids)} = memref.atomic_rmw {op} {stored}, "
                f"{var}[{base}] : ({elem}, {mem_ty}) -> {elem}"))
            return
        # Lanes may hit the same element: add them one at a time.
        if kind == "contiguous":
            offsets = self._iota_vector()
        elif kind == "broadcast":
            offsets = self.broadcast(self.index_constant(0), buffer)
        mask = self._current_mask(buffer)
        n = next(self._slot_ids)
        c0, c1, cvl = self.index_constant(0), self.index_constant(1), self.index_constant(VL)
        lines = [
            f"scf.for %alane{n} = {c0} to {cvl} step {c1} {{",
            f"  %aon{n} = vector.extractelement {mask}[%alane{n} : index] : {self.mlir_type(torch.bool, True)}",
            f"  scf.if %aon{n} {{",
            f"    %aoff{n} = vector.extractelement {offsets}[%alane{n} : index] : {mt.index_type(True)}",
            f"    %aidx{n} = arith.addi {base}, %aoff{n} : index",
            f"    %aval{n} = vector.extractelement {stored}[%alane{n} : index] : vector<{VL}x{elem}>",
            f"    %aold{n} = memref.atomic_rmw {op} %aval{n}, {var}[%aidx{n}] : ({elem}, {mem_ty}) -> {elem}",
            "  }",
            "}",
        ]
        for line in lines:
            buffer.writeline(DeferredLine(name, line))

    def store_reduction(self, name: str, index: sympy.Expr, value) -> None:
        if self.outer_reduction:  # one result per lane: a vector store after the loop
            self._store_lanes(name, self.prepare_indexing(index), value, self.stores)
            return
        var = f"%{self.args.output(name)}"
        dtype = V.graph.get_dtype(name)
        index = self.prepare_indexing(index)
        buffer = self.stores
        with self._scalar_context():
            stored = self._to_storage(value, dtype, buffer)
            address = self._emitter(buffer).emit(self._renamed(index))
        self.stores.writeline(DeferredLine(
            name, f"memref.store {stored}, {var}[{address}] : {self.memref_type(name)}"))

    @contextlib.contextmanager
    def _scalar_context(self):
        prior = self.inside_reduction
        self.inside_reduction = False
        try:
            yield
        finally:
            self.inside_reduction = prior

    @contextlib.contextmanager
    def mask_loads(self, mask, value):
        prior_mask, prior_other = self._load_mask, self._load_other
        if prior_mask is not None:
            mask = self.logical(self.compute, "arith.andi", mask, prior_mask)
        self._load_mask, self._load_other = mask, value
        try:
            yield mask
        finally:
            self._load_mask, self._load_other = prior_mask, prior_other

    def check_bounds(self, expr, size, lower: bool, upper: bool) -> None:
        if not (lower or upper):
            return
        buffer = self.compute
        value = self.emit_index(expr, buffer)
        limit = self._emitter(buffer).emit(self._renamed(size))
        zero = self.index_constant(0)
        bad = None
        if lower:
            bad = self.compare(buffer, "slt", value, zero)
        if upper:
            over = self.compare(buffer, "sge", value, limit)
            bad = over if bad is None else self.logical(buffer, "arith.ori", bad, over)
        if bad.vec:
            if self.lane_mask is not None:
                bad = self.logical(buffer, "arith.andi", bad, self.lane_mask)
            bad = self.emit(buffer, f"vector.reduction <or>, {bad} : "
                            f"{self.mlir_type(torch.bool, True)} into i1", torch.bool, False)
        # Like a device assert: the program traps, the stream reports a
        # sticky error naming this kernel at the next synchronization.
        buffer.writeline(f"scf.if {bad} {{")
        buffer.writeline('  "llvm.intr.trap"() : () -> ()')
        buffer.writeline("}")

    # -------------------------------------------------------------- reduction
    def reduction_position(self, buffer):
        """The linear index in the reduction range of what the lanes hold now."""
        if self.outer_reduction:
            return self.r_var
        vrange = self.vector_range(self.vector_tree())
        return self._emitter(buffer).emit(self._renamed(ROW * vrange.inner + LANE))

    def _slot(self, dtype, vec=True):
        ty = self.mlir_type(dtype, vec)
        slot = f"%acc{next(self._slot_ids)}"
        self.prologue.writeline(f"{slot} = memref.alloca() : memref<{ty}>")
        return slot, ty

    def _slot_init(self, slot, ty, value):
        self.segment_init.writeline(f"memref.store {value}, {slot}[] : memref<{ty}>")

    def _slot_load(self, buffer, slot, ty, dtype, vec=True):
        return self.emit_uncached(buffer, f"memref.load {slot}[] : memref<{ty}>", dtype, vec)

    def reduction(self, dtype, src_dtype, reduction_type, value):
        from .reductions import emit_reduction

        cache_key = (src_dtype, reduction_type, value)
        if cache_key in self.cse.reduction_cache:
            return self.cse.reduction_cache[cache_key]
        result = emit_reduction(self, dtype, src_dtype, reduction_type, value)
        self.cse.reduction_cache[cache_key] = result
        return result

    # ------------------------------------------------------------- structure
    def codegen_body(self) -> None:
        if not (self.loads or self.compute or self.stores or self.segment_init):
            return
        if self.is_reduction_kernel and self.inside_reduction:
            self._codegen_reduction_segment()
        else:
            self.body.splice(self.loads)
            self.body.splice(self.compute)
            self.body.splice(self.stores)
        self.loads.clear()
        self.compute.clear()
        self.stores.clear()
        self.segment_init.clear()
        if self.is_reduction_kernel:
            self._start_segment()

    def _start_segment(self):
        """Values of the finished loop are out of scope from here on; those
        computed after it are in scope for the rest of this x."""
        keep = [v for v in self.cse.varname_map.values()
                if isinstance(v, MaiaCSEVariable) and v.scope != "loop"]
        for item in self.cse.reduction_cache.values():
            keep.extend(item if isinstance(item, tuple) else (item,))
        self.cse.invalidate(OrderedSet(keep))
        self.cse._cache.update(getattr(self.cse, "after_loop_cache", {}))
        self.cse.after_loop_cache = {}
        self.segment = next(self._segment_ids)
        if self.outer_reduction:
            # the lanes' loop encloses every reduction loop: only r is new
            self.r_var = _Arg(f"%r{self.segment}", "index")
        else:
            self._begin_vector_loop()

    def _begin_vector_loop(self):
        n = self.segment
        self.r_var = _Arg(f"%r{n}", "index")
        self.row_var = _Arg(f"%row{n}", "index")
        self.lane_start = _Arg(f"%lane{n}", "index")
        self.lane_mask = _Arg(f"%mask{n}", torch.bool, vec=True)

    def _loop_header(self, code, tree_prefix: str, start: str, stop: str, rows_start: str,
                     rows_stop: str):
        n = self.segment
        c1, cvl = self.index_constant(1), self.index_constant(VL)
        code.writeline(f"scf.for {self.row_var} = {rows_start} to {rows_stop} step {c1} {{")
        code.do_indent()
        code.writeline(f"scf.for {self.lane_start} = {start} to {stop} step {cvl} {{")
        code.do_indent()
        code.writeline(f"%left{n} = arith.subi {stop}, {self.lane_start} : index")
        code.writeline(f"{self.lane_mask} = vector.create_mask %left{n} : "
                       f"{self.mlir_type(torch.bool, True)}")

    def _loop_footer(self, code):
        code.do_unindent()
        code.writeline("}")
        code.do_unindent()
        code.writeline("}")

    def _codegen_reduction_segment(self):
        self.body.splice(self.segment_init)
        if self.outer_reduction:
            c0, c1 = self.index_constant(0), self.index_constant(1)
            self.body.writeline(f"scf.for {self.r_var} = {c0} to %r_count step {c1} {{")
            with self.body.indent():
                self.body.splice(self.loads)
                self.body.splice(self.compute)
            self.body.writeline("}")
            self.body.splice(self.stores)
            return
        c0 = self.index_constant(0)
        self._loop_header(self.body, "r0_", c0, "%r_inner", c0, "%r_rows")
        self.body.splice(self.loads)
        self.body.splice(self.compute)
        self._loop_footer(self.body)
        self.body.splice(self.stores)

    def codegen_kernel(self, name: str | None = None) -> str:
        self.codegen_body()
        code = IndentedBuffer()
        header = IndentedBuffer()
        self._grid_header(header)  # may add size arguments: before the signature
        args = self.kernel_arguments()
        from .scheduling import KERNEL_NAME_PLACEHOLDER

        name = name or KERNEL_NAME_PLACEHOLDER
        signature = ", ".join(f"{ssa}: {ty}" for ssa, ty, _ in args)
        if self.origins_comment:
            code.writeline(self.origins_comment)
        code.writeline(f"func.func @{name}({signature}) attributes {{maia.kernel, "
                       f"maia.grid_rank = {2 if self.lanes_over_x else 1}}} {{")
        with code.indent():
            code.splice(self.prologue)
            code.splice(header)
            if not self.lanes_over_x:
                code.writeline(f"scf.for {self.x_var} = %x_start to %x_stop step "
                               f"{self.index_constant(1)} {{")
                with code.indent():
                    code.splice(self.body)
                code.writeline("}")
            else:
                self._loop_header(code, "x", "%x_chunk_start", "%x_chunk_stop", "%x_row_start",
                                  "%x_row_stop")
                code.splice(self.body)
                self._loop_footer(code)
            code.writeline("return")
        code.writeline("}")
        return code.getvalue()

    def _numel(self, prefix):
        tree = next((t for t in self.range_trees if t.prefix == prefix), None)
        return sympy.S.One if tree is None else tree.numel

    def _grid_header(self, code):
        """Each program's share of the iteration space (docs/inductor.md)."""
        self.cse._cache = {}  # values of the body do not dominate the header
        emitter = self._emitter(code, lambda: None)
        lines = []

        def value(expr):
            return emitter.emit(self._renamed(sympy.sympify(expr)))

        if not self.lanes_over_x:
            xnumel = value(self._numel("x"))
            rnumel = value(self._numel("r0_"))
            inner = value(self.vector_range(self.vector_tree()).inner)
            lines += [
                "%pid = maia.program_id 0",
                "%nprog = maia.num_programs 0",
                f"%x_lo = arith.muli %pid, {xnumel} : index",
                f"%x_start = arith.divsi %x_lo, %nprog : index",
                f"%pid_next = arith.addi %pid, {self.index_constant(1)} : index",
                f"%x_hi = arith.muli %pid_next, {xnumel} : index",
                f"%x_stop = arith.divsi %x_hi, %nprog : index",
                f"%r_inner = arith.maxsi {inner}, {self.index_constant(1)} : index",
                f"%r_rows = arith.divsi {rnumel}, %r_inner : index",
            ]
        else:
            xnumel = value(self._numel("x"))
            inner = value(self.vector_range(self.vector_tree()).inner)
            one = self.index_constant(1)
            lines += [
                "%pid = maia.program_id 0",
                "%nprog = maia.num_programs 0",
                "%cpid = maia.program_id 1",
                "%ncprog = maia.num_programs 1",
                f"%x_inner = arith.maxsi {inner}, {one} : index",
                f"%x_rows = arith.divsi {xnumel}, %x_inner : index",
                "%x_lo = arith.muli %pid, %x_rows : index",
                "%x_row_start = arith.divsi %x_lo, %nprog : index",
                f"%pid_next = arith.addi %pid, {one} : index",
                "%x_hi = arith.muli %pid_next, %x_rows : index",
                "%x_row_stop = arith.divsi %x_hi, %nprog : index",
                # chunks of the row: a multiple of VL so vectors stay aligned
                f"%x_per = arith.ceildivsi %x_inner, %ncprog : index",
                f"%x_per_vecs = arith.ceildivsi %x_per, {self.index_constant(VL)} : index",
                f"%x_chunk = arith.muli %x_per_vecs, {self.index_constant(VL)} : index",
                "%x_chunk_lo = arith.muli %cpid, %x_chunk : index",
                "%x_chunk_start = arith.minsi %x_chunk_lo, %x_inner : index",
                "%x_chunk_hi = arith.addi %x_chunk_start, %x_chunk : index",
                f"%x_chunk_stop = arith.minsi %x_chunk_hi, {inner} : index",
            ]
            if self.is_reduction_kernel:
                rnumel = value(self._numel("r0_"))
                lines.append(f"%r_count = arith.addi {rnumel}, {self.index_constant(0)} : index")
        for line in lines:
            code.writeline(line)

    def kernel_arguments(self):
        """[(ssa name, MLIR type, wrapper expression)] in call order."""
        from torch._inductor.codegen.common import TensorArg

        arg_defs, call_args, signature, _ = self.args.python_argdefs()
        result = []
        for arg_def, outer, arg in zip(arg_defs, call_args, signature):
            ssa = f"%{arg_def.name if hasattr(arg_def, 'name') else arg_def}"
            if isinstance(arg, TensorArg) and V.graph.is_unspec_arg(arg.buffer):
                result.append((ssa, mt.element_type(mt.compute_dtype(arg.dtype)),
                               f"{outer}.item()"))
            elif isinstance(arg, TensorArg):
                result.append((ssa, f"memref<?x{mt.memory_type(arg.dtype)}>", outer))
            else:
                result.append((ssa, "index", outer))
        return result

    def call_kernel(self, name: str, node=None, deallocate_ws: bool = True) -> None:
        wrapper = V.graph.wrapper_code
        for symbol in self.args.sizevars:
            wrapper.ensure_size_computed(symbol)
        args = [str(outer) for _, _, outer in self.kernel_arguments()]
        if self.outer_reduction:
            sizes = (self._numel("x"), self.vector_range(self.vector_tree()).inner,
                     self._numel("r0_"))
            grid_fn = "maia_pointwise_grid"
        elif self.is_reduction_kernel:
            sizes = (self._numel("x"), self._numel("r0_"))
            grid_fn = "maia_reduction_grid"
        else:
            sizes = (self._numel("x"), self.vector_range(self.vector_tree()).inner)
            grid_fn = "maia_pointwise_grid"
        if all(isinstance(size, (int, sympy.Integer)) for size in sizes):
            # static shapes: the grid is a constant of the wrapper
            from . import runtime

            grid = repr(getattr(runtime, grid_fn)(*(int(size) for size in sizes)))
        else:
            grid = f"{grid_fn}({', '.join(pexpr(size) for size in sizes)})"
        wrapper.writeline(f"{name}.run({grid}, {', '.join(args)})")


class _Arg(str):
    """A named SSA value that is not a CSE variable (arguments, loop variables)."""

    def __new__(cls, name: str, dtype, vec: bool = False):
        obj = super().__new__(cls, name)
        obj.mdtype = dtype
        obj.vec = vec
        obj.scope = "global"
        obj.name = name
        return obj


def _storage_dtype(dtype):
    return torch.int8 if dtype in (torch.bool,) else (
        torch.uint8 if dtype == torch.uint8 else dtype)


def _stride(index: sympy.Expr, symbol: sympy.Symbol):
    """The coefficient of symbol in index if index is affine in it, else None."""
    expanded = sympy.expand(index)
    coefficient = expanded.coeff(symbol)
    if symbol in (expanded - coefficient * symbol).free_symbols:
        return None
    return coefficient
