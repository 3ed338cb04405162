"""Convolution template kernels: a 2-D convolution in a compiled maia graph
becomes one MLIR kernel that calls the implicit-GEMM convolution
micro-kernel for each block of the output and runs the pointwise epilogue
Inductor fuses into it (bias, BatchNorm's affine, ReLU, residual add) on
that block while it is in cache.

The output is channels-last: as a GEMM its rows are the output pixels
(n, y, x) and its columns the output channels, so a block of rows x
columns is one dense piece of memory, which the micro-kernel writes and
the epilogue reads at the index it iterates (x = pixel * O + channel). This
is the plugin's layout preference for convolutions (docs/inductor.md,
"Convolution templates"): outputs channels-last, inputs read in the layout
they have when it is fixed (graph inputs), channels-last when Inductor
still may choose (intermediate buffers); so a network of convolutions runs
channels-last end to end with no conversion between layers.

How a convolution gets here, as for products (gemm_template.py):
1. The post-grad pass retargets `aten.convolution` on maia (fp32, 2-D, one
   group, not transposed) whose result a pointwise operator reads to
   `maia_conv.conv2d` (no bias) plus a pointwise add of the bias.
2. Its lowering builds a `MaiaConvBuffer` (an `ir.TemplateBuffer`), so the
   scheduler offers its consumers as epilogues.
3. `ConvTemplateScheduling` generates the kernel (conv_kernel.py).
The template covers any stride, padding and dilation, either input layout
and static shapes; grouped, transposed, 1-D/3-D, non-fp32 and dynamic-shape
convolutions stay extern calls to the eager kernels.
"""

from __future__ import annotations

import functools

import torch
from torch._inductor import config as inductor_config
from torch._inductor import dependencies, ir
from torch._inductor.codegen.simd_kernel_features import SIMDKernelFeatures
from torch._inductor.ir import FixedLayout, TemplateBuffer, TensorBox
from torch._inductor.lowering import register_lowering
from torch._inductor.virtualized import V, ops

from .template_graph import (fake_value, has_pointwise_consumer, has_static_layout,
                             replace_node, template_buffer_of)

LIBRARY = "maia_conv"
aten = torch.ops.aten
# The micro-kernel gathers the input with 32-bit offsets (conv_pack.h).
MAX_INPUT_OFFSET = 1 << 31
# The order of a channels-last [N, C, H, W] layout, fastest last (Inductor's
# stride order: the rank of each dimension's stride).
CHANNELS_LAST_ORDER = [3, 0, 2, 1]


def _conv2d(x, weight, stride, padding, dilation):
    out = aten.convolution(x, weight, None, stride, padding, dilation, False, [0, 0], 1)
    return out.contiguous(memory_format=torch.channels_last)


@functools.lru_cache(None)
def conv_ops():
    """The maia_conv operators (defined on first call). Eagerly and under
    fake tensors, conv2d is aten.convolution without bias, channels-last."""
    library = torch.library.Library(LIBRARY, "DEF")
    library.define("conv2d(Tensor input, Tensor weight, SymInt[2] stride, SymInt[2] padding, "
                   "SymInt[2] dilation) -> Tensor")
    library.impl("conv2d", _conv2d, "CompositeExplicitAutograd")
    torch.library.register_fake(f"{LIBRARY}::conv2d", _conv2d, lib=library)
    register_lowering(torch.ops.maia_conv.conv2d.default, type_promotion_kind=None)(_lower_conv2d)
    conv_ops.library = library  # keeps the definitions alive
    return torch.ops.maia_conv


class MaiaConvBuffer(TemplateBuffer):
    """out = conv2d(x, weight), channels-last [N, O, OH, OW], written by a
    template kernel (conv_kernel.py); inputs [x, weight]. The geometry is
    static; channels_inner says the reduction runs over (tap, channel) (the
    weight is then channels-last) rather than (channel, tap). The kernel's
    blocks are the GEMM template's default tiles (gemm_configs.DEFAULT:
    252 rows measured faster than 140 or 560 on ResNet-18)."""

    # One image batch is the rows of one product (MaiaGemmKernel's bmm path
    # is for batched matrices).
    batched = False

    def __init__(self, layout, inputs, *, stride, padding, dilation,
                 channels_inner: bool) -> None:
        super().__init__(layout, inputs, make_kernel_render=None)
        self.stride, self.padding, self.dilation = stride, padding, dilation
        self.channels_inner = channels_inner

    def extract_read_writes(self, normalize: bool = False):
        """The write of the output in its memory order (pixels, then
        channels), as TemplateBuffer's own but with the loops permuted: the
        scheduler fuses a consumer when it reads the output at the index it
        was written at, and a consumer's loops follow memory order."""
        name = self.get_name()
        n, o, oh, ow = self.get_size()
        indexer = self.get_layout().make_indexer()

        def store(index, rindex):
            image, y, x, channel = index
            return ops.store(name, indexer([image, channel, y, x]), "fake")

        deps = dependencies.extract_read_writes(store, [n, oh, ow, o], (), normalize=normalize)
        deps.reads |= self._read_deps_from_inputs(normalize)
        return deps

    def operands(self):
        """(input, weight) as buffers or reinterpreted views."""
        return self.inputs[0], self.inputs[1]

    def kernel_size(self):
        return tuple(int(s) for s in self.inputs[1].get_size()[2:])

    def gemm_shape(self):
        """(rows, columns, depth) of the convolution as a GEMM: output
        pixels, output channels, input channels x taps."""
        n, o, oh, ow = self.get_size()
        c = self.inputs[0].get_size()[1]
        kh, kw = self.kernel_size()
        return n * oh * ow, o, c * kh * kw


