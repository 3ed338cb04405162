"""MaiaWrapperCodegen: the Python wrapper of a compiled graph on maia.

It is PythonWrapperCodegen plus: the runtime imports (asynchronous kernel
compilation, launch grids), a wait for the kernels before the graph first
runs, and kernel calls that launch through the runtime's C++ launcher on the
current maia stream. Buffers come from the maia caching allocator through
empty_strided.
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
