"""Where the lanes of a MaiaKernel are: the row split of the vectorized
range, index expressions as (uniform base, lane stride), and the access kind
(contiguous, broadcast, gather) each load and store gets from it."""

from __future__ import annotations

import sympy
from torch._inductor.utils import sympy_index_symbol
from torch._inductor.virtualized import V
from torch.utils._sympy.functions import FloorDiv, ModularIndexing

from . import mlir_types as mt
from .index_emitter import IndexEmitter
from .mlir_types import VL
from .values import _Arg

LANE = sympy.Symbol("maia_lane", integer=True, nonnegative=True)
LANE_START = sympy.Symbol("maia_lane_start", integer=True, nonnegative=True)
ROW = sympy.Symbol("maia_row", integer=True, nonnegative=True)


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
            return ModularIndexing(ROW, 1, sympy.cancel(length / self.inner)) * self.inner, 1
        if divisor != 1 and self.divides(divisor):
            step = sympy.simplify(divisor / self.inner)
            if isinstance(entry.expr, FloorDiv):
                return FloorDiv(ROW, step), 0
            return ModularIndexing(ROW, step, length), 0
        return None


class LaneIndexing:
    """Mixin of MaiaKernel: index expressions for the current lanes."""

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
            # sympy's gcd of polynomials has a positive leading coefficient:
            # gcd(6 - s0, 36 - 6*s0) is s0 - 6, negative for every valid s0.
            if V.graph.sizevars.optimization_hint(inner, fallback=1) < 0:
                inner = -inner
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
            iota = self._iota_vector()
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
        values = self.cse.varname_map
        if any(values[s.name].vec for s in index.free_symbols if s.name in values):
            return None  # indirect through per-lane values
        lanes = sympy.expand(self._lane_substituted(index))
        stride = _stride(lanes, LANE)
        if stride is None or LANE in stride.free_symbols:
            return None
        return sympy.expand(lanes - stride * LANE), stride

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
            return "scalar", self.emit_index(index, buffer), None
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
        return "gather", self.index_constant(0), self.broadcast(self.emit_index(index, buffer),
                                                                  buffer)

    def _iota_vector(self):
        return self.emit(self.prologue, "arith.constant dense<[" + ", ".join(
            str(i) for i in range(VL)) + f"]> : {mt.index_type(True)}", "index", True)


def _stride(index: sympy.Expr, symbol: sympy.Symbol):
    """The coefficient of symbol in index if index is affine in it, else None."""
    expanded = sympy.expand(index)
    coefficient = expanded.coeff(symbol)
    if symbol in (expanded - coefficient * symbol).free_symbols:
        return None
    return coefficient
