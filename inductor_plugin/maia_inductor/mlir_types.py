"""torch dtypes as MLIR types, in memory and in computation.

Buffers keep their storage type (bool and uint8 as bytes); values compute in
a wider type where the device has no arithmetic for the storage one
(float16/bfloat16 in float32). Vectors have one width per kernel: VL lanes.
"""

from __future__ import annotations

import math

import torch

VL = 16

_ELEMENT = {
    torch.bool: "i1",
    torch.int8: "i8",
    torch.uint8: "i8",
    torch.int16: "i16",
    torch.int32: "i32",
    torch.int64: "i64",
    torch.float16: "f16",
    torch.bfloat16: "bf16",
    torch.float32: "f32",
    torch.float64: "f64",
}

FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
# Integer dtypes with unsigned arithmetic (bool computes as i1, unsigned).
UNSIGNED_DTYPES = (torch.bool, torch.uint8)


class UnsupportedDtype(NotImplementedError):
    pass


def check_dtype(dtype: torch.dtype) -> torch.dtype:
    if dtype not in _ELEMENT:
        raise UnsupportedDtype(f"maia kernels do not support {dtype}")
    return dtype


def element_type(dtype: torch.dtype) -> str:
    """The MLIR element type of a value of dtype."""
    return _ELEMENT[check_dtype(dtype)]


def storage_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype a buffer of dtype holds: bool as bytes (vectors of i1 are
    bit-packed in LLVM); uint8 is i8 in MLIR either way (signless)."""
    return torch.int8 if dtype == torch.bool else check_dtype(dtype)


def memory_type(dtype: torch.dtype) -> str:
    """The element type of a buffer of dtype."""
    return element_type(storage_dtype(dtype))


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else check_dtype(dtype)


def is_float(dtype: torch.dtype) -> bool:
    return dtype in FLOAT_DTYPES


def is_unsigned(dtype: torch.dtype) -> bool:
    return dtype in UNSIGNED_DTYPES


def bit_width(dtype: torch.dtype) -> int:
    return 1 if dtype == torch.bool else dtype.itemsize * 8


def value_type(dtype: torch.dtype, vec: bool) -> str:
    elem = element_type(dtype)
    return f"vector<{VL}x{elem}>" if vec else elem


def index_type(vec: bool) -> str:
    return f"vector<{VL}xindex>" if vec else "index"


def masked_fill(other, dtype: torch.dtype):
    """ops.masked's other as a value of dtype, for the lanes the mask turns
    off: a non-finite float (a max pool's -inf padding) is 0 for an integer
    dtype, whose masked lanes are never selected (an index loaded inside the
    masked body, or an integer result)."""
    if isinstance(other, float) and not is_float(dtype) and not math.isfinite(other):
        return 0
    return other


def literal(value, dtype: torch.dtype) -> str:
    """An MLIR literal of value as dtype (special floats as bit patterns)."""
    if dtype == torch.bool:
        return "true" if value else "false"
    if not is_float(dtype):
        return str(int(value))
    value = float(value)
    if math.isfinite(value):
        # MLIR wants a digit after the point: 1.0e-05, not 1e-05
        mantissa, _, exponent = repr(value).partition("e")
        if "." not in mantissa:
            mantissa += ".0"
        return f"{mantissa}e{exponent}" if exponent else mantissa
    bits = {
        torch.float32: {"inf": "0x7F800000", "-inf": "0xFF800000", "nan": "0x7FC00000"},
        torch.float64: {"inf": "0x7FF0000000000000", "-inf": "0xFFF0000000000000",
                        "nan": "0x7FF8000000000000"},
        torch.float16: {"inf": "0x7C00", "-inf": "0xFC00", "nan": "0x7E00"},
        torch.bfloat16: {"inf": "0x7F80", "-inf": "0xFF80", "nan": "0x7FC0"},
    }[dtype]
    return bits["nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")]
