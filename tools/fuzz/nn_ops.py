"""The neural-network op categories of the generator (fuzz_compile.py --nn):
products, convolutions, pools, normalizations and attention, the ops that
compiled maia runs through its GEMM and convolution templates (with the
pointwise ops the other categories add after them fused as epilogues) or
through its eager kernels inside a compiled graph.

Like ops.py, each takes a Builder and adds at most one op; eager PyTorch
dropping what it rejects (a window larger than the padded input, a dtype
without a CPU kernel) keeps every program valid. Results of products,
convolutions and normalizations are inexact (sums in another order); a max
pool of exact values is exact.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import sympy
import torch

from ops import CATEGORIES, FLOATS, ONE

if TYPE_CHECKING:
    from program_gen import Builder

NN_FLOATS = FLOATS + (torch.float64,)
SMALL = [1, 2, 3, 4, 8]


def _float_value(b: Builder, ranks):
    """An earlier float value of one of the ranks, or a new input of the
    first rank with small sizes (channels and windows stay small)."""
    v = b.pick(lambda w: w.dtype in NN_FLOATS and len(w.shape) in ranks)
    if v is not None and b.rng.random() < 0.7:
        return v
    dtype = b.main_dtype if b.main_dtype in NN_FLOATS else torch.float32
    shape = [sympy.Integer(b.rng.choice(SMALL[:3]))]  # batch
    shape += [b.size_symbol(8)]                       # channels
    shape += [b.size_symbol(33) for _ in range(ranks[0] - 2)]
    return b.new_input(tuple(shape), dtype)


def _weight(b: Builder, shape, dtype):
    """A parameter-like input: contiguous or, as nn.Linear's weight seen
    through .t(), transposed."""
    layout = "transposed" if len(shape) >= 2 and b.rng.random() < 0.3 else "contiguous"
    return b.new_input(tuple(shape), dtype, layout=layout)


def _window_out(size, kernel, stride, padding, dilation):
    return sympy.floor((size + 2 * padding - dilation * (kernel - 1) - 1) / stride) + 1


def contract(b: Builder):
    """mm, addmm, linear (bias or not), bmm, baddbmm, broadcasting matmul,
    and x @ x^T."""
    v = b.pick(lambda w: len(w.shape) in (2, 3) and w.dtype != torch.bool)
    if v is None:
        return
    kind = b.rng.choice(["mm", "addmm", "linear", "linear", "matmul", "gram"] +
                        (["bmm", "baddbmm"] if len(v.shape) == 3 else []))
    x, k = v.name, v.shape[-1]
    rows = sympy.Mul(*v.shape[:-1])
    n = b.size_symbol(max(1, 6000 // max(1, b.concrete([rows])[0])))
    if kind == "gram":
        out = tuple(v.shape[:-1]) + (v.shape[-2],)
        b.add_op(f"{x} @ {x}.transpose(-1, -2)", [v], out, False)
        return
    if kind in ("bmm", "baddbmm"):
        w = _weight(b, (v.shape[0], k, n), v.dtype)
        out = (v.shape[0], v.shape[1], n)
        if kind == "bmm":
            b.add_op(f"torch.bmm({x}, {w.name})", [v, w], out, False)
        else:
            c = b.new_input(b.rng.choice([out, (ONE, ONE, n), (n,)]), v.dtype)
            beta = "0.5" if v.dtype.is_floating_point else "3"
            b.add_op(f"torch.baddbmm({c.name}, {x}, {w.name}, beta={beta}, alpha=2)",
                     [c, v, w], out, False)
        return
    if kind == "linear":
        w = _weight(b, (n, k), v.dtype)
        args, bias = [v, w], ""
        if b.rng.random() < 0.6:
            c = b.new_input((n,), v.dtype)
            args, bias = args + [c], f", {c.name}"
        b.add_op(f"torch.nn.functional.linear({x}, {w.name}{bias})", args,
                 tuple(v.shape[:-1]) + (n,), False)
        return
    w = _weight(b, (k, n), v.dtype)
    out = tuple(v.shape[:-1]) + (n,)
    if kind == "addmm" and len(v.shape) == 2:
        c = b.new_input(b.rng.choice([out, (n,), (ONE, n), (v.shape[0], ONE)]), v.dtype)
        scale = b.rng.choice(["", ", beta=0.5", ", alpha=2", ", beta=0"])
        if not v.dtype.is_floating_point:
            # integer products take integer scales (torch.addmm's contract; the
            # CPU truncates 0.5 to 0, Inductor's K = 1 decomposition for
            # non-CPU devices multiplies by 0.5, upstream)
            scale = scale.replace("0.5", "3")
        b.add_op(f"torch.addmm({c.name}, {x}, {w.name}{scale})", [c, v, w], out, False)
    elif kind == "mm" and len(v.shape) == 2:
        b.add_op(f"torch.mm({x}, {w.name})", [v, w], out, False)
    else:
        b.add_op(f"{x} @ {w.name}", [v, w], out, False)


def conv(b: Builder):
    """conv1d/conv2d with stride, padding, dilation, groups (1 or
    depthwise), bias or not, NCHW or channels-last."""
    spatial = b.rng.choice([1, 2, 2])
    v = _float_value(b, (spatial + 2,))
    x, channels = v.name, v.shape[1]
    if b.concrete([channels])[0] == 0:
        return  # the CPU gives no output channels then, whatever the weight says
    kernel = b.rng.choice([1, 2, 3, 3, 5])
    stride, padding, dilation = b.rng.choice([1, 1, 2]), b.rng.choice([0, 1, 2]), \
        b.rng.choice([1, 1, 2])
    depthwise = b.rng.random() < 0.25
    out_channels = channels * b.rng.choice([1, 2]) if depthwise else \
        sympy.Integer(b.rng.choice(SMALL))
    groups = f", groups={x}.shape[1]" if depthwise else ""
    w = _weight(b, (out_channels, ONE if depthwise else channels) + (sympy.Integer(kernel),) * spatial,
                v.dtype)
    args, bias = [v, w], "None"
    if b.rng.random() < 0.6:
        c = b.new_input((out_channels,), v.dtype)
        args, bias = args + [c], c.name
    if spatial == 2 and b.rng.random() < 0.4:
        x = f"{x}.contiguous(memory_format=torch.channels_last)"
    shape = (v.shape[0], out_channels) + tuple(
        _window_out(d, kernel, stride, padding, dilation) for d in v.shape[2:])
    b.add_op(f"torch.nn.functional.conv{spatial}d({x}, {w.name}, {bias}, stride={stride}, "
             f"padding={padding}, dilation={dilation}{groups})", args, shape, False)


def pool(b: Builder):
    """max/avg pools (2-D over 3-D or 4-D values) and the adaptive pools."""
    v = _float_value(b, (4, 3))
    x = v.name
    kind = b.rng.choice(["max", "max", "avg", "adaptive_avg", "adaptive_max"])
    if kind in ("max", "adaptive_max") and not b.ties_safe(v):
        return
    if kind.startswith("adaptive"):
        size = (b.rng.choice([1, 2, 3, 5]), b.rng.choice([1, 2, 4]))
        shape = tuple(v.shape[:-2]) + tuple(sympy.Integer(s) for s in size)
        b.add_op(f"torch.nn.functional.{kind}_pool2d({x}, {size})", [v], shape,
                 kind == "adaptive_max" and v.exact)
        return
    kernel = b.rng.choice([1, 2, 3])
    stride = b.rng.choice([1, 2, kernel])
    padding = b.rng.randint(0, kernel // 2)
    if kind == "max":
        dilation = b.rng.choice([1, 1, 2])
        if dilation > 1:
            # else a whole window may lie in the padding: the CPU's backward
            # then writes out of bounds (test_pooling.py::test_backward_of_a_
            # window_in_the_padding_is_a_clear_error)
            padding = 0
        expr = (f"torch.nn.functional.max_pool2d({x}, {kernel}, {stride}, {padding}, "
                f"{dilation})")
    else:
        dilation = 1
        include = b.rng.choice(["True", "False"])
        expr = (f"torch.nn.functional.avg_pool2d({x}, {kernel}, {stride}, {padding}, "
                f"count_include_pad={include})")
    shape = tuple(v.shape[:-2]) + tuple(
        _window_out(d, kernel, stride, padding, dilation) for d in v.shape[-2:])
    b.add_op(expr, [v], shape, kind == "max" and v.exact)


def norm(b: Builder):
    """layer_norm, rms_norm, group_norm and batch_norm (eval with running
    statistics, or training without)."""
    v = b.pick(lambda w: w.dtype in NN_FLOATS and len(w.shape) >= 2)
    if v is None:
        return
    x = v.name
    kind = b.rng.choice(["layer", "layer", "rms", "group", "batch_eval", "batch_train"])
    last = v.shape[-1]
    sizes = b.concrete(v.shape)
    group = {"layer": sizes[-1], "rms": sizes[-1], "batch_eval": 2,
             "batch_train": sizes[0] * math.prod(sizes[2:])}.get(kind, math.prod(sizes[1:]))
    if group < 2:
        # one value normalized: x - mean is 0 up to rounding, times
        # 1/sqrt(eps); the CPU's and maia's noise differ, neither is wrong
        return
    if kind in ("layer", "rms"):
        w = b.new_input((last,), v.dtype)
        args, affine = [v, w], f", {w.name}"
        if kind == "layer" and b.rng.random() < 0.7:
            c = b.new_input((last,), v.dtype)
            args, affine = args + [c], affine + f", {c.name}"
        b.add_op(f"torch.nn.functional.{kind}_norm({x}, {x}.shape[-1:]{affine})", args,
                 v.shape, False)
        return
    channels = v.shape[1]

    def parameter():
        # contiguous: the CPU's batch_norm backward ignores a weight's
        # strides for (N, C) inputs (test_native_ops.py::TestBatchNorm::
        # test_strided_parameters), which would be a false alarm here
        return b.new_input((channels,), v.dtype, layout="contiguous")

    w, c = parameter(), parameter()
    if kind == "group":
        b.add_op(f"torch.nn.functional.group_norm({x}, 1, {w.name}, {c.name})", [v, w, c],
                 v.shape, False)
    elif kind == "batch_train":
        b.add_op(f"torch.nn.functional.batch_norm({x}, None, None, {w.name}, {c.name}, "
                 f"training=True)", [v, w, c], v.shape, False)
    else:
        mean, var = parameter(), parameter()
        b.add_op(f"torch.nn.functional.batch_norm({x}, {mean.name}, {var.name}.abs() + 0.5, "
                 f"{w.name}, {c.name})", [v, mean, var, w, c], v.shape, False)


def attention(b: Builder):
    """scaled_dot_product_attention of a 4-D query, causal or not."""
    q = _float_value(b, (4,))
    keys = b.size_symbol(64) if b.rng.random() < 0.5 else q.shape[2]
    kv_shape = tuple(q.shape[:2]) + (keys, q.shape[3])
    k, v = b.new_input(kv_shape, q.dtype), b.new_input(kv_shape, q.dtype)
    causal = b.rng.choice(["False", "True"])
    b.add_op(f"torch.nn.functional.scaled_dot_product_attention({q.name}, {k.name}, {v.name}, "
             f"is_causal={causal})", [q, k, v], q.shape, False)


NN_CATEGORIES = {  # the general categories (their epilogues), and these as often
    **CATEGORIES,
    "contract": (7, contract), "conv": (5, conv), "pool": (3, pool), "norm": (3, norm),
    "attention": (1.5, attention),
}
