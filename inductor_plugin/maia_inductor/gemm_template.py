"""GEMM template kernels: mm/addmm (and so nn.Linear) and bmm/baddbmm in
compiled maia graphs become one MLIR kernel that calls the GEMM
micro-kernel for each block of C and runs the pointwise epilogue Inductor fuses into it (bias, activation,
residual add, dtype cast) on that block while it is in cache.

How a product gets here (docs/inductor.md, "GEMM templates"):
1. The post-grad pass (graph_passes.py) retargets `aten.mm` (`aten.bmm`)
   on maia to `maia_gemm.mm` (`maia_gemm.bmm`, same schema) and splits
   `aten.addmm` (`aten.baddbmm`) into the product plus a pointwise add of
   the bias, which Inductor then fuses back as the epilogue. Inductor's own mm lowering (`tuned_mm`) offers a device only
   the extern kernel and the Triton/CUTLASS/C++ templates of in-tree
   devices; a lowering for our own operator is the registry way to offer
   another, and touches nothing of other devices.
2. The lowering of `maia_gemm.mm`/`bmm` builds a `MaiaGemmBuffer`, an
   `ir.TemplateBuffer`, so the scheduler offers its consumers as epilogues.
3. `GemmTemplateScheduling` (a base of MaiaScheduling) generates the
   kernel (gemm_kernel.py) of the product and the pointwise epilogue nodes
   the scheduler fused into it.
"""

from __future__ import annotations

import functools

import torch
from torch._inductor import config as inductor_config
from torch._inductor.ir import TemplateBuffer, TensorBox
from torch._inductor.codegen.simd_kernel_features import SIMDKernelFeatures
from torch._inductor.kernel.mm_common import mm_args
from torch._inductor.lowering import register_lowering
from torch._inductor.virtualized import V

from . import gemm_autotune
from .gemm_configs import EXTERN
from .template_graph import fake_value, has_pointwise_consumer, replace_node, template_buffer_of

LIBRARY = "maia_gemm"
# Element types the micro-kernels exist for (runtime/kernels/ukernels).
SUPPORTED_DTYPES = (torch.float32, torch.bfloat16, torch.float16)

aten = torch.ops.aten


@functools.lru_cache(None)
def gemm_ops():
    """The maia_gemm operators (defined on first call): what the post-grad
    pass retargets products to. Eagerly, and under fake tensors, they are
    the aten operators."""
    library = torch.library.Library(LIBRARY, "DEF")
    for name, aten_op in (("mm", aten.mm), ("bmm", aten.bmm)):
        library.define(f"{name}(Tensor self, Tensor mat2) -> Tensor")
        library.impl(name, aten_op.default, "CompositeExplicitAutograd")
        torch.library.register_fake(f"{LIBRARY}::{name}", aten_op.default, lib=library)
        register_lowering(getattr(torch.ops.maia_gemm, name).default,
                          type_promotion_kind=None)(_lower_product)
    gemm_ops.library = library  # keeps the definitions alive
    return torch.ops.maia_gemm


class MaiaGemmBuffer(TemplateBuffer):
    """C = A @ B, written by a template kernel (gemm_kernel.py); inputs
    [A, B], 2-D (mm) or 3-D with a leading batch dimension (bmm), any
    strides (views of weights, transposes). The kernel, not a renderer,
    generates the code, with the tile configuration chosen when the
    epilogue is known (codegen_template): make_kernel_render stays None."""

    def __init__(self, layout, inputs) -> None:
        super().__init__(layout, inputs, make_kernel_render=None)

    def operands(self):
        """(A, B) as buffers or reinterpreted views with their layouts."""
        return self.inputs[0], self.inputs[1]

    @property
    def batched(self) -> bool:
        return len(self.get_size()) == 3

    def extern_op(self) -> str:
        """The eager kernel computing the same product (extern_kernels.<op>)."""
        return "bmm" if self.batched else "mm"


def _lower_product(mat1, mat2):
    # C is contiguous ([B,] M, N): the kernel's rows of x are C's rows.
    m, n, k, layout, mat1, mat2 = mm_args(mat1, mat2)
    return TensorBox.create(MaiaGemmBuffer(layout, [mat1, mat2]))


# --------------------------------------------------------------- post-grad
def _templatable(*operands, rank: int = 2) -> bool:
    """Both operands are maia tensors of the given rank (2: mm, 3: bmm) and
    of a dtype the micro-kernels have."""
    values = [fake_value(x) for x in operands]
    return all(v is not None and v.device.type == "maia" and v.dim() == rank
               and v.dtype in SUPPORTED_DTYPES and v.dtype == values[0].dtype
               for v in values)


def use_gemm_templates(graph: torch.fx.Graph) -> None:
    """mm -> maia_gemm.mm and bmm -> maia_gemm.bmm; a float32 addmm (baddbmm)
    with a pointwise consumer -> maia_gemm.mm (bmm) + the bias as a
    pointwise epilogue (the consumer joins it). The C++ wrapper (cpp_wrapper,
    AOTInductor) keeps the extern kernels: its launcher knows only the
    pointwise and reduction grids."""
    from . import config

    if (not config.gemm_templates or inductor_config.cpp_wrapper
            or inductor_config.aot_inductor.output_path):
        return
    ops = gemm_ops()
    for node in list(graph.nodes):
        if node.op != "call_function":
            continue
        if node.target is aten.mm.default and _templatable(*node.args[:2]):
            node.target = ops.mm.default
        elif node.target is aten.bmm.default and _templatable(*node.args[:2], rank=3):
            node.target = ops.bmm.default
        elif (node.target is aten.addmm.default and _templatable(*node.args[1:3])
              and _splits_exactly(node) and has_pointwise_consumer(node)):
            _split_biased_product(graph, node, ops.mm.default)
        elif (node.target is aten.baddbmm.default and _templatable(*node.args[1:3], rank=3)
              and _splits_exactly(node) and has_pointwise_consumer(node)):
            _split_biased_product(graph, node, ops.bmm.default)


