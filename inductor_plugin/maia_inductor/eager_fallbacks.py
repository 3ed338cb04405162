"""Operators torch.compile on maia runs eagerly because the plugin has no
MLIR lowering for what Inductor lowers them to (lgamma, digamma, erfinv,
zeta, the Bessel functions, nextafter, frexp, ...).

Each such aten operator gets a twin in the `maia_eager` library with the
same schema, whose implementation calls the aten operator (so on maia it
runs the eager maia kernel, or the counted host fallback). Inductor does not
know the twins, so it calls them as fallback kernels; the post-grad pass
(graph_passes.py) retargets the nodes. The rest of the graph still compiles.
Defined when this module is imported, so that a wrapper loaded from the
cache finds them.
"""

from __future__ import annotations

import functools
import warnings

import torch

LIBRARY = "maia_eager"

# OpsHandler ops MaiaOverrides has no lowering for (overrides.py marks them
# unimplemented); each is what Inductor lowers aten.<name> or
# aten.special_<name> to.
UNLOWERED_OPS = (
    "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1",
    "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
    "chebyshev_polynomial_w", "digamma", "erfinv", "frexp", "gammainc", "gammaincc",
    "hermite_polynomial_h", "hermite_polynomial_he", "hypot", "i0", "i0e", "i1", "i1e",
    "igamma", "igammac", "laguerre_polynomial_l", "ldexp", "legendre_polynomial_p",
    "lgamma", "log_ndtr", "modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0",
    "modified_bessel_k1", "ndtr", "ndtri", "nextafter", "polygamma",
    "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
    "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w",
    "spherical_bessel_j0", "zeta",
)


def _functional_tensor_overloads(packet):
    for name in packet.overloads():
        overload = getattr(packet, name)
        schema = overload._schema
        if schema.is_mutable or any(a.alias_info for a in schema.arguments):
            continue
        if schema.returns and all(isinstance(r.type, torch.TensorType) for r in schema.returns):
            yield overload


def _aten_overloads():
    for name in UNLOWERED_OPS:
        for packet_name in (name, f"special_{name}"):
            packet = getattr(torch.ops.aten, packet_name, None)
            if packet is not None:
                yield from _functional_tensor_overloads(packet)


_warned: set = set()  # the aten operators warned about, once per process


def _warn_once(overload) -> None:
    # At run time, not compile time: a graph loaded from the cache warns too.
    if overload not in _warned:
        _warned.add(overload)
        warnings.warn(f"maia: torch.compile has no MLIR lowering for {overload}; it runs "
                      "as the eager maia operator inside the compiled graph", stacklevel=3)


def _twin_name(overload) -> str:
    """`lgamma` for aten.lgamma.default, `special_zeta.other_scalar` for an
    overload."""
    name = overload._schema.name.split("::", 1)[1]
    return name if overload._overloadname == "default" else f"{name}.{overload._overloadname}"


def _define(library, overload, warn: bool = True):
    schema = str(overload._schema).split("::", 1)[1]
    library.define(schema)
    name = _twin_name(overload)

    def run(*args, **kwargs):
        if warn:
            _warn_once(overload)
        return overload(*args, **kwargs)

    def shapes(*args, **kwargs):
        return overload(*args, **kwargs)

    # Every backend runs the aten operator (maia: its kernel or the counted
    # host fallback); under fake tensors too, which gives Inductor the
    # outputs' sizes and strides.
    library.impl(name, run, "CompositeExplicitAutograd")
    torch.library.register_fake(f"{LIBRARY}::{name}", shapes, lib=library)
    packet = getattr(torch.ops, LIBRARY)
    op_name, _, overload_name = name.partition(".")
    return getattr(getattr(packet, op_name), overload_name or "default")


@functools.lru_cache(None)
def _library():
    return torch.library.Library(LIBRARY, "DEF")  # cached: keeps the definitions alive


@functools.lru_cache(None)
def twins() -> dict:
    """aten overload -> its maia_eager twin (defined on first call)."""
    return {overload: _define(_library(), overload) for overload in _aten_overloads()}


# aten operators a compiled graph calls whole, as the eager maia kernel, for
# float16/bfloat16 operands where Inductor's lowering would round at every
# step (graph_passes.run_16bit_ops_whole says when).
WHOLE_IN_16_BITS = (torch.ops.aten.convolution.default, torch.ops.aten.scatter_add.default,
                    torch.ops.aten.scatter_reduce.two)


@functools.lru_cache(None)
def exact_twins() -> dict:
    """aten overload of WHOLE_IN_16_BITS -> its maia_eager twin (defined on
    first call). No warning: nothing is missing."""
    return {overload: _define(_library(), overload, warn=False) for overload in WHOLE_IN_16_BITS}