def _channels_last_strides(sizes):
    n, c, h, w = sizes
    return [h * w * c, 1, w * c, c]


def _fixed_strides(node):
    layout = node.get_layout()
    return None if isinstance(layout, ir.FlexibleLayout) else [int(s) for s in layout.stride]


def _is_channels_last(sizes, strides) -> bool:
    return all(size == 1 or stride == want for size, stride, want
               in zip(sizes, strides, _channels_last_strides(sizes)))


def _is_contiguous(sizes, strides) -> bool:
    return all(size == 1 or stride == want for size, stride, want
               in zip(sizes, strides, ir.FlexibleLayout.contiguous_strides(sizes)))


def _lower_conv2d(x, weight, stride, padding, dilation):
    x = ir.ExternKernel.realize_input(x)
    if _fixed_strides(x) is None:
        # Inductor may still choose: the layout the template writes, so
        # chains of convolutions never convert.
        x = ir.ExternKernel.require_stride_order(x, CHANNELS_LAST_ORDER)
    weight = ir.ExternKernel.realize_input(weight)
    n, c, h, w = (int(s) for s in x.get_size())
    o, _, kh, kw = (int(s) for s in weight.get_size())
    oh = (h + 2 * padding[0] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (w + 2 * padding[1] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    x_channels_last = _fixed_strides(x)[1] == 1 and c > 1
    w_sizes, w_strides = [o, c, kh, kw], _fixed_strides(weight)
    weight_cl = w_strides is not None and _is_channels_last(w_sizes, w_strides)
    # The eager kernel's policy (runtime/torch/csrc/ops/Convolution.cpp):
    # a channels-last input packs by transposes only with the reduction over
    # (tap, channel), which needs a channels-last weight; copying a
    # contiguous one costs less than gathering when it is small next to the
    # output (O * 12 <= pixels: ResNet's 56x56 and 28x28 layers).
    channels_inner = (c > 1 and kh * kw > 1
                      and (weight_cl or (x_channels_last and o * 12 <= n * oh * ow)))
    if channels_inner and not weight_cl:
        weight = ir.ExternKernel.require_stride_order(weight, CHANNELS_LAST_ORDER)
    elif not channels_inner and kh * kw > 1 and not (
            w_strides is not None and _is_contiguous(w_sizes, w_strides)):
        weight = ir.ExternKernel.require_contiguous(weight)
    layout = FixedLayout(x.get_device(), x.get_dtype(), [n, o, oh, ow],
                         _channels_last_strides([n, o, oh, ow]))
    return TensorBox.create(MaiaConvBuffer(
        layout, [x, weight], stride=list(stride), padding=list(padding),
        dilation=list(dilation), channels_inner=channels_inner))


def weight_matrix_strides(conv: MaiaConvBuffer):
    """(row, column) strides of the weight as the [K, O] matrix the
    micro-kernel reads: k is linear in the weight's memory for the layout
    the lowering required (channels-last for channels_inner, contiguous
    otherwise; any layout for 1x1 kernels, where k is the channel)."""
    weight = conv.operands()[1]
    stride = weight.get_layout().stride
    if tuple(conv.kernel_size()) == (1, 1):
        return stride[1], stride[0]
    return (stride[1] if conv.channels_inner else stride[3]), stride[0]


# --------------------------------------------------------------- post-grad
def _max_offset(t: torch.Tensor) -> int:
    return sum((size - 1) * stride for size, stride in zip(t.shape, t.stride()))


def _templatable(node: torch.fx.Node) -> bool:
    x, weight, bias, stride, padding, dilation, transposed, _, groups = node.args[:9]
    values = [fake_value(x), fake_value(weight), fake_value(node)]
    if bias is not None:
        values.append(fake_value(bias))
    if any(v is None or v.device.type != "maia" or v.dtype != torch.float32 for v in values):
        return False
    xv, wv, out = values[:3]
    static = all(has_static_layout(v) for v in (xv, wv, out))
    return (static and not transposed and groups == 1 and xv.dim() == 4 and xv.shape[1] > 0
            and out.numel() > 0 and _max_offset(xv) < MAX_INPUT_OFFSET
            and all(isinstance(s, int) for s in (*stride, *padding, *dilation)))


def use_conv_templates(graph: torch.fx.Graph) -> None:
    """convolution with a pointwise consumer -> maia_conv.conv2d + the bias
    as a pointwise epilogue (the consumers join it). A convolution nothing
    pointwise reads stays the eager kernel's call, which adds the bias
    while it writes; so does the C++ wrapper's (its launcher knows only the
    pointwise and reduction grids)."""
    from . import config

    if (not config.conv_templates or inductor_config.cpp_wrapper
            or inductor_config.aot_inductor.output_path):
        return
    for node in list(graph.nodes):
        if (node.op == "call_function" and node.target is aten.convolution.default
                and _templatable(node) and has_pointwise_consumer(node)):
            _retarget(graph, node, conv_ops())


def _retarget(graph: torch.fx.Graph, node: torch.fx.Node, ops) -> None:
    x, weight, bias, stride, padding, dilation = node.args[:6]
    value = node.meta["val"].contiguous(memory_format=torch.channels_last)
    with graph.inserting_before(node):
        result = graph.call_function(ops.conv2d.default,
                                     (x, weight, list(stride), list(padding), list(dilation)))
        result.meta["val"] = value
        if bias is not None:
            channels = fake_value(bias).shape[0]
            column = graph.call_function(aten.view.default, (bias, [1, channels, 1, 1]))
            column.meta["val"] = fake_value(bias).view(1, channels, 1, 1)
            result = graph.call_function(aten.add.Tensor, (result, column))
            result.meta["val"] = value
    replace_node(graph, node, result)


# -------------------------------------------------------------- scheduling
def _conv_of(node):
    return template_buffer_of(node, MaiaConvBuffer)


class ConvTemplateScheduling:
    """Mixin of MaiaScheduling (before GemmTemplateScheduling): code
    generation of convolution templates and their epilogues."""

    def codegen_template(self, template_node, epilogue_nodes, prologue_nodes, *,
                         only_gen_src_code=False, hint_override=None):
        if _conv_of(template_node) is None:
            return super().codegen_template(template_node, epilogue_nodes, prologue_nodes,
                                            only_gen_src_code=only_gen_src_code,
                                            hint_override=hint_override)
        if prologue_nodes or only_gen_src_code:
            raise NotImplementedError(
                f"maia: cannot generate template {template_node.get_name()} "
                f"(prologues: {len(prologue_nodes)}, source only: {only_gen_src_code})")
        epilogue = [n for n in epilogue_nodes if n.get_name() not in self.scheduler.removed_ops]
        kernel = self._conv_kernel(template_node, epilogue)
        if kernel.rows_follow_product():
            self._emit_conv_kernel(kernel, [template_node, *epilogue])
            return None
        # The fused nodes iterate the output in another order (an epilogue
        # writing a graph output in NCHW): the convolution alone (it writes
        # the channels-last layout it promised), then the epilogue as a
        # kernel of its own, which frees the buffers these nodes used last.
        self._emit_conv_kernel(self._conv_kernel(template_node, []), [template_node],
                               free_buffers=False)
        self._codegen_nodes(epilogue, None)
        return None

    def _emit_conv_kernel(self, kernel, nodes, free_buffers=True) -> None:
        with V.set_kernel_handler(kernel):
            source = kernel.codegen_kernel()
        kernel.kernel_name = self.define_kernel(source, nodes, kernel)
        with V.set_kernel_handler(kernel):
            for node in nodes:
                node.mark_run()
        self._launch_kernel_and_cleanup(kernel, nodes, free_buffers=free_buffers)

    def _conv_kernel(self, template_node, epilogue):
        from .conv_kernel import MaiaConvKernel

        _, (numel, rnumel) = template_node.group
        node_schedule = self.generate_node_schedule(epilogue, numel, rnumel)
        kernel = MaiaConvKernel(self.create_tiling([numel], [rnumel]),
                                gemm=_conv_of(template_node),
                                features=SIMDKernelFeatures(node_schedule, numel, rnumel))
        self.codegen_node_schedule_with_kernel(node_schedule, kernel)
        return kernel
