"""MaiaGemmKernel: a GEMM template kernel, C = A @ B plus the fused epilogue,
as one MLIR kernel.

It is a pointwise MaiaKernel over C (x = row * N + column) whose rows are
exactly C's rows (`inner` = N), so the 2-D grid of pointwise kernels is a
grid over blocks of C's rows x chunks of its columns. Each program walks
its share of C in blocks of columns, and each column block in blocks of
rows; per block it calls the micro-kernel (runtime/kernels/ukernels),
which writes that block of C, then runs the epilogue nodes' code over the
same block, reading C back from cache:

    for cb in columns step (~block_cols): for rb in rows step (~block_rows):
      maia_ukernel_gemm_<T>(A, B, C, rows rb.., columns cb.., reuse_b=rb>start)
      for row in block: for lanes in block: <epilogue>   (MaiaKernel's loops)

The micro-kernel packs the column block's panel of B (all of K) at the
first row block and reuses it for the others, as the eager GEMM packs B
once per program. A batched product (bmm) has rows over all batches
(batch * M + row); a program walks its rows batch by batch around the
same loops, the operands at the batch's offsets.

C is the template's buffer (it stays allocated: it is the accumulator the
epilogue reads); the epilogue's outputs are ordinary stores.
"""

from __future__ import annotations

import sympy
from torch._inductor.codegen.common import IndentedBuffer
from torch._inductor.virtualized import V

from . import mlir_types as mt
from .gemm_configs import DEFAULT, GemmConfig
from .gemm_grid import TILE_COLS, TILE_ROWS, maia_gemm_grid
from .kernel import MaiaKernel, pexpr

UKERNEL_ARG_TYPES = ("memref<?x{t}>, index, index, index, " * 3
                     + "index, index, index, index, index, index")


