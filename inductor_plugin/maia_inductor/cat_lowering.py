"""aten.cat on maia: which of Inductor's two lowerings a concatenation gets.

Inductor lowers a cat on every device but the CPU as a pointwise kernel
(`pointwise_cat`) that picks, per output element, the input to read; on the
CPU it writes each input into its slice of the output (`ConcatKernel`).
MaiaKernel vectorizes the innermost dimension, so a pointwise cat along
that dimension in pieces narrower than a vector makes every vector straddle
the pieces: `stack(..., dim=-1)` (interleaved rotary embeddings) becomes
rows of 2 lanes of 16, every input computed per row in scalars and selected
per lane. Written into their slices instead, the pieces are strided stores
of full vectors (and siblings fuse horizontally, sharing their common
work, e.g. RoPE's cos and sin). Every other cat keeps Inductor's choice.
"""

from __future__ import annotations

import torch
from torch._inductor.ir import ConcatKernel, TensorBox
from torch._inductor.lowering import get_promoted_dtype, lowerings, to_dtype
from torch._inductor.virtualized import V
from torch._prims_common import ELEMENTWISE_TYPE_PROMOTION_KIND

from .mlir_types import VL

aten = torch.ops.aten


def _narrow_innermost_pieces(inputs, dim: int) -> bool:
    """Whether a cat of maia inputs runs along their innermost dimension in
    a piece narrower than one vector."""
    if len(inputs) < 2 or inputs[0].get_device().type != "maia":
        return False
    rank = len(inputs[0].get_size())
    if rank == 0 or any(len(x.get_size()) != rank for x in inputs):
        return False
    if dim % rank != rank - 1:
        return False
    sizes = V.graph.sizevars
    return any(sizes.statically_known_lt(x.get_size()[-1], VL) for x in inputs)


def register() -> None:
    """Wrap Inductor's cat lowering (once) with maia's choice."""
    upstream = lowerings[aten.cat.default]
    if getattr(upstream, "maia_cat", False):
        return

    def cat(inputs, dim=0):
        if not _narrow_innermost_pieces(inputs, dim):
            return upstream(inputs, dim)
        dtype = get_promoted_dtype(
            *inputs, type_promotion_kind=ELEMENTWISE_TYPE_PROMOTION_KIND.DEFAULT)
        inputs = [to_dtype(x, dtype) for x in inputs]
        dim = dim % len(inputs[0].get_size())
        return TensorBox(ConcatKernel.create(inputs, dim))

    cat.maia_cat = True
    lowerings[aten.cat.default] = cat
