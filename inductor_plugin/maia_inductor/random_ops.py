"""Random numbers inside compiled kernels: Philox4x32-10, counter-based.

Inductor (with its default fallback_random=False) draws one seed per random
op from the maia generator (an eager launch) and asks each element for
rand/randn/randint64(seed, offset) with offset the element's linear index.
The counter is (offset, 0) and the key the 64-bit seed, so a result depends
only on (seed, offset): reproducible under torch.manual_seed, independent of
the grid. The streams differ from eager maia's; to get eager's exact numbers
set torch._inductor.config.fallback_random = True (random ops then call the
eager kernels).
"""

from __future__ import annotations

import math

import torch

_M0, _M1 = 0xD2511F53, 0xCD9E8D57
_W0, _W1 = 0x9E3779B9, 0xBB67AE85
_ROUNDS = 10


def _u32(k, value: int, vec: bool):
    # i32 constants carry the bit pattern (signless): wrap to the signed range
    return k.constant(value - (1 << 32) if value >= 1 << 31 else value, torch.int32, vec)


def _split64(k, value, vec):
    """(low, high) 32-bit words of a 64-bit integer value."""
    c = k.compute
    value = k.convert(value, torch.int64)
    if vec and not value.vec:
        value = k.broadcast(value)
    i64, i32 = k.mlir_type(torch.int64, vec), k.mlir_type(torch.int32, vec)
    low = k.emit(c, f"arith.trunci {value} : {i64} to {i32}", torch.int32, vec)
    shifted = k.emit(c, f"arith.shrui {value}, {k.constant(32, torch.int64, vec)} : {i64}",
                     torch.int64, vec)
    high = k.emit(c, f"arith.trunci {shifted} : {i64} to {i32}", torch.int32, vec)
    return low, high


def philox(k, seed, offset):
    """The four 32-bit words of Philox4x32-10 at counter (offset, 0), key seed."""
    vec = bool(getattr(seed, "vec", False) or getattr(offset, "vec", False))
    c = k.compute
    i32 = k.mlir_type(torch.int32, vec)
    key0, key1 = _split64(k, seed, vec)
    ctr = list(_split64(k, offset, vec)) + [_u32(k, 0, vec), _u32(k, 0, vec)]
    for round_index in range(_ROUNDS):
        lo0, hi0 = k.emit_pair(c, f"arith.mului_extended {ctr[0]}, {_u32(k, _M0, vec)} : {i32}",
                               torch.int32, vec)
        lo1, hi1 = k.emit_pair(c, f"arith.mului_extended {ctr[2]}, {_u32(k, _M1, vec)} : {i32}",
                               torch.int32, vec)
        xor = lambda a, b: k.logical(c, "arith.xori", a, b)  # noqa: E731
        ctr = [xor(xor(hi1, ctr[1]), key0), lo1, xor(xor(hi0, ctr[3]), key1), lo0]
        if round_index + 1 < _ROUNDS:
            key0 = k.logical(c, "arith.addi", key0, _u32(k, _W0, vec))
            key1 = k.logical(c, "arith.addi", key1, _u32(k, _W1, vec))
    return ctr


def _unit_float(k, word, vec, open_at_zero=False):
    """A uniform float32 in [0, 1) (or (0, 1]) from the top 24 bits of word."""
    c = k.compute
    i32, f32 = k.mlir_type(torch.int32, vec), k.mlir_type(torch.float32, vec)
    top = k.emit(c, f"arith.shrui {word}, {k.constant(8, torch.int32, vec)} : {i32}",
                 torch.int32, vec)
    if open_at_zero:
        top = k.logical(c, "arith.addi", top, k.constant(1, torch.int32, vec))
    as_float = k.emit(c, f"arith.uitofp {top} : {i32} to {f32}", torch.float32, vec)
    return k.logical(c, "arith.mulf", as_float, k.constant(2.0 ** -24, torch.float32, vec))


def rand(k, seed, offset):
    words = philox(k, seed, offset)
    return _unit_float(k, words[0], words[0].vec)


def randn(k, seed, offset):
    """Box-Muller on two words."""
    words = philox(k, seed, offset)
    vec = words[0].vec
    c = k.compute
    f32 = k.mlir_type(torch.float32, vec)
    u1 = _unit_float(k, words[0], vec, open_at_zero=True)
    u2 = _unit_float(k, words[1], vec)
    log = k.emit(c, f"math.log {u1} : {f32}", torch.float32, vec)
    radius = k.emit(c, f"math.sqrt {k.logical(c, 'arith.mulf', log, k.constant(-2.0, torch.float32, vec))} : {f32}",
                    torch.float32, vec)
    angle = k.logical(c, "arith.mulf", u2, k.constant(2 * math.pi, torch.float32, vec))
    cosine = k.emit(c, f"math.cos {angle} : {f32}", torch.float32, vec)
    return k.logical(c, "arith.mulf", radius, cosine)


def randint64(k, seed, offset, low, high):
    words = philox(k, seed, offset)
    vec = words[0].vec
    c = k.compute
    i32, i64 = k.mlir_type(torch.int32, vec), k.mlir_type(torch.int64, vec)
    low64 = k.emit(c, f"arith.extui {words[0]} : {i32} to {i64}", torch.int64, vec)
    high64 = k.emit(c, f"arith.extui {words[1]} : {i32} to {i64}", torch.int64, vec)
    high64 = k.emit(c, f"arith.shli {high64}, {k.constant(32, torch.int64, vec)} : {i64}",
                    torch.int64, vec)
    bits = k.logical(c, "arith.ori", high64, low64)
    low_value = k.convert(low, torch.int64)
    span = k.logical(c, "arith.subi", k.convert(high, torch.int64), low_value)
    span, bits = k.unify_shape(span, bits)
    return k.logical(c, "arith.addi", low_value, k.logical(c, "arith.remui", bits, span))
