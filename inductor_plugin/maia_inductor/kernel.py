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
  LLVM promotes to registers), then reduces across lanes. Outer reductions
  put the lanes on x instead.

The parts: values.py (typed values and conversions), lanes.py (indexing for
the lanes), memory.py (loads and stores), reductions.py; this file holds the
kernel's structure: segments (one loop per reduction), grid, signature, call.
"""

from __future__ import annotations

import itertools
from typing import Any

import sympy
import torch
from torch._inductor.codegen.common import IndentedBuffer, PythonPrinter
from torch._inductor.codegen.simd import SIMDKernel
from torch._inductor.virtualized import V
from torch.utils._ordered_set import OrderedSet

from . import mlir_types as mt
from .lanes import LANE, ROW, LaneIndexing, VectorRange
from .memory import MemoryAccess
from .mlir_types import VL
from .overrides import MaiaOverrides
from .values import MaiaCSE, MaiaCSEVariable, ValueEmitter, _Arg

pexpr = PythonPrinter().doprint


class MaiaKernel(ValueEmitter, LaneIndexing, MemoryAccess, SIMDKernel):
    overrides = MaiaOverrides  # type: ignore[assignment]
    newvar_prefix = ""
    suffix = ""
    kexpr = pexpr
    sexpr = pexpr

    def __init__(self, tiling: dict[str, sympy.Expr], **kwargs: Any) -> None:
        super().__init__(tiling, **kwargs)
        self.cse = MaiaCSE(self.newvar_prefix, self.suffix)
        self.prologue = IndentedBuffer()  # constants and accumulator slots
        self.libm_functions: dict[str, str] = {}  # name -> MLIR function type
        self.segment_init = IndentedBuffer()  # accumulator resets, before a loop
        self.vector_ranges: dict[str, VectorRange] = {}
        self._slot_ids = itertools.count()
        self._segment_ids = itertools.count()  # per kernel: equal groups, equal text
        self.segment = next(self._segment_ids)
        self._begin_vector_loop()  # names row_var, lane_start, lane_mask, r_var
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

    # -------------------------------------------------------------- reduction
    def reduction_position(self, buffer):
        """The linear index in the reduction range of what the lanes hold now."""
        if self.outer_reduction:
            return self.r_var
        vrange = self.vector_range(self.vector_tree())
        return self._emitter(buffer).emit(self._renamed(ROW * vrange.inner + LANE))

    # Per-lane accumulators of reductions (reductions.py): stack slots
    # allocated at kernel entry and reset before each reduction loop.
    def new_accumulator(self, dtype, vec=True):
        ty = self.mlir_type(dtype, vec)
        slot = f"%acc{next(self._slot_ids)}"
        self.prologue.writeline(f"{slot} = memref.alloca() : memref<{ty}>")
        return slot, ty

    def init_accumulator(self, slot, ty, value):
        self.segment_init.writeline(f"memref.store {value}, {slot}[] : memref<{ty}>")

    def load_accumulator(self, buffer, slot, ty, dtype, vec=True):
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
        computed after it (scope "x") stay in scope for the rest of this x."""
        keep = [v for v in self.cse.varname_map.values()
                if isinstance(v, MaiaCSEVariable) and v.scope != "loop"]
        for item in self.cse.reduction_cache.values():
            keep.extend(item if isinstance(item, tuple) else (item,))
        self.cse.invalidate(OrderedSet(keep))
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
        self.lanes_left = _Arg(f"%left{n}", "index")  # lanes from lane_start to the row's end
        self.lane_mask = _Arg(f"%mask{n}", torch.bool, vec=True)

    def _loop_header(self, code, start: str, stop: str, rows_start: str, rows_stop: str):
        n = self.segment
        c1, cvl = self.index_constant(1), self.index_constant(VL)
        code.writeline(f"scf.for {self.row_var} = {rows_start} to {rows_stop} step {c1} {{")
        code.do_indent()
        code.writeline(f"scf.for {self.lane_start} = {start} to {stop} step {cvl} {{")
        code.do_indent()
        code.writeline(f"{self.lanes_left} = arith.subi {stop}, {self.lane_start} : index")
        code.writeline(f"{self.lane_mask} = vector.create_mask {self.lanes_left} : "
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
        self._loop_header(self.body, c0, "%r_inner", c0, "%r_rows")
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
        for function, function_type in sorted(self.libm_functions.items()):
            code.writeline(f"func.func private @{function}{function_type}")
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
                self._loop_header(code, "%x_chunk_start", "%x_chunk_stop", "%x_row_start",
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
        # Values of the body do not dominate the header: the body is complete,
        # so nothing of its CSE state is needed any more.
        self.cse.invalidate(OrderedSet())
        emitter = self._emitter(code, lambda: None)
        lines = []

        def value(expr):
            return emitter.emit(self._renamed(sympy.sympify(expr)))

        xnumel = value(self._numel("x"))
        inner = value(self.vector_range(self.vector_tree()).inner)
        if not self.lanes_over_x:
            rnumel = value(self._numel("r0_"))
            lines += [
                "%pid = maia.program_id 0",
                "%nprog = maia.num_programs 0",
                f"%x_lo = arith.muli %pid, {xnumel} : index",
                "%x_start = arith.divsi %x_lo, %nprog : index",
                f"%pid_next = arith.addi %pid, {self.index_constant(1)} : index",
                f"%x_hi = arith.muli %pid_next, {xnumel} : index",
                "%x_stop = arith.divsi %x_hi, %nprog : index",
                f"%r_inner = arith.maxsi {inner}, {self.index_constant(1)} : index",
                f"%r_rows = arith.divsi {rnumel}, %r_inner : index",
            ]
        else:
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
                "%x_per = arith.ceildivsi %x_inner, %ncprog : index",
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
        if V.graph.cpp_wrapper:
            self._call_from_cpp(wrapper, name, sizes, grid_fn)
            return
        if all(isinstance(size, (int, sympy.Integer)) for size in sizes):
            # static shapes: the grid is a constant of the wrapper
            from . import runtime

            grid = repr(getattr(runtime, grid_fn)(*(int(size) for size in sizes)))
        else:
            grid = f"{grid_fn}({', '.join(pexpr(size) for size in sizes)})"
        wrapper.writeline(f"{name}.run({grid}, {', '.join(args)})")

    def _call_from_cpp(self, wrapper, name, sizes, grid_fn) -> None:
        """The C++ wrapper's launch: the shim computes the same grid."""
        from torch._inductor.codegen.common import TensorArg
        from torch._inductor.codegen.cpp_utils import cexpr

        arg_defs, call_args, signature, _ = self.args.python_argdefs()
        args = []
        for outer, arg in zip(call_args, signature):
            if isinstance(arg, TensorArg) and V.graph.is_unspec_arg(arg.buffer):
                raise NotImplementedError("maia cpp_wrapper: unspecialized scalar tensor "
                                          f"argument {outer} of {name}")
            if isinstance(arg, TensorArg):
                args.append(("tensor", str(outer)))
            else:
                args.append(("int", cexpr(V.graph.sizevars.simplify(sympy.sympify(outer)))))
        if grid_fn == "maia_pointwise_grid" and len(sizes) == 2:
            sizes = (*sizes, 1)
        grid_kind = 0 if grid_fn == "maia_pointwise_grid" else 1
        wrapper.write_maia_kernel_call(name, grid_kind, [cexpr(s) for s in sizes], args)
