#!/usr/bin/env python3
"""Generates the NN kernel binary's sources: one C++ entry point per
(kernel, dtype) over the templates of nn.h, ctc_loss.h, embedding.h,
grid_sample.h, indexing.h, im2col.h, dropout.h, fft.h, frexp.h,
histogram.h, ldl.h, random.h, triangular.h, range.h, batch_norm.h,
pooling.h, pooling3d.h, sorting.h, roll.h, upsample.h, upsample_aa.h,
upsample_trilinear_bicubic.h, bucketing.h, distance.h, linalg.h,
linalg_spectral.h, margin_loss.h and segment_reduce.h, and the binary's
metadata JSON.

Usage: gen_nn_kernels.py OUT_DIR ISA   (ISA: the -march level, e.g. x86-64-v3)
Writes OUT_DIR/{nn,metadata}.gen.cpp. The kernel names (<kernel>_<dtype>,
e.g. softmax_f32, index_select_i64) are the contract with
runtime/torch/csrc/ops/{NN,Indexing,Dropout,Random,Triangular,Range,
BatchNorm,Pooling,Sorting,Roll,Upsample,Bucketing,EmbeddingBag}.cpp; the
headers document each argument list.
Memrefs have dynamic strides; indices are int64 memrefs."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from kernel_binary_gen import (COMPLEX, DTYPES, FLOAT, NUMERIC, entry_point, kernel,  # noqa: E402
                               write_binary_sources)
from kernel_binary_gen import memref as m, scalar as s  # noqa: E402

I64 = [d for d in DTYPES if d[0] == "i64"]
FLOAT_AND_I64 = FLOAT + I64
SINGLE_DOUBLE = [d for d in FLOAT if d[0] in ("f32", "f64")]
F64 = [d for d in FLOAT if d[0] == "f64"]

# kernel, dtypes, args (T = the kernel's dtype), template call
KERNELS = [
    ("softmax", FLOAT, [m("T", 3), m("T", 3), s("i64")], "softmax<{t}>"),
    ("softmax_bwd", FLOAT, [m("T", 3), m("T", 3), m("T", 3), s("i64")], "softmaxBackward<{t}>"),
    # mean/rstd ("C") are of the compute type: f32 for f16/bf16
    ("layer_norm", FLOAT,
     [m("T", 2), m("T", 2), m("T", 1), m("T", 1), m("C", 1), m("C", 1), s("f64"), s("i64"),
      s("i64")], "layerNorm<{t}>"),
    ("layer_norm_bwd", FLOAT,
     [m("T", 2), m("T", 2), m("T", 2), m("C", 1), m("C", 1), m("T", 1), s("i64")],
     "layerNormBackward<{t}>"),
    ("layer_norm_bwd_wb", FLOAT,
     [m("T", 1), m("T", 1), m("T", 2), m("T", 2), m("C", 1), m("C", 1), s("i64"), s("i64")],
     "layerNormBackwardWeights<{t}>"),
    ("nll_loss", FLOAT,
     [m("T", 1), m("T", 1), m("T", 2), m("i64", 1), m("T", 1), s("i64"), s("i64"), s("i64")],
     "nllLoss<{t}>"),
    ("nll_loss_bwd", FLOAT,
     [m("T", 2), m("T", 1), m("i64", 1), m("T", 1), m("T", 1), s("i64"), s("i64"), s("i64")],
     "nllLossBackward<{t}>"),
    ("index_select", DTYPES, [m("T", 3), m("T", 3), m("i64", 1)], "indexSelect<{t}>"),
    ("index_add", DTYPES, [m("T", 3), m("i64", 1), m("T", 3), s("f64"), s("i64")],
     "indexAdd<{t}>"),
    ("gather", DTYPES, [m("T", 8), m("T", 8), m("i64", 8), s("i64")], "gather<{t}>"),
    ("scatter", DTYPES, [m("T", 8), m("i64", 8), m("T", 8), s("i64"), s("i64")],
     "scatter<{t}>"),
    ("embedding_bwd", FLOAT, [m("T", 2), m("T", 2), m("i64", 1), s("i64")],
     "embeddingBackward<{t}>"),
    # embedding.h: weight (modified), sorted indices, max_norm, norm_type
    ("embedding_renorm", FLOAT, [m("T", 2), m("i64", 1), s("f64"), s("f64")],
     "embeddingRenorm<{t}>"),
    # embedding_bag: out, max_indices, bag_size, offset2bag, weight,
    # indices, offsets, per_sample_weights, mode, padding_idx, has_weights
    ("embedding_bag", FLOAT, [m("T", 2), m("i64", 2), m("i64", 1), m("i64", 1), m("T", 2),
                              m("i64", 1), m("i64", 1), m("T", 1)] + [s("i64")] * 3,
     "embeddingBag<{t}>"),
    # grad_weight, grad, indices, offset2bag, bag_size, max_indices,
    # per_sample_weights, mode, padding_idx, has_weights
    ("embedding_bag_bwd", FLOAT, [m("T", 2), m("T", 2), m("i64", 1), m("i64", 1), m("i64", 1),
                                  m("i64", 2), m("T", 1)] + [s("i64")] * 3,
     "embeddingBagBackward<{t}>"),
    # out, grad, weight, indices, offset2bag, padding_idx
    ("embedding_bag_psw_bwd", FLOAT, [m("T", 1), m("T", 2), m("T", 2), m("i64", 1),
                                      m("i64", 1), s("i64")], "embeddingBagWeightsBackward<{t}>"),
    # indexing.h
    ("index", DTYPES, [m("T", 3), m("T", 8), m("i64", 2), s("i64")], "indexGather<{t}>"),
    ("index_put", DTYPES, [m("T", 8), m("i64", 2), m("T", 3), s("i64"), s("i64")],
     "indexPut<{t}>"),
    ("nonzero_count", DTYPES, [m("i64", 1), m("T", 8)], "nonzeroCount<{t}>"),
    ("nonzero", DTYPES, [m("i64", 2), m("i64", 1), m("T", 8), s("i64")], "nonzeroWrite<{t}>"),
    # im2col.h (convolution): geometry kh, kw, sh, sw, ph, pw, dh, dw, oh, ow
    ("im2col", NUMERIC, [m("T", 2), m("T", 4)] + [s("i64")] * 10, "im2col<{t}>"),
    ("col2im", NUMERIC, [m("T", 4), m("T", 2)] + [s("i64")] * 10, "col2im<{t}>"),
    # dropout.h
    ("dropout", FLOAT,
     [m("T", 1), m("i1", 1), m("T", 1), s("f64"), s("f64"), s("i64"), s("i64")],
     "dropout<{t}>"),
    ("dropout_bwd", FLOAT, [m("T", 1), m("T", 1), m("i1", 1), s("f64")],
     "dropoutBackward<{t}>"),
    # random.h: out, from/mean, to/std, seed, offset
    ("uniform", FLOAT, [m("T", 1), s("f64"), s("f64"), s("i64"), s("i64")], "uniformFill<{t}>"),
    ("normal", FLOAT, [m("T", 1), s("f64"), s("f64"), s("i64"), s("i64")], "normalFill<{t}>"),
    # triangular.h: out, in, diagonal, upper
    ("triangular", DTYPES, [m("T", 3), m("T", 3), s("i64"), s("i64")], "triangular<{t}>"),
    # out (2, count), row, col, offset, upper
    ("tri_indices", I64, [m("i64", 2)] + [s("i64")] * 4, "triIndices"),
    # bucketing.h: out, boundaries, values, sorter, has_sorter, right; histc:
    # counts (programs, bins), input, left, right, bins
    ("searchsorted", NUMERIC, [m("i64", 2), m("T", 2), m("T", 2), m("i64", 2), s("i64"),
                               s("i64")], "searchsorted<{t}>"),
    ("histc_count", FLOAT, [m("i64", 2), m("T", 1), s("f64"), s("f64"), s("i64")],
     "histcCount<{t}>"),
    # range.h: out, start/step (f64), start/step (i64), vector width, chunk
    ("arange", NUMERIC, [m("T", 1), s("f64"), s("f64"), s("i64"), s("i64"), s("i64"), s("i64")],
     "arange<{t}>"),
    # out, start, end (f64)
    ("linspace", NUMERIC, [m("T", 1), s("f64"), s("f64")], "linspace<{t}>"),
    # out, start, end, base (f64)
    ("logspace", NUMERIC, [m("T", 1), s("f64"), s("f64"), s("f64")], "logspace<{t}>"),
    # batch_norm.h
    ("batch_norm", FLOAT, [m("T", 3), m("T", 3), m("C", 1), m("C", 1)] + [m("T", 1)] * 4 +
     [s("f64"), s("f64"), s("i64"), s("i64")], "batchNorm<{t}>"),
    ("batch_norm_bwd", FLOAT,
     [m("T", 3)] * 3 + [m("T", 1)] * 3 + [m("C", 1)] * 2 + [s("f64"), s("i64"), s("i64")],
     "batchNormBackward<{t}>"),
    # pooling.h: geometry kh, kw, sh, sw, ph, pw, dh, dw; avg adds
    # count_include_pad, divisor_override (0: none). The CPU's dtypes: max
    # pooling any numeric dtype, average pooling (and its backward) floats and
    # int64; the rest floats.
    ("max_pool2d", NUMERIC, [m("T", 4), m("i64", 4), m("T", 4)] + [s("i64")] * 8,
     "maxPool2d<{t}>"),
    ("adaptive_max_pool2d", FLOAT, [m("T", 4), m("i64", 4), m("T", 4)],
     "adaptiveMaxPool2d<{t}>"),
    ("max_pool2d_bwd", FLOAT, [m("C", 4), m("T", 4), m("i64", 4)], "maxPool2dBackward<{t}>"),
    ("avg_pool2d", FLOAT_AND_I64, [m("T", 4), m("T", 4)] + [s("i64")] * 10, "avgPool2d<{t}>"),
    ("avg_pool2d_bwd", FLOAT_AND_I64, [m("T", 4), m("T", 4)] + [s("i64")] * 10,
     "avgPool2dBackward<{t}>"),
    ("adaptive_avg_pool2d", FLOAT, [m("T", 4), m("T", 4)], "adaptiveAvgPool2d<{t}>"),
    ("adaptive_avg_pool2d_bwd", FLOAT, [m("T", 4), m("T", 4)],
     "adaptiveAvgPool2dBackward<{t}>"),
    # pooling3d.h: 5-D (N, C, D, H, W); kernel, stride, padding (and
    # dilation for max) as (depth, height, width); avg adds
    # count_include_pad, divisor_override (0: none). The max pools'
    # backward is max_pool2d_bwd over (N, C, D * H, W) views.
    ("max_pool3d", NUMERIC, [m("T", 5), m("i64", 5), m("T", 5)] + [s("i64")] * 12,
     "maxPool3d<{t}>"),
    ("adaptive_max_pool3d", FLOAT, [m("T", 5), m("i64", 5), m("T", 5)],
     "adaptiveMaxPool3d<{t}>"),
    ("avg_pool3d", FLOAT_AND_I64, [m("T", 5), m("T", 5)] + [s("i64")] * 11, "avgPool3d<{t}>"),
    ("avg_pool3d_bwd", FLOAT_AND_I64, [m("T", 5), m("T", 5)] + [s("i64")] * 11,
     "avgPool3dBackward<{t}>"),
    ("adaptive_avg_pool3d", FLOAT, [m("T", 5), m("T", 5)], "adaptiveAvgPool3d<{t}>"),
    ("adaptive_avg_pool3d_bwd", FLOAT, [m("T", 5), m("T", 5)],
     "adaptiveAvgPool3dBackward<{t}>"),
    # grid_sample.h: out, input, grid, mode, padding, align_corners
    ("grid_sample", FLOAT, [m("T", 5)] * 3 + [s("i64")] * 3, "gridSample<{t}>"),
    # grad_input (compute type), grad_grid, grad_output, input, grid, mode,
    # padding, align_corners, input_grad
    ("grid_sample_bwd", FLOAT, [m("C", 5)] + [m("T", 5)] * 4 + [s("i64")] * 4,
     "gridSampleBackward<{t}>"),
    # distance.h: out (B, R1, R2), x1 (B, R1, C), x2 (B, R2, C), p
    ("cdist", SINGLE_DOUBLE, [m("T", 3)] * 3 + [s("f64")], "cdist<{t}>"),
    # grad_x1, grad, x1, x2, dist, p
    ("cdist_bwd", SINGLE_DOUBLE, [m("T", 3)] * 5 + [s("f64")], "cdistBackward<{t}>"),
    # grad_x (N, C), grad (pairs), x, dist (pairs), p
    ("pdist_bwd", SINGLE_DOUBLE, [m("T", 2), m("T", 1), m("T", 2), m("T", 1), s("f64")],
     "pdistBackward<{t}>"),
    # linalg.h: LU (in place), pivots, info
    ("lu_factor", SINGLE_DOUBLE, [m("T", 3), m("i32", 2), m("i32", 1)], "luFactor<{t}>"),
    # LU, pivots, X (in place), transpose
    ("lu_solve", SINGLE_DOUBLE, [m("T", 3), m("i32", 2), m("T", 3), s("i64")],
     "luSolve<{t}>"),
    # A, X (in place), upper, transpose, unit_diagonal
    ("triangular_solve", SINGLE_DOUBLE, [m("T", 3), m("T", 3)] + [s("i64")] * 3,
     "triangularSolveKernel<{t}>"),
    # A (in place: L), info
    ("cholesky", SINGLE_DOUBLE, [m("T", 3), m("i32", 1)], "cholesky<{t}>"),
    # A (in place: R and reflectors), tau
    ("geqrf", SINGLE_DOUBLE, [m("T", 3), m("T", 2)], "geqrf<{t}>"),
    # A (reflectors in place: Q), tau
    ("orgqr", SINGLE_DOUBLE, [m("T", 3), m("T", 2)], "orgqr<{t}>"),
    # reflectors, tau, C (in place), left, transpose
    ("ormqr", SINGLE_DOUBLE, [m("T", 3), m("T", 2), m("T", 3), s("i64"), s("i64")],
     "ormqr<{t}>"),
    # linalg_spectral.h (double workspaces): work, values, info
    # ldl.h: ld (lower triangle, in place), pivots i32, info i32; ld,
    # pivots, x (in place)
    ("ldl_factor", SINGLE_DOUBLE, [m("T", 3), m("i32", 2), m("i32", 1)], "ldlFactor<{t}>"),
    ("ldl_solve", SINGLE_DOUBLE, [m("T", 3), m("i32", 2), m("T", 3)], "ldlSolve<{t}>"),
    ("svd_values", F64, [m("f64", 3), m("f64", 2), m("i32", 1)], "svdValues"),
    ("eigh_values", F64, [m("f64", 3), m("f64", 2), m("i32", 1)], "symmetricEigenvalues"),
    # ... with vectors: work, values, info, then u, v (svd) or vectors (eigh)
    ("svd_vectors", F64, [m("f64", 3), m("f64", 2), m("i32", 1), m("f64", 3), m("f64", 3)],
     "svdVectors"),
    ("eigh_vectors", F64, [m("f64", 3), m("f64", 2), m("i32", 1), m("f64", 3)],
     "symmetricEigenvectors"),
    # fft.h: complex memrefs are view_as_real's (a trailing 2). c2c: out,
    # in (may alias), forward, scale; r2c: out, in (real), scale; c2r: out
    # (real), in, scale.
    ("fft_c2c", SINGLE_DOUBLE, [m("T", 4), m("T", 4), s("i64"), s("f64")], "fftC2c<{t}>"),
    ("fft_r2c", SINGLE_DOUBLE, [m("T", 4), m("T", 3), s("f64")], "fftR2c<{t}>"),
    ("fft_c2r", SINGLE_DOUBLE, [m("T", 3), m("T", 4), s("f64")], "fftC2r<{t}>"),
    # margin_loss.h: out, in, target, weight, p, margin, has_weight,
    # reduction; backward: grad_input, grad_output, then those and whether
    # grad_output is per frame. multilabel: out, is_target, in, target,
    # reduction, output per frame; backward: grad_input, grad_output, in,
    # target, is_target, reduction, grad_output per frame.
    ("multi_margin_loss", SINGLE_DOUBLE, [m("T", 1), m("T", 2), m("i64", 1), m("T", 1), s("i64"),
                                          s("f64"), s("i64"), s("i64")], "multiMarginLoss<{t}>"),
    ("multi_margin_loss_bwd", SINGLE_DOUBLE,
     [m("T", 2), m("T", 1), m("T", 2), m("i64", 1), m("T", 1), s("i64"), s("f64")]
     + [s("i64")] * 3, "multiMarginLossBackward<{t}>"),
    ("multilabel_margin_loss", SINGLE_DOUBLE,
     [m("T", 1), m("T", 2), m("T", 2), m("i64", 2), s("i64"), s("i64")],
     "multilabelMarginLoss<{t}>"),
    ("multilabel_margin_loss_bwd", SINGLE_DOUBLE,
     [m("T", 2), m("T", 1), m("T", 2), m("i64", 2), m("T", 2), s("i64"), s("i64")],
     "multilabelMarginLossBackward<{t}>"),
    # frexp.h: mantissa, exponent (int32), in; flat
    ("frexp", FLOAT, [m("T", 1), m("i32", 1), m("T", 1)], "frexpSplit<{t}>"),
    # ctc_loss.h: nll, log_alpha, log_probs, targets, target_offsets,
    # input_lengths, target_lengths, blank
    ("ctc_loss", SINGLE_DOUBLE, [m("T", 1), m("T", 3), m("T", 3)] + [m("i64", 1)] * 4 + [s("i64")],
     "ctcLoss<{t}>"),
    # grad, grad_out, log_probs, targets, target_offsets, input_lengths,
    # target_lengths, nll, log_alpha, log_beta, blank, zero_infinity
    ("ctc_loss_bwd", SINGLE_DOUBLE, [m("T", 3), m("T", 1), m("T", 3)] + [m("i64", 1)] * 4
     + [m("T", 1), m("T", 3), m("T", 3), s("i64"), s("i64")], "ctcLossBackward<{t}>"),
    # upsample_aa.h: out, in, start, size, weights, dim
    ("upsample_aa", SINGLE_DOUBLE, [m("T", 4), m("T", 4), m("i64", 1), m("i64", 1), m("T", 2),
                                    s("i64")], "upsampleAaPass<{t}>"),
    # grad_input, grad_output, ystart, ysize, wy, xstart, xsize, wx
    ("upsample_aa_bwd", SINGLE_DOUBLE, [m("T", 4), m("T", 4)] + [m("i64", 1), m("i64", 1), m("T", 2)]
     * 2, "upsampleAaBackward<{t}>"),
    # histogram.h: partial f64 counts, input, weight, edges, edge_offsets,
    # has_weight, search
    ("histogramdd", FLOAT, [m("f64", 2), m("T", 2), m("T", 1), m("T", 1), m("i64", 1), s("i64"),
                            s("i64")], "histogramdd<{t}>"),
    # segment_reduce.h: out, data, offsets, op, has_initial, initial
    ("segment_reduce", FLOAT, [m("T", 3), m("T", 3), m("i64", 2), s("i64"), s("i64"), s("f64")],
     "segmentReduce<{t}>"),
    # grad_input, grad, output, data, offsets, op, has_initial, initial
    ("segment_reduce_bwd", FLOAT,
     [m("T", 3), m("T", 3), m("T", 3), m("T", 3), m("i64", 2), s("i64"), s("i64"), s("f64")],
     "segmentReduceBackward<{t}>"),
    # perm (int64, in place), pivots
    ("lu_permutation", I64, [m("i64", 2), m("i32", 2)], "luPermutation"),
    # sorting.h: values, indices, in (rank 8), scratch (u8), dim, then
    # descending, stable (sort) or k, largest, sorted (topk). The CPU's
    # dtypes: sort any, topk no bool.
    ("sort", DTYPES, [m("T", 8), m("i64", 8), m("T", 8), m("ui8", 1)] + [s("i64")] * 3,
     "sort<{t}>"),
    ("topk", NUMERIC, [m("T", 8), m("i64", 8), m("T", 8), m("ui8", 1)] + [s("i64")] * 4,
     "topk<{t}>"),
    # kthvalue, median, nanmedian, mode: ... scratch, dim, selection, k
    ("select_one", DTYPES, [m("T", 8), m("i64", 8), m("T", 8), m("ui8", 1)] + [s("i64")] * 3,
     "selectOne<{t}>"),
    # roll.h (roll and flip): out, in (rank 8), 8 shifts
    ("roll", DTYPES + COMPLEX, [m("T", 8), m("T", 8)] + [s("i64")] * 8, "roll<{t}>"),
    # upsample.h: nearest over (N, C, D, H, W), bilinear over (N, C, H, W);
    # scales (the CPU's, float or the compute type, as f64), then the mode
    # (nearest: 0 nearest, 1 nearest-exact; bilinear: align_corners, then
    # which CPU kernel to follow). The backwards write a grad_input of the
    # compute type ("C").
    ("upsample_nearest", FLOAT + [d for d in DTYPES if d[0] == "u8"],
     [m("T", 5), m("T", 5)] + [s("f64")] * 3 + [s("i64")], "upsampleNearest<{t}>"),
    ("upsample_nearest_bwd", FLOAT, [m("C", 5), m("T", 5)] + [s("f64")] * 3 + [s("i64")],
     "upsampleNearestBackward<{t}>"),
    ("upsample_bilinear2d", FLOAT, [m("T", 4), m("T", 4), s("f64"), s("f64"), s("i64"),
                                     s("i64")], "upsampleBilinear2d<{t}>"),
    ("upsample_bilinear2d_bwd", FLOAT,
     [m("C", 4), m("T", 4), s("f64"), s("f64"), s("i64"), s("i64")],
     "upsampleBilinear2dBackward<{t}>"),
    # upsample_trilinear_bicubic.h: the scales (of the compute type, as
    # f64), then align_corners; backwards write a compute-type grad_input.
    ("upsample_trilinear3d", FLOAT, [m("T", 5), m("T", 5)] + [s("f64")] * 3 + [s("i64")],
     "upsampleTrilinear3d<{t}>"),
    ("upsample_trilinear3d_bwd", FLOAT, [m("C", 5), m("T", 5)] + [s("f64")] * 3 + [s("i64")],
     "upsampleTrilinear3dBackward<{t}>"),
    ("upsample_bicubic2d", FLOAT, [m("T", 4), m("T", 4)] + [s("f64")] * 2 + [s("i64")],
     "upsampleBicubic2d<{t}>"),
    ("upsample_bicubic2d_bwd", FLOAT, [m("C", 4), m("T", 4)] + [s("f64")] * 2 + [s("i64")],
     "upsampleBicubic2dBackward<{t}>"),
]

HEADER = """// Generated by gen_nn_kernels.py: do not edit.
#include "batch_norm.h"
#include "bucketing.h"
#include "ctc_loss.h"
#include "distance.h"
#include "dropout.h"
#include "embedding.h"
#include "fft.h"
#include "frexp.h"
#include "grid_sample.h"
#include "histogram.h"
#include "im2col.h"
#include "indexing.h"
#include "ldl.h"
#include "linalg.h"
#include "linalg_spectral.h"
#include "margin_loss.h"
#include "nn.h"
#include "pooling.h"
#include "pooling3d.h"
#include "random.h"
#include "range.h"
#include "roll.h"
#include "segment_reduce.h"
#include "sorting.h"
#include "triangular.h"
#include "upsample.h"
#include "upsample_aa.h"
#include "upsample_trilinear_bicubic.h"

using namespace maia_nn;
"""


def _arg_dtype(placeholder, meta):
    """T: the kernel's dtype; C: its compute type (f32 for f16/bf16)."""
    if placeholder == "T":
        return meta
    if placeholder == "C":
        return "f32" if meta in ("f16", "bf16") else meta
    return placeholder


def main(out_dir, isa):
    kernels, source = [], [HEADER]
    for op, dtypes, args, call in KERNELS:
        for name, t, meta, _ in dtypes:
            symbol = f"{op}_{name}"
            kernels.append(kernel(symbol, [dict(a, dtype=_arg_dtype(a["dtype"], meta))
                                           for a in args]))
            source.append(entry_point(symbol, f"{call.format(t=t)}(args, grid);"))
    write_binary_sources(out_dir, isa, "gen_nn_kernels.py", kernels,
                         {"nn.gen.cpp": "".join(source)})

if __name__ == "__main__":
    main(*sys.argv[1:])
