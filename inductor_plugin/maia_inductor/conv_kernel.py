"""MaiaConvKernel: a convolution template kernel, the implicit-GEMM
convolution plus the fused epilogue, as one MLIR kernel.

It is the GEMM template kernel (gemm_kernel.py) with the convolution as the
GEMM: rows are the output pixels, columns the output channels, and the
channels-last output is that GEMM's row-major C. The grid, the loops over
blocks of columns and rows, and the epilogue over each block are the GEMM
kernel's; per block it calls `maia_ukernel_conv2d_f32`
(runtime/kernels/ukernels/conv_ukernel.cpp), which gathers the input
pixels of the block (im2col restricted to the block, never written to
memory) and writes the block of the output.
"""

from __future__ import annotations

import sympy

from .conv_template import weight_matrix_strides
from .gemm_kernel import MaiaGemmKernel

UKERNEL = "maia_ukernel_conv2d_f32"
UKERNEL_ARG_TYPES = ", ".join(
    ["memref<?xf32>"] + ["index"] * 9 + ["memref<?xf32>"] + ["index"] * 3
    + ["memref<?xf32>"] + ["index"] * 5 + ["index"] * 11 + ["index"] * 5)


class MaiaConvKernel(MaiaGemmKernel):
    kernel_kind = "conv"

    def _mnk(self):
        return self.gemm.gemm_shape()

    def _ukernel(self) -> str:
        return UKERNEL

    def _ukernel_types(self) -> str:
        return UKERNEL_ARG_TYPES

    def _ukernel_call(self, header) -> str:
        """The call computing this block of the output; its index operands
        are emitted into header."""
        emitter = self._emitter(header, lambda: None)

        def value(expr):
            return str(emitter.emit(self._renamed(sympy.sympify(expr))))

        conv = self.gemm
        x, weight = conv.operands()
        x_layout = x.get_layout()
        operands = [f"%{self.args.input(x.get_name())}", value(x_layout.offset)]
        operands += [value(s) for s in x_layout.stride]
        operands += [value(s) for s in x.get_size()]
        w_rs, w_cs = weight_matrix_strides(conv)
        operands += [f"%{self.args.input(weight.get_name())}",
                     value(weight.get_layout().offset), value(w_rs), value(w_cs)]
        out_layout = conv.get_layout()
        operands += [f"%{self.args.output(conv.get_name())}", value(out_layout.offset)]
        operands += [value(s) for s in out_layout.stride]
        _, o, oh, ow = conv.get_size()
        kh, kw = conv.kernel_size()
        geometry = [o, kh, kw, *conv.stride, *conv.padding, *conv.dilation, oh, ow,
                    int(conv.channels_inner)]
        operands += [value(v) for v in geometry]
        operands += ["%rb", "%rb_rows", "%cb", "%cb_cols"]
        return f"func.call @{UKERNEL}({', '.join(operands)}) : ({UKERNEL_ARG_TYPES}) -> ()"
