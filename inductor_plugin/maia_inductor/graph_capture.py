"""Compile-time half of reduce-overhead on maia: whether a graph compiled
with `triton.cudagraphs` can replay maia graphs, and the wrapper lines that
make its `call` a `graphs.GraphedCall` (or log why it cannot)."""

from __future__ import annotations

import sympy
from torch._inductor import config
from torch._inductor.utils import get_first_incompatible_cudagraph_node
from torch._inductor.virtualized import V


def graphed_call_lines() -> str:
    """Lines ending the wrapper module of the current graph: empty unless
    graphs were asked for."""
    if not config.triton.cudagraphs or V.graph.aot_mode or V.graph.cpp_wrapper:
        return ""
    name = _graph_name()
    reason = _static_reason()
    if reason is not None:
        return (
            "from maia_inductor.graphs import graphs_skipped\n"
            f"graphs_skipped({name!r}, {reason!r})\n"
        )
    inputs = V.graph.graph_input_names
    mutated = tuple(index for index, input_name in enumerate(inputs)
                    if input_name in V.graph.mutated_inputs)
    limit = config.triton.cudagraph_unexpected_rerecord_limit
    return (
        "from maia_inductor.graphs import GraphedCall\n"
        f"call = GraphedCall(call, {name!r}, mutated_inputs={mutated!r}, "
        f"dynamic={_has_symbolic_inputs()!r}, rerecord_limit={limit!r})\n"
    )


def _has_symbolic_inputs() -> bool:
    """Whether input sizes vary between calls of this graph (dynamic shapes)."""
    for value in V.graph.graph_inputs.values():
        if isinstance(value, sympy.Expr):
            return True
        get_size = getattr(value, "get_size", None)
        if get_size is None:
            continue
        layout = value.get_layout() if hasattr(value, "get_layout") else None
        exprs = list(get_size()) + (list(layout.stride) if layout is not None else [])
        if any(isinstance(e, sympy.Expr) and e.free_symbols for e in exprs):
            return True
    return False


def _static_reason() -> str | None:
    """Why this graph cannot be captured, from what the compiler knows."""
    if V.graph.disable_cudagraphs_reason:
        return V.graph.disable_cudagraphs_reason
    node = get_first_incompatible_cudagraph_node(V.graph.module)
    if node is not None:
        return (f"operator {node.target} cannot be captured (on Inductor's list of graph-unsafe "
                "operators, or its output size depends on data)")
    devices = set(V.graph.device_types) - {"meta"}
    if devices != {"maia"}:
        others = ", ".join(sorted(devices - {"maia"})) or "no device"
        return (f"the graph has {others} tensors or operations; a capture holds maia work "
                "only (a host value would be read once, at capture)")
    return None


def _graph_name() -> str:
    """How logs name the graph: Dynamo's compile id and the graph's role."""
    from torch._guards import CompileContext

    compile_id = CompileContext.current_compile_id()
    role = ("backward" if V.graph.is_backward
            else "inference" if V.graph.is_inference else "forward")
    return f"graph {compile_id or V.graph.name or '?'} ({role})"
