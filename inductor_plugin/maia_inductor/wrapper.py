"""MaiaWrapperCodegen: the Python wrapper of a compiled graph on maia.

It is PythonWrapperCodegen plus: the runtime imports (asynchronous kernel
compilation, launch grids), a wait for the kernels before the graph first
runs, and kernel calls that launch through the runtime's C++ launcher on the
current maia stream. Buffers come from the maia caching allocator through
empty_strided. Under mode="reduce-overhead" the module's `call` is wrapped to
replay maia graphs (graph_capture.py, graphs.py).
"""

from __future__ import annotations

from torch._inductor.codegen.wrapper import (
    PythonWrapperCodegen,
    SubgraphPythonWrapperCodegen,
)


class _MaiaWrapperMixin:
    def write_header(self) -> None:
        super().write_header()
        self.imports.splice(
            """
                from maia_inductor.runtime import (
                    MaiaAsyncCompile,
                    maia_pointwise_grid,
                    maia_reduction_grid,
                )
            """,
            strip=True,
        )
        self.header.writeline("maia_async_compile = MaiaAsyncCompile()")
        self.header.writeline("from torch_maia._C import _empty_strided as empty_strided_maia")

    def make_allocation(self, name, device, dtype, shape, stride, allocation_shape=None,
                        is_pinned=False):
        if device.type != "maia":
            return super().make_allocation(name, device, dtype, shape, stride,
                                           allocation_shape, is_pinned)
        # On the buffer's own maia device (the generic path would use the
        # current one), without Python argument parsing.
        allocation_shape = shape if allocation_shape is None else allocation_shape
        shape_tuple = self.codegen_python_shape_tuple(shape)
        allocation_tuple = self.codegen_python_shape_tuple(allocation_shape)
        stride_tuple = self.codegen_python_shape_tuple(stride)
        index = 0 if device.index is None else device.index
        line = f"{name} = empty_strided_maia({allocation_tuple}, {stride_tuple}, {dtype}, {index})"
        if shape_tuple != allocation_tuple:
            line += f".as_strided({shape_tuple}, {stride_tuple})"
        return line

    def write_async_compile_wait(self) -> None:
        super().write_async_compile_wait()
        self.prefix.writeline("maia_async_compile.wait(globals())")

    def _generate_kernel_call_helper(self, kernel_name, call_args, *, device=None, triton=True,
                                     **kwargs):
        if device is not None and device.type == "maia" and not triton:
            self.writeline(self.wrap_kernel_call(kernel_name, call_args))
            return
        return super()._generate_kernel_call_helper(kernel_name, call_args, device=device,
                                                    triton=triton, **kwargs)


class MaiaWrapperCodegen(_MaiaWrapperMixin, PythonWrapperCodegen):
    def generate_end(self, result) -> None:
        super().generate_end(result)
        from .graph_capture import graphed_call_lines

        lines = graphed_call_lines()
        if lines:
            result.splice(lines)

    @staticmethod
    def create(is_subgraph: bool, subgraph_name, parent_wrapper, partition_signatures=None):
        if is_subgraph:
            return MaiaSubgraphWrapperCodegen(subgraph_name, parent_wrapper, partition_signatures)
        return MaiaWrapperCodegen()


class MaiaSubgraphWrapperCodegen(_MaiaWrapperMixin, SubgraphPythonWrapperCodegen):
    def write_header(self) -> None:
        SubgraphPythonWrapperCodegen.write_header(self)

    def write_async_compile_wait(self) -> None:
        SubgraphPythonWrapperCodegen.write_async_compile_wait(self)