class MaiaGemmKernel(MaiaKernel):
    kernel_kind = "gemm"

    def __init__(self, tiling, gemm, config: GemmConfig = DEFAULT, **kwargs) -> None:
        super().__init__(tiling, **kwargs)
        self.gemm = gemm
        self.config = config
        # C is an output of the kernel even when no epilogue reads it; named
        # first so that epilogue loads of it find the same argument.
        self.args.output(gemm.get_name())

    # --------------------------------------------------------------- shape
    def _mnk(self):
        a, b = self.gemm.operands()
        m, k = a.get_size()[-2:]
        n = b.get_size()[-1]
        return m, n, k

    def _batch(self):
        return self.gemm.get_size()[0] if self.gemm.batched else sympy.S.One

    def vector_range(self, tree):
        """Rows of x are rows of C: the row split also divides by N."""
        fresh = tree.prefix not in self.vector_ranges
        vrange = super().vector_range(tree)
        if fresh and tree.prefix == "x":
            n = self._mnk()[1]
            vrange.inner = V.graph.sizevars.simplify(sympy.gcd(vrange.inner, n))
        return vrange

    def rows_follow_product(self) -> bool:
        inner = self.vector_range(self.vector_tree()).inner
        return V.graph.sizevars.statically_known_equals(inner, self._mnk()[1])

    # ---------------------------------------------------------------- code
    def codegen_kernel(self, name: str | None = None) -> str:
        from .scheduling import KERNEL_NAME_PLACEHOLDER

        self.codegen_body()
        header = IndentedBuffer()
        self._grid_header(header)
        call = self._ukernel_call(header)  # may add size arguments
        args = self.kernel_arguments()
        name = name or KERNEL_NAME_PLACEHOLDER
        code = IndentedBuffer()
        code.writeline(f"func.func private @{self._ukernel()}({self._ukernel_types()})")
        for function, function_type in sorted(self.libm_functions.items()):
            code.writeline(f"func.func private @{function}{function_type}")
        # Constants land in the prologue: emit every one before it is spliced.
        loop = IndentedBuffer()
        cols_step = self._block_step(loop, "cb", "%x_chunk_start", "%x_chunk_stop",
                                     self._column_block(loop), TILE_COLS)
        if not self.gemm.batched:
            self._emit_column_and_row_blocks(loop, call, cols_step, "%x_row_start",
                                             "%x_row_stop", "%rb")
        else:
            self._emit_batches(loop, call, cols_step)
        signature = ", ".join(f"{ssa}: {ty}" for ssa, ty, _ in args)
        code.writeline(f"func.func @{name}({signature}) attributes "
                       "{maia.kernel, maia.grid_rank = 2} {")
        with code.indent():
            code.splice(self.prologue)
            code.splice(header)
            code.splice(loop)
            code.writeline("return")
        code.writeline("}")
        return code.getvalue()

    def _emit_column_and_row_blocks(self, loop, call, cols_step, row_start, row_stop,
                                    ukernel_row) -> None:
        """The blocks of C in [row_start, row_stop) x the program's columns:
        per block the micro-kernel call, then the epilogue on the block.
        Columns outside, rows inside: the rows of one column block read the
        same panel of B, which the micro-kernel packs at the first row block
        and reuses after (reuse_b = rb - row_start, nonzero after)."""
        rows_step = self._block_step(loop, "rb", row_start, row_stop,
                                     self.index_constant(self.config.block_rows), TILE_ROWS)
        loop.writeline(f"scf.for %cb = %x_chunk_start to %x_chunk_stop step {cols_step} {{")
        with loop.indent():
            loop.writeline(f"%cb_next = arith.addi %cb, {cols_step} : index")
            loop.writeline("%cb_stop = arith.minsi %cb_next, %x_chunk_stop : index")
            loop.writeline("%cb_cols = arith.subi %cb_stop, %cb : index")
            loop.writeline(f"scf.for %rb = {row_start} to {row_stop} step {rows_step} {{")
            with loop.indent():
                loop.writeline(f"%rb_next = arith.addi %rb, {rows_step} : index")
                loop.writeline(f"%rb_stop = arith.minsi %rb_next, {row_stop} : index")
                loop.writeline("%rb_rows = arith.subi %rb_stop, %rb : index")
                loop.writeline(f"%reuse_b = arith.subi %rb, {row_start} : index")
                if ukernel_row != "%rb":
                    loop.writeline(f"{ukernel_row} = arith.subi %rb, %bt_row0 : index")
                loop.writeline(call)
                if str(self.body).strip():
                    self._loop_header(loop, "%cb", "%cb_stop", "%rb", "%rb_stop")
                    loop.splice(self.body)
                    self._loop_footer(loop)
            loop.writeline("}")
        loop.writeline("}")

    def _emit_batches(self, loop, call, cols_step) -> None:
        """bmm: x's rows are C's rows over all batches (batch * M + row), so
        a program's rows may span several batches; it walks them batch by
        batch, its blocks never straddling two, each batch's operands at
        their batch offset (%bt_off_a/b/c, used by the call)."""
        m = self._batch_stride_values.pop("m")
        one = self.index_constant(1)
        loop.writeline(f"%bt_first = arith.divsi %x_row_start, {m} : index")
        loop.writeline(f"%bt_last = arith.ceildivsi %x_row_stop, {m} : index")
        loop.writeline(f"scf.for %bt = %bt_first to %bt_last step {one} {{")
        with loop.indent():
            loop.writeline(f"%bt_row0 = arith.muli %bt, {m} : index")
            loop.writeline(f"%bt_row_end = arith.addi %bt_row0, {m} : index")
            loop.writeline("%bt_start = arith.maxsi %x_row_start, %bt_row0 : index")
            loop.writeline("%bt_stop = arith.minsi %x_row_stop, %bt_row_end : index")
            for operand, (offset, batch_stride) in self._batch_stride_values.items():
                loop.writeline(f"%bt_step_{operand} = arith.muli %bt, {batch_stride} : index")
                loop.writeline(f"%bt_off_{operand} = arith.addi {offset}, %bt_step_{operand} "
                               ": index")
            self._emit_column_and_row_blocks(loop, call, cols_step, "%bt_start", "%bt_stop",
                                             "%rb_local")
        loop.writeline("}")

    def _column_block(self, code):
        """At most this many columns per block: the packed panel of B (depth
        x columns, all of K) stays within `packed_b_floats` (L3), between
        TILE_COLS * 4 and `block_cols` columns."""
        emitter = self._emitter(code, lambda: None)
        depth = emitter.emit(self._renamed(sympy.sympify(self._mnk()[2])))
        one = self.index_constant(1)
        budget = self.index_constant(self.config.packed_b_floats)
        least = self.index_constant(4 * TILE_COLS)
        most = self.index_constant(self.config.block_cols)
        code.writeline(f"%cb_depth = arith.maxsi {depth}, {one} : index")
        code.writeline(f"%cb_fit = arith.divsi {budget}, %cb_depth : index")
        code.writeline(f"%cb_fit_low = arith.maxsi %cb_fit, {least} : index")
        code.writeline(f"%cb_most = arith.minsi %cb_fit_low, {most} : index")
        return "%cb_most"

    def _block_step(self, code, name, start, stop, most, unit):
        """The step of a loop over [start, stop) in near-equal blocks of at
        most `most` (when the range allows), rounded up to whole register
        tiles of `unit`: a 256-row share is one block, not 252 + 4 rows."""
        one = self.index_constant(1)
        most_c, unit_c = most, self.index_constant(unit)
        code.writeline(f"%{name}_span = arith.subi {stop}, {start} : index")
        code.writeline(f"%{name}_count0 = arith.ceildivsi %{name}_span, {most_c} : index")
        code.writeline(f"%{name}_count = arith.maxsi %{name}_count0, {one} : index")
        code.writeline(f"%{name}_even = arith.ceildivsi %{name}_span, %{name}_count : index")
        code.writeline(f"%{name}_tiles0 = arith.ceildivsi %{name}_even, {unit_c} : index")
        code.writeline(f"%{name}_tiles = arith.maxsi %{name}_tiles0, {one} : index")
        code.writeline(f"%{name}_step = arith.muli %{name}_tiles, {unit_c} : index")
        return f"%{name}_step"

    def _ukernel(self) -> str:
        return f"maia_ukernel_gemm_{mt.memory_type(self.gemm.get_dtype())}"

    def _ukernel_types(self) -> str:
        return UKERNEL_ARG_TYPES.format(t=mt.memory_type(self.gemm.get_dtype()))

    def _ukernel_call(self, header) -> str:
        """The call computing this block of C; its index operands are
        emitted into header."""
        emitter = self._emitter(header, lambda: None)

        def value(expr):
            return str(emitter.emit(self._renamed(sympy.sympify(expr))))

        a, b = self.gemm.operands()
        batched = self.gemm.batched
        # bmm: offsets per batch, computed in the batch loop (_emit_batches).
        self._batch_stride_values = {"m": value(self._mnk()[0])} if batched else {}
        operands = []
        for operand, buffer, is_output in (("a", a, False), ("b", b, False),
                                           ("c", self.gemm, True)):
            layout = buffer.get_layout()
            name = buffer.get_name()
            arg = self.args.output(name) if is_output else self.args.input(name)
            offset = value(layout.offset)
            if batched:
                self._batch_stride_values[operand] = (offset, value(layout.stride[0]))
                offset = f"%bt_off_{operand}"
            operands += [f"%{arg}", offset, value(layout.stride[-2]), value(layout.stride[-1])]
        depth = value(self._mnk()[2])
        row = "%rb_local" if batched else "%rb"
        operands += [depth, row, "%rb_rows", "%cb", "%cb_cols", "%reuse_b"]
        return (f"func.call @{self._ukernel()}({', '.join(operands)}) : "
                f"({self._ukernel_types()}) -> ()")

    # -------------------------------------------------------------- launch
    def grid_sizes(self):
        """(M over all batches, N, K): what maia_gemm_grid takes."""
        m, n, k = self._mnk()
        return V.graph.sizevars.simplify(self._batch() * m), n, k

    def call_kernel(self, name: str, node=None, deallocate_ws: bool = True) -> None:
        wrapper = V.graph.wrapper_code
        for symbol in self.args.sizevars:
            wrapper.ensure_size_computed(symbol)
        args = [str(outer) for _, _, outer in self.kernel_arguments()]
        mnk = self.grid_sizes()
        device = self.gemm.get_device().index or 0
        split = self.config.split
        if all(isinstance(size, (int, sympy.Integer)) for size in mnk):
            grid = repr(maia_gemm_grid(*(int(size) for size in mnk), device, split))
        else:
            wrapper.add_import_once("from maia_inductor.gemm_grid import maia_gemm_grid")
            grid = (f"maia_gemm_grid({', '.join(pexpr(size) for size in mnk)}, {device}, "
                    f"{split!r})")
        wrapper.writeline(f"{name}.run({grid}, {', '.join(args)})")
