"""Post-grad FX passes for graphs that run on maia.

Registered as the device's `device_custom_pass` (Inductor runs it on every
graph that touches a maia tensor, after its pattern passes and before its
reinplace pass).

Operators without an MLIR lowering (eager_fallbacks.py) are retargeted to
their eager twins, which Inductor calls as fallback kernels (they warn,
naming the operator, the first time they run). Matrix products become GEMM
templates (gemm_template.py: mm -> maia_gemm.mm, bmm -> maia_gemm.bmm,
addmm/baddbmm -> the product plus the bias as a pointwise epilogue),
convolutions convolution templates (conv_template.py); an indexed write
into an expanded or concatenated tensor gets a copy of it to write into
(Inductor's reinplace pass would write into the shared rows, or into the
concatenation); and float16/bfloat16
convolutions with a bias and scattered sums the eager kernel whole
(Inductor would round at every step, the eager kernel rounds once).

Why a full argmax/argmin needs a pass: Inductor reorders a reduction's loops
to follow memory order, so the position a reduction reports is the position
in storage order. Inductor asks the backend to compute the row-major position
instead only for Triton and its C++ CPU backend (lowering.py,
`supports_logical_index_argreduce`); every other backend answers the storage
position, e.g. for `x.t().argmax()`. Reducing the flattened input over its one
dimension has a single loop, whose position is the row-major one, and costs
no copy: Inductor lowers the reshape of a non-contiguous input to an indexing
expression.
"""

import torch
from torch._inductor.custom_graph_pass import CustomGraphModulePass, get_hash_for_files

from . import conv_template, eager_fallbacks, gemm_template
from .gemm_grid import _core_count
from .template_graph import fake_value, has_static_layout

aten = torch.ops.aten
_ARG_REDUCTIONS = (aten.argmax.default, aten.argmin.default)


def _on_maia(node: torch.fx.Node) -> bool:
    value = node.meta.get("val")
    return isinstance(value, torch.Tensor) and value.device.type == "maia"


def _full_arg_reductions(graph: torch.fx.Graph):
    for node in graph.nodes:
        if node.op != "call_function" or node.target not in _ARG_REDUCTIONS:
            continue
        source = node.args[0]
        dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
        if dim is None and _on_maia(source) and source.meta["val"].dim() > 1:
            yield node, source


def _with_value(node: torch.fx.Node, value) -> torch.fx.Node:
    node.meta["val"] = value
    return node


def flatten_full_arg_reductions(graph: torch.fx.Graph) -> None:
    """argmax/argmin over all dims of an N-d maia tensor (N > 1) becomes the
    same reduction over dim 0 of its flattened view."""
    for node, source in list(_full_arg_reductions(graph)):
        keepdim = node.args[2] if len(node.args) > 2 else node.kwargs.get("keepdim", False)
        fake = source.meta["val"]
        with graph.inserting_before(node):
            flat = _with_value(
                graph.call_function(aten.reshape.default, (source, [-1])),
                fake.reshape(-1))
            reduced = _with_value(
                graph.call_function(node.target, (flat, 0, False)),
                node.meta["val"].reshape(()))
            result = reduced
            if keepdim:
                result = _with_value(
                    graph.call_function(aten.reshape.default,
                                        (reduced, [1] * fake.dim())),
                    node.meta["val"])
        node.replace_all_uses_with(result)
        graph.erase_node(node)


def _biased_static(node: torch.fx.Node) -> bool:
    # Static shapes only: with symbolic sizes, the backward's
    # convolution_backward fallback, given the twin's output strides, hits
    # Inductor's ValueRangeError in require_stride_order (fuzzer --nn --grad
    # --float64, seed 219), which the upstream split avoids.
    return node.args[2] is not None and has_static_layout(node.meta["val"])


def _sums(node: torch.fx.Node) -> bool:
    # scatter_reduce.two(self, dim, index, src, reduce, *, include_self);
    # Inductor decomposes "mean" into a "sum" and a division before this.
    reduce = node.args[4] if len(node.args) > 4 else node.kwargs.get("reduce")
    return reduce == "sum"