def _splits_exactly(node: torch.fx.Node) -> bool:
    """Whether a product plus an epilogue bias rounds like the eager kernel:
    in float32 (to within an ulp of float32). A float16/bfloat16 product's
    C is rounded to 16 bits before the epilogue adds the bias, and rounded
    again (814-892 of 6144 elements of a bf16 linear + relu 1 ulp off the
    correctly rounded value); the eager kernel (the extern addmm) adds the
    bias to its float32 accumulator and rounds once, and measured no slower
    than the template with the epilogue fused (bf16 linear + gelu, 64x1024
    @ 1024x1024 and 512x768 @ 768x3072: 0.95-0.99x its time)."""
    return fake_value(node).dtype == torch.float32


def _split_biased_product(graph: torch.fx.Graph, node: torch.fx.Node, product) -> None:
    """addmm/baddbmm(bias, mat1, mat2, beta, alpha) -> alpha * product(mat1,
    mat2) + beta * bias."""
    bias, mat1, mat2 = node.args[:3]
    beta = node.kwargs.get("beta", 1)
    alpha = node.kwargs.get("alpha", 1)
    value = node.meta["val"]
    with graph.inserting_before(node):
        result = graph.call_function(product, (mat1, mat2))
        result.meta["val"] = value
        if alpha != 1:
            result = graph.call_function(aten.mul.Tensor, (result, alpha))
            result.meta["val"] = value
        if beta != 0:  # beta == 0 ignores the bias, NaN included (as BLAS)
            if beta != 1:
                bias = graph.call_function(aten.mul.Tensor, (bias, beta))
                bias.meta["val"] = fake_value(node.args[0]) * beta
            result = graph.call_function(aten.add.Tensor, (result, bias))
            result.meta["val"] = value
    replace_node(graph, node, result)


# -------------------------------------------------------------- scheduling
def _gemm_of(node):
    return template_buffer_of(node, MaiaGemmBuffer)


class GemmTemplateScheduling:
    """Mixin of MaiaScheduling: epilogue fusion into GEMM templates and
    their code generation."""

    # Which epilogues fuse: Inductor's rules for templates (pointwise, same
    # numel, no mutation) and for any vertical fusion (a consumer reads the
    # product at the index it was written at). That is what the kernel
    # needs: a program holds only its own block of C, so an epilogue must
    # read C where its own iteration is, and may store anywhere. A pointwise
    # node that feeds only a reduction (linear -> gelu -> layer_norm) goes
    # to the reduction as its prologue instead, by Inductor's own choice
    # (tested).

    def codegen_template(self, template_node, epilogue_nodes, prologue_nodes, *,
                         only_gen_src_code=False, hint_override=None):
        if _gemm_of(template_node) is None or prologue_nodes or only_gen_src_code:
            raise NotImplementedError(
                f"maia: cannot generate template {template_node.get_name()} "
                f"(prologues: {len(prologue_nodes)}, source only: {only_gen_src_code})")
        epilogue = [n for n in epilogue_nodes
                    if n.get_name() not in self.scheduler.removed_ops]
        choice = gemm_autotune.choose(self, template_node, epilogue)
        if choice != EXTERN:
            kernel = self._gemm_kernel(template_node, epilogue, choice)
            if kernel.rows_follow_product():
                self._emit_gemm_kernel(kernel, [template_node, *epilogue])
                return None
        # The extern product (nothing fused, or what autotuning chose), or
        # the fused nodes split C's rows differently (rare: a view that
        # cuts a row): the product alone, then the epilogue as a kernel of
        # its own (which frees the buffers these nodes used last).
        self._extern_product(template_node)
        if epilogue:
            self._codegen_nodes(epilogue, None)
        return None

    def _extern_product(self, template_node) -> None:
        """A product with nothing fused into it is the eager GEMM kernel's
        call, as without templates: the template could only add packing
        (each block repacks its panels)."""
        gemm = _gemm_of(template_node)
        wrapper = V.graph.wrapper_code
        template_node.mark_run()
        a, b = (operand.codegen_reference() for operand in gemm.operands())
        wrapper.writeline(f"extern_kernels.{gemm.extern_op()}({a}, {b}, out={gemm.get_name()})")

    def _gemm_kernel(self, template_node, epilogue, config):
        """The template kernel of the product and its epilogue with the tile
        configuration config (gemm_configs.py), its body generated."""
        from .gemm_kernel import MaiaGemmKernel

        _, (numel, rnumel) = template_node.group
        node_schedule = self.generate_node_schedule(epilogue, numel, rnumel)
        kernel = MaiaGemmKernel(self.create_tiling([numel], [rnumel]),
                                gemm=_gemm_of(template_node), config=config,
                                features=SIMDKernelFeatures(node_schedule, numel, rnumel))
        self.codegen_node_schedule_with_kernel(node_schedule, kernel)
        return kernel

    def _emit_gemm_kernel(self, kernel, nodes) -> None:
        with V.set_kernel_handler(kernel):
            source = kernel.codegen_kernel()
        kernel.kernel_name = self.define_kernel(source, nodes, kernel)
        with V.set_kernel_handler(kernel):
            for node in nodes:
                node.mark_run()
        self._launch_kernel_and_cleanup(kernel, nodes)
