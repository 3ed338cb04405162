"""Inputs every rank can rebuild for every other rank, and CPU references."""

from __future__ import annotations

import functools

import torch
import torch.distributed as dist

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INTS = [torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8]
DTYPES = FLOATS + INTS + [torch.bool]

R = dist.ReduceOp


def value(rank: int, shape, dtype, salt: int = 0) -> torch.Tensor:
    """Rank's input: small multiples of 1/4 (exact in every float dtype) or
    small integers, the same in every process."""
    g = torch.Generator().manual_seed(7919 * salt + rank)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if dtype == torch.uint8:
        return torch.randint(0, 16, shape, generator=g).to(dtype)
    if dtype.is_floating_point:
        return (torch.randint(-8, 9, shape, generator=g) / 4).to(dtype)
    return torch.randint(-8, 9, shape, generator=g).to(dtype)


def ops_for(dtype):
    """(name, op) pairs the backend supports for dtype."""
    if dtype == torch.bool:
        names = ["SUM", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR"]
    elif dtype.is_floating_point:
        names = ["SUM", "AVG", "PRODUCT", "MIN", "MAX", "PREMUL_SUM"]
    else:
        names = ["SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR"]
    return [(name, make_op(name)) for name in names]


PREMUL_FACTOR = 0.5


def make_op(name):
    if name == "PREMUL_SUM":
        return dist._make_nccl_premul_sum(PREMUL_FACTOR)
    return getattr(R, name)


def reference(name: str, tensors: list[torch.Tensor]) -> torch.Tensor:
    """The reduction of the ranks' CPU tensors, computed as the backend
    promises: float16/bfloat16 in float32, bool as logical operations."""
    dtype = tensors[0].dtype
    if dtype in (torch.float16, torch.bfloat16):
        tensors = [t.float() for t in tensors]
    if dtype == torch.bool:
        logical = {"SUM": torch.logical_or, "MAX": torch.logical_or, "BOR": torch.logical_or,
                   "PRODUCT": torch.logical_and, "MIN": torch.logical_and,
                   "BAND": torch.logical_and, "BXOR": torch.logical_xor}[name]
        return functools.reduce(logical, tensors)
    if name == "PREMUL_SUM":
        tensors = [t * PREMUL_FACTOR for t in tensors]
    binary = {"SUM": torch.add, "AVG": torch.add, "PREMUL_SUM": torch.add, "PRODUCT": torch.mul,
              "MIN": torch.minimum, "MAX": torch.maximum, "BAND": torch.bitwise_and,
              "BOR": torch.bitwise_or, "BXOR": torch.bitwise_xor}[name]
    out = functools.reduce(binary, tensors)
    if name == "AVG":
        out = out / len(tensors) if out.is_floating_point() else \
            torch.div(out, len(tensors), rounding_mode="trunc")
    return out.to(dtype)


class Failures:
    """Collects mismatches so that one run reports all of them."""

    def __init__(self):
        self.messages = []

    def check(self, actual: torch.Tensor, expected: torch.Tensor, what: str):
        try:
            torch.testing.assert_close(actual.cpu(), expected, rtol=1e-2 if expected.dtype in (
                torch.float16, torch.bfloat16) else None, atol=1e-2 if expected.dtype in (
                torch.float16, torch.bfloat16) else None, equal_nan=True)
        except AssertionError as error:
            self.messages.append(f"{what}: {error}")

    def raise_any(self):
        if self.messages:
            raise AssertionError(f"{len(self.messages)} mismatches:\n" + "\n".join(self.messages))


def check_all_reduce_every_op(rank: int, world: int, dtype, salt: int, numels,
                              failures: Failures):
    """all_reduce with every op dtype has, at each size, on maia:rank,
    against the CPU reference of all ranks' inputs."""
    for numel in numels:
        for name, op in ops_for(dtype):
            inputs = [value(r, (numel,), dtype, salt) for r in range(world)]
            expected = reference(name, inputs)
            t = inputs[rank].to(torch.device("maia", rank))
            dist.all_reduce(t, op=op)
            failures.check(t, expected, f"all_reduce {name} {dtype} x{numel}")
