"""Reductions of a MaiaKernel: per-lane accumulators inside the reduction
loop, one cross-lane reduction after it.

Accumulators live in stack slots (memref.alloca at kernel entry, reset before
each reduction loop); LLVM's SROA turns them into registers. Lanes outside
the tail mask keep their accumulator. float16/bfloat16 accumulate in float32.
"""

from __future__ import annotations

import torch

from . import mlir_types as mt
from .mlir_types import VL

_INT_LIMITS = {
    torch.int8: (-(2**7), 2**7 - 1),
    torch.uint8: (0, 2**8 - 1),
    torch.int16: (-(2**15), 2**15 - 1),
    torch.int32: (-(2**31), 2**31 - 1),
    torch.int64: (-(2**63), 2**63 - 1),
    torch.bool: (0, 1),
}


def _identity(reduction_type, dtype):
    if reduction_type in ("sum", "xor_sum", "any"):
        return 0
    if reduction_type == "prod":
        return 1
    low, high = (float("-inf"), float("inf")) if mt.is_float(dtype) else _INT_LIMITS[dtype]
    return low if reduction_type in ("max", "argmax") else high


def _combine_op(reduction_type, dtype):
    flt = mt.is_float(dtype)
    unsigned = mt.is_unsigned(dtype)
    return {
        "sum": "arith.addf" if flt else "arith.addi",
        "prod": "arith.mulf" if flt else "arith.muli",
        "max": "arith.maximumf" if flt else ("arith.maxui" if unsigned else "arith.maxsi"),
        "min": "arith.minimumf" if flt else ("arith.minui" if unsigned else "arith.minsi"),
        "any": "arith.ori",
        "xor_sum": "arith.xori",
    }[reduction_type]


def _lane_kind(reduction_type, dtype):
    flt = mt.is_float(dtype)
    unsigned = mt.is_unsigned(dtype)
    return {
        "sum": "add",
        "prod": "mul",
        "max": "maximumf" if flt else ("maxui" if unsigned else "maxsi"),
        "min": "minimumf" if flt else ("minui" if unsigned else "minsi"),
        "any": "or",
        "xor_sum": "xor",
    }[reduction_type]


def emit_reduction(k, dtype, src_dtype, reduction_type, value):
    if reduction_type == "welford_reduce":
        return _welford(k, mt.compute_dtype(dtype), (value, None, None))
    if reduction_type == "welford_combine":
        return _welford(k, mt.compute_dtype(dtype), value)
    if reduction_type in ("argmax", "argmin"):
        return _arg_reduction(k, reduction_type, value)
    if reduction_type not in ("sum", "prod", "max", "min", "any", "xor_sum"):
        raise NotImplementedError(f"maia: reduction {reduction_type!r} is not supported")
    if reduction_type == "any":
        acc_dtype = torch.bool
    elif reduction_type in ("sum", "prod"):
        acc_dtype = mt.compute_dtype(dtype)
    else:
        acc_dtype = value.mdtype
    value = k.convert(k.to_context(value), acc_dtype)
    slot, ty = k.new_accumulator(acc_dtype)
    k.init_accumulator(slot, ty, k.constant(_identity(reduction_type, acc_dtype), acc_dtype, True))
    acc = k.load_accumulator(k.compute, slot, ty, acc_dtype)
    combined = k.logical(k.compute, _combine_op(reduction_type, acc_dtype), acc, value)
    kept = k.select(k.compute, k.lane_mask, combined, acc)
    k.compute.writeline(f"memref.store {kept}, {slot}[] : memref<{ty}>")
    final = k.load_accumulator(k.stores, slot, ty, acc_dtype)
    if k.outer_reduction:
        return final  # one reduction per lane
    return k.emit(k.stores, f"vector.reduction <{_lane_kind(reduction_type, acc_dtype)}>, "
                  f"{final} : {ty} into {mt.element_type(acc_dtype)}", acc_dtype, False)


def _arg_reduction(k, reduction_type, value):
    value = k.to_context(value)
    dtype = value.mdtype
    is_max = reduction_type == "argmax"
    flt = mt.is_float(dtype)
    c = k.compute
    vslot, vty = k.new_accumulator(dtype)
    islot, ity = k.new_accumulator(torch.int64)
    k.init_accumulator(vslot, vty, k.constant(_identity(reduction_type, dtype), dtype, True))
    k.init_accumulator(islot, ity, k.constant(0, torch.int64, True))
    acc_v = k.load_accumulator(c, vslot, vty, dtype)
    acc_i = k.load_accumulator(c, islot, ity, torch.int64)
    if flt:
        take = k.compare(c, "ogt" if is_max else "olt", value, acc_v)
        # NaN wins (as in torch): take a NaN unless the accumulator holds one.
        value_nan = k.compare(c, "uno", value, value)
        acc_nan = k.compare(c, "uno", acc_v, acc_v)
        acc_ok = k.logical(c, "arith.xori", acc_nan, k.bool_constant(True, True))
        take = k.logical(c, "arith.ori", take, k.logical(c, "arith.andi", value_nan, acc_ok))
    else:
        unsigned = mt.is_unsigned(dtype)
        pred = ("ugt" if unsigned else "sgt") if is_max else ("ult" if unsigned else "slt")
        take = k.compare(c, pred, value, acc_v)
    take = k.logical(c, "arith.andi", take, k.lane_mask)
    position = k.convert(k.reduction_position(c), torch.int64)
    new_v = k.select(c, take, value, acc_v)
    new_i = k.select(c, take, position, acc_i)
    c.writeline(f"memref.store {new_v}, {vslot}[] : memref<{vty}>")
    c.writeline(f"memref.store {new_i}, {islot}[] : memref<{ity}>")
    s = k.stores
    final_i = k.load_accumulator(s, islot, ity, torch.int64)
    if k.outer_reduction:
        return final_i  # each lane found its own
    final_v = k.load_accumulator(s, vslot, vty, dtype)
    kind = _lane_kind("max" if is_max else "min", dtype)
    best = k.emit(s, f"vector.reduction <{kind}>, {final_v} : {vty} into "
                  f"{mt.element_type(dtype)}", dtype, False)
    best_v = k.broadcast(best, s)
    if flt:
        hit = k.compare(s, "oeq", final_v, best_v)
        hit = k.logical(s, "arith.ori", hit, k.compare(s, "uno", final_v, final_v))
    else:
        hit = k.compare(s, "eq", final_v, best_v)
    # the first position among the lanes holding the best value
    candidates = k.select(s, hit, final_i, k.constant(2**63 - 1, torch.int64, True))
    return k.emit(s, f"vector.reduction <minsi>, {candidates} : {ity} into i64",
                  torch.int64, False)