# float16/bfloat16 operators whose eager maia kernel (as the CPU's) rounds
# once where Inductor's lowering for a non-CPU device rounds at every step,
# with the condition under which it does (eager_fallbacks.WHOLE_IN_16_BITS
# defines their twins):
# - a convolution with a bias, static shapes: Inductor splits the bias off
#   into an add ("cudnn is slower with it", kernel/conv.py) that rounds again
#   (428 of 1440 bf16 elements 1 ulp off, and an exact zero where CPU has
#   none: a NaN gradient through sqrt(|y|), fuzzer seed 70279);
# - scattered sums: Inductor's atomic adds round every add to 16 bits (the
#   gradient of cummax, 749 float16 values: RMS error 21x eager's, fuzzer
#   seed 70646); Inductor CPU falls back to the aten kernel too
#   (config.cpp.fallback_scatter_reduce_sum), which sums in float32.
_RUN_WHOLE_IN_16_BITS = {
    aten.convolution.default: _biased_static,
    aten.scatter_add.default: lambda node: True,
    aten.scatter_reduce.two: _sums,
}


def run_16bit_ops_whole(graph: torch.fx.Graph) -> None:
    """Calls the eager kernel (eager_fallbacks.exact_twins) for the
    float16/bfloat16 operators of _RUN_WHOLE_IN_16_BITS on maia."""
    twins = eager_fallbacks.exact_twins()
    for node in graph.nodes:
        condition = _RUN_WHOLE_IN_16_BITS.get(node.target) if node.op == "call_function" else None
        if (condition is not None and _on_maia(node)
                and node.meta["val"].dtype in (torch.float16, torch.bfloat16) and condition(node)):
            node.target = twins[node.target]


# Out-of-place indexed writes that Inductor's reinplace pass (it runs after
# this one) turns into writes into their input's memory.
_INDEXED_WRITES = (aten.index_put.default, aten._unsafe_index_put.default)


def _overlaps_itself(value) -> bool:
    """Whether distinct elements share memory (a stride-0 dimension of size
    above 1: an expand)."""
    return any(stride == 0 and size > 1 for size, stride in zip(value.shape, value.stride()))


def _concatenated(node: torch.fx.Node) -> bool:
    return any(user.op == "call_function" and user.target == aten.cat.default
               for user in node.users)


def materialize_overlapping_write_targets(graph: torch.fx.Graph) -> None:
    """index_put (index_add, index_copy, ... decompose to it) of a maia
    tensor writes into a contiguous copy of it when Inductor's reinplace
    pass would make it write into memory that something else shows:
    - an expanded tensor, where the rows an expand shares collide
      (pytorch/pytorch#183986, fixed after torch 2.13: index_add of
      zeros(1, 8).expand(4, -1) gives every row the sum of all rows'
      updates, on every device, and the CPU's kernel writes out of bounds);
    - a tensor that is also concatenated: Inductor computes a cat input
      straight into the cat's output, so the in-place write changed the
      concatenation (pytorch/pytorch#177821: cat([v0, a4]) after
      v0.index_put((i,), x, accumulate=True) held the updated v0).
    The copy makes the write target a tensor of its own."""
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target not in _INDEXED_WRITES:
            continue
        target = node.args[0]
        value = fake_value(target)
        if (value is None or value.device.type != "maia"
                or not (_overlaps_itself(value) or _concatenated(target))):
            continue
        with graph.inserting_before(node):
            copy = _with_value(graph.call_function(
                aten.clone.default, (target,), {"memory_format": torch.contiguous_format}),
                value.clone(memory_format=torch.contiguous_format))
        node.replace_input_with(target, copy)


def run_unlowered_ops_eagerly(graph: torch.fx.Graph) -> None:
    twins = eager_fallbacks.twins()
    for node in graph.nodes:
        twin = twins.get(node.target) if node.op == "call_function" else None
        if twin is None or not any(_on_maia(a) for a in node.all_input_nodes):
            continue
        node.target = twin


class MaiaPostGradPasses(CustomGraphModulePass):
    def __call__(self, gm: torch.fx.GraphModule) -> None:
        flatten_full_arg_reductions(gm.graph)
        materialize_overlapping_write_targets(gm.graph)
        run_unlowered_ops_eagerly(gm.graph)
        gemm_template.use_gemm_templates(gm.graph)
        conv_template.use_conv_templates(gm.graph)
        run_16bit_ops_whole(gm.graph)
        gm.recompile()

    def uuid(self):
        # Compiled graphs bake static launch grids sized to the device's
        # cores (gemm_grid.py): a graph cached under MAIA_NUM_CORES=1 ran
        # every kernel on one core of two. The core count is in the key.
        return (get_hash_for_files((__file__, eager_fallbacks.__file__, gemm_template.__file__,
                                    conv_template.__file__)),
                _core_count(0))
