"""MaiaScheduling: Inductor's SIMD scheduling (vertical and horizontal fusion
of nodes over the same flattened ranges) with MaiaKernel as the code
generator. Each fused group becomes one MLIR kernel, compiled asynchronously.

Fusion policy: SIMDScheduling's, which fuses producers into consumers and
siblings that iterate the same (numel, reduction numel); a reduction fuses
its pointwise prologue and epilogue. The device has no block tiling to
choose: the iteration space stays one flat range (plus the reduction range),
and MaiaKernel splits it into rows by itself. GEMM templates and their
epilogues: GemmTemplateScheduling (gemm_template.py); convolution templates:
ConvTemplateScheduling (conv_template.py).
"""

from __future__ import annotations

import sympy
from torch._inductor import config
from torch._inductor.codegen.simd import SIMDScheduling
from torch._inductor.utils import get_fused_kernel_name, get_kernel_metadata
from torch._inductor.virtualized import V

from .conv_template import ConvTemplateScheduling
from .gemm_template import GemmTemplateScheduling
from .kernel import MaiaKernel

KERNEL_NAME_PLACEHOLDER = "MAIA_KERNEL_NAME"

# Called with (name, MLIR source) for every kernel defined (testing.py).
kernel_source_observers: list = []


class MaiaScheduling(ConvTemplateScheduling, GemmTemplateScheduling, SIMDScheduling):
    kernel_type = MaiaKernel  # type: ignore[assignment]

    def __init__(self, scheduler) -> None:
        super().__init__(scheduler)

    def codegen_node(self, node) -> None:
        # SIMDScheduling's, minus the memory-coalescing analysis that only
        # feeds Triton's block-tiling choice: maia has no tiling to choose
        # (get_tiling_and_scores ignores it), and the analysis asserts on
        # ranges it cannot split (max_pool3d with dynamic shapes).
        nodes = [n for n in node.get_nodes() if n.get_name() not in self.scheduler.removed_ops]
        if nodes:
            self._codegen_nodes(nodes, None)

    @classmethod
    def get_tiling_and_scores(cls, node_schedule, numel, reduction_numel=sympy.S.One,
                              coalesce_analysis=None):
        return cls.create_tiling([numel], [reduction_numel]), None

    def define_kernel(self, src_code: str, node_schedule, kernel) -> str:
        wrapper = V.graph.wrapper_code
        if src_code in wrapper.src_to_kernel:
            return wrapper.src_to_kernel[src_code]
        fused = get_fused_kernel_name(node_schedule, config.triton.descriptive_names)
        kind = getattr(kernel, "kernel_kind", None) or (
            "red" if kernel.is_reduction_kernel else "poi")
        name = f"maia_{kind}_{fused}_{wrapper.next_kernel_suffix()}"
        wrapper.src_to_kernel[src_code] = name
        mlir = src_code.replace(KERNEL_NAME_PLACEHOLDER, name)
        for observe in kernel_source_observers:
            observe(name, mlir)
        if V.graph.cpp_wrapper:
            wrapper.define_maia_kernel(name, mlir)
            return name
        origins, detailed_origins = get_kernel_metadata(node_schedule, wrapper)
        wrapper.header.writeline("")
        for line in (origins + "\n" + detailed_origins).splitlines():
            if line.strip():
                wrapper.header.writeline(line if line.startswith("#") else f"# {line}")
        wrapper.header.writeline(f"{name} = maia_async_compile.kernel({name!r}, '''")
        for line in mlir.splitlines():
            wrapper.header.writeline(line)
        wrapper.header.writeline("''')")
        return name