def _welford(k, acc_dtype, values):
    """Welford mean / M2 / weight, per lane then across lanes (Chan et al.),
    accumulated in acc_dtype (float64 for float64, else float32)."""
    mean_in, m2_in, weight_in = values
    c = k.compute
    mean_in = k.convert(k.to_context(mean_in), acc_dtype)
    slots = [k.new_accumulator(acc_dtype) for _ in range(3)]
    for slot, ty in slots:
        k.init_accumulator(slot, ty, k.constant(0.0, acc_dtype, True))
    acc = [k.load_accumulator(c, slot, ty, acc_dtype) for slot, ty in slots]
    if m2_in is None:
        one = k.constant(1.0, acc_dtype, True)
        zero = k.constant(0.0, acc_dtype, True)
        incoming = (mean_in, zero, one)
    else:
        incoming = (mean_in, k.convert(k.to_context(m2_in), acc_dtype),
                    k.convert(k.to_context(weight_in), acc_dtype))
    merged = _welford_merge(k, c, acc, incoming, VL, acc_dtype)
    for (slot, ty), new, old in zip(slots, merged, acc):
        kept = k.select(c, k.lane_mask, new, old)
        c.writeline(f"memref.store {kept}, {slot}[] : memref<{ty}>")
    s = k.stores
    lanes = [k.load_accumulator(s, slot, ty, acc_dtype) for slot, ty in slots]
    if k.outer_reduction:
        return tuple(lanes)  # one (mean, m2, weight) per lane
    element = mt.element_type(acc_dtype)
    width = VL
    while width > 1:
        half = width // 2
        lo = [_slice(k, s, v, 0, half, width, element) for v in lanes]
        hi = [_slice(k, s, v, half, half, width, element) for v in lanes]
        lanes = _welford_merge(k, s, lo, hi, half, acc_dtype)
        width = half
    return tuple(k.emit(s, f"vector.extract {v}[0] : {element} from vector<1x{element}>",
                        acc_dtype, False)
                 for v in lanes)


def _slice(k, buffer, value, offset, size, width, element):
    return k.emit(buffer, f"vector.extract_strided_slice {value} {{offsets = [{offset}], "
                  f"sizes = [{size}], strides = [1]}} : vector<{width}x{element}> to "
                  f"vector<{size}x{element}>", _Width(size), True)


class _Width:
    """A pseudo dtype for vectors narrower than VL (cross-lane combines)."""

    def __init__(self, width):
        self.width = width


def _welford_merge(k, buffer, a, b, width, acc_dtype):
    """Merges two (mean, m2, weight) triples of width lanes."""
    element = mt.element_type(acc_dtype)
    ty = f"vector<{width}x{element}>" if width != VL else k.mlir_type(acc_dtype, True)

    def op(name, x, y):
        return k.emit(buffer, f"{name} {x}, {y} : {ty}", _Width(width) if width != VL
                      else acc_dtype, True)

    mean_a, m2_a, w_a = a
    mean_b, m2_b, w_b = b
    weight = op("arith.addf", w_a, w_b)
    delta = op("arith.subf", mean_b, mean_a)
    ratio = op("arith.divf", w_b, weight)
    # an empty pair (weight 0) has ratio NaN: make it 0
    zeros = _zeros(k, width, acc_dtype)
    is_empty = k.emit(buffer, f"arith.cmpf oeq, {weight}, {zeros} : {ty}", torch.bool, True)
    cond_ty = f"vector<{width}xi1>"
    ratio = k.emit(buffer, f"arith.select {is_empty}, {zeros}, {ratio} : {cond_ty}, {ty}",
                   _Width(width) if width != VL else acc_dtype, True)
    mean = op("arith.addf", mean_a, op("arith.mulf", delta, ratio))
    correction = op("arith.mulf", op("arith.mulf", delta, delta), op("arith.mulf", w_a, ratio))
    m2 = op("arith.addf", op("arith.addf", m2_a, m2_b), correction)
    return [mean, m2, weight]


def _zeros(k, width, acc_dtype):
    if width == VL:
        return k.constant(0.0, acc_dtype, True)
    element = mt.element_type(acc_dtype)
    return k.emit(k.prologue, f"arith.constant dense<0.0> : vector<{width}x{element}>",
                  _Width(width), True)
