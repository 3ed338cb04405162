"""Loads and stores of a MaiaKernel: masked vector accesses, gathers and
scatters, scalar accesses, atomic accumulation, bounds checks, and the
conversions between storage and compute types."""

from __future__ import annotations

import contextlib

import sympy
import torch
from torch._inductor.codegen.common import DeferredLine
from torch._inductor.virtualized import V
from torch.utils._sympy.value_ranges import ValueRanges

from . import mlir_types as mt
from .mlir_types import VL
from .values import MaiaCSEVariable


class MemoryAccess:
    """Mixin of MaiaKernel: ops.load/store/store_reduction and their masks."""

    def memref_type(self, name: str) -> str:
        return f"memref<?x{mt.memory_type(V.graph.get_dtype(name))}>"

    def current_mask(self, buffer):
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
        other = mt.masked_fill(self._load_other if self._load_other is not None else 0, dtype)
        if kind == "scalar" or kind == "broadcast":
            # One address for all lanes: under a per-lane mask (padding),
            # read it only if some lane needs it, else it may lie outside
            # the buffer.
            guard = self._load_mask
            if guard is not None and guard.vec:
                guard = self.emit(buffer, f"vector.reduction <or>, {self.current_mask(buffer)} : "
                                  f"{self.mlir_type(torch.bool, True)} into i1", torch.bool, False)
            raw = self._scalar_load(buffer, var, base, mem_ty, elem, dtype, guard, other)
            # Uniform across the lanes: stays scalar until an op needs lanes
            # (and as an index, keeps indirect accesses contiguous).
            return self._to_compute(raw, dtype, buffer)
        mask = self.current_mask(buffer)
        vty = f"vector<{VL}x{elem}>"
        mask_ty = self.mlir_type(torch.bool, True)
        passthru = self.constant(other if dtype != torch.bool else int(bool(other)),
                                 torch.int8 if dtype == torch.uint8 else mt.storage_dtype(dtype),
                                 True)
        if kind == "contiguous":
            text = (f"vector.maskedload {var}[{base}], {mask}, {passthru} : {mem_ty}, "
                    f"{mask_ty}, {vty} into {vty}")
        else:
            text = (f"vector.gather {var}[{base}][{offsets}], {mask}, {passthru} : {mem_ty}, "
                    f"{mt.index_type(True)}, {mask_ty}, {vty} into {vty}")
        raw = self.emit(buffer, text, mt.storage_dtype(dtype), True)
        return self._to_compute(raw, dtype, buffer)

    def _scalar_load(self, buffer, var, index, mem_ty, elem, dtype, mask, other):
        load = f"memref.load {var}[{index}] : {mem_ty}"
        if mask is None:
            return self.emit(buffer, load, mt.storage_dtype(dtype), False)
        # A masked scalar load must not touch memory when the mask is off.
        other_value = self.constant(other, mt.storage_dtype(dtype))
        result = self.typed_newvar(buffer, mt.storage_dtype(dtype), False)
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
            stored = mt.storage_dtype(dtype)
            zero = self.constant(0, stored, raw.vec)
            return self.emit(buffer, f"arith.cmpi ne, {raw}, {zero} : "
                             f"{self.mlir_type(stored, raw.vec)}", torch.bool, raw.vec)
        if dtype in (torch.float16, torch.bfloat16):
            return self.emit(buffer, f"arith.extf {raw} : {self.mlir_type(dtype, raw.vec)} to "
                             f"{self.mlir_type(torch.float32, raw.vec)}", torch.float32, raw.vec)
        return raw  # uint8 is stored as i8; the value keeps uint8 semantics

    def to_storage(self, value, dtype, buffer):
        if dtype == torch.bool:
            value = self.convert(value, torch.bool, buffer)
            stored = mt.storage_dtype(dtype)
            return self.emit(buffer, f"arith.extui {value} : {self.mlir_type(torch.bool, value.vec)}"
                             f" to {self.mlir_type(stored, value.vec)}", stored, value.vec)
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
        stored = self.to_storage(value, dtype, buffer)
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
            mask = self.current_mask(buffer)
            vty = f"vector<{VL}x{elem}>"
            mask_ty = self.mlir_type(torch.bool, True)
            if kind == "contiguous":
                line = f"vector.maskedstore {var}[{base}], {mask}, {stored} : {mem_ty}, {mask_ty}, {vty}"
                if self._streams_stores(name, mask):
                    self._store_streaming(buffer, name, var, base, stored, mem_ty, vty, line)
                    return
            else:
                if kind == "broadcast":
                    offsets = self.broadcast(self.index_constant(0), buffer)
                line = (f"vector.scatter {var}[{base}][{offsets}], {mask}, {stored} : {mem_ty}, "
                        f"{mt.index_type(True)}, {mask_ty}, {vty}")
        buffer.writeline(DeferredLine(name, line))

    def _streams_stores(self, name, mask) -> bool:
        """Whether the contiguous vector stores to buffer `name` are
        streaming (non-temporal) stores: in pointwise kernels, under no mask
        but the row's tail, when the buffer is too large to stay in cache for
        its reader (config.streaming_store_min_bytes; static shapes only)."""
        from . import config

        if self.is_reduction_kernel or mask is not self.lane_mask:
            return False
        try:
            numel = V.graph.get_numel(name)
        except KeyError:  # a name the graph does not size (a view's): ordinary stores
            return False
        if not isinstance(numel, (int, sympy.Integer)):
            return False  # dynamic shape: ordinary stores
        return int(numel) * V.graph.get_dtype(name).itemsize >= config.streaming_store_min_bytes

    def _store_streaming(self, buffer, name, var, base, stored, mem_ty, vty, masked_line):
        """A whole vector is stored with vector.store {nontemporal = true}
        (maia-compile makes it an aligned streaming store when the address
        allows), the row's masked tail with the masked store."""
        n = next(self._slot_ids)
        full = f"%whole{n}"
        lines = [
            f"{full} = arith.cmpi sge, {self.lanes_left}, {self.index_constant(VL)} : index",
            f"scf.if {full} {{",
            f"  vector.store {stored}, {var}[{base}] {{nontemporal = true}} : {mem_ty}, {vty}",
            "} else {",
            f"  {masked_line}",
            "}",
        ]
        for line in lines:
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
        mask = self.current_mask(buffer)
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
        # After the loop: one scalar result per x, or one per lane when the
        # lanes walk x (outer reductions).
        with self._scalar_context():
            self._store_lanes(name, self.prepare_indexing(index), value, self.stores)

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
        self._trap_if(buffer, bad)

    def device_assert_async(self, cond, msg: str) -> None:
        """torch._assert_async / aten._assert_async.msg inside a kernel (and
        Inductor's own checks, e.g. one_hot's class range): a failed
        condition traps like an out-of-range index. The message cannot
        travel with a trap; the sticky error names the kernel."""
        buffer = self.compute
        bad = self.logical(buffer, "arith.xori", cond, self.bool_constant(True, cond.vec))
        self._trap_if(buffer, bad)

    def _trap_if(self, buffer, bad) -> None:
        """Traps the program if bad holds in any active lane."""
        if self._load_mask is not None:
            # Inside ops.masked (a pad, a masked gather): where the mask is
            # off, the loads feeding this check gave the masked value (a
            # pad's fill), not an index, and nothing reads through it.
            bad = self.logical(buffer, "arith.andi", bad, self._load_mask)
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

