"""FX-graph and scheduler-node helpers that the GEMM and convolution
templates share: reading a node's fake value, deciding whether a template
is worth it (a pointwise consumer to fuse), swapping a node for the
template's call, and finding a template's buffer behind a scheduler node."""

from __future__ import annotations

import torch

aten = torch.ops.aten

_VIEWS = (aten._unsafe_view.default,)


def fake_value(node):
    """The tensor a node of a traced graph produces (its fake value), or None."""
    value = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    return value if isinstance(value, torch.Tensor) else None


def has_static_layout(value: torch.Tensor) -> bool:
    """Whether a fake value's sizes and strides are all plain integers (no
    dynamic-shape symbols)."""
    return all(isinstance(d, int) for d in (*value.shape, *value.stride()))


def has_pointwise_consumer(node: torch.fx.Node) -> bool:
    """Whether a pointwise operator reads node's result (through views):
    only then can the template fuse more than the bias, which the extern
    addmm adds while it writes C. A bias-only epilogue costs a pass over C
    and a second buffer (measured: the zoo's BERT layer at 0.67x, its Q/K/V
    projections feeding bmm)."""
    pending, seen = list(node.users), set()
    while pending:
        user = pending.pop()
        if user in seen or user.op != "call_function":
            continue
        seen.add(user)
        target = user.target
        if getattr(target, "is_view", False) or target in _VIEWS:
            pending.extend(user.users)
        elif torch.Tag.pointwise in getattr(target, "tags", ()):
            return True
    return False


def replace_node(graph: torch.fx.Graph, node: torch.fx.Node, result: torch.fx.Node) -> None:
    """Every use of node now reads result, and node is gone."""
    node.replace_all_uses_with(result)
    graph.erase_node(node)


def template_buffer_of(node, buffer_type):
    """The template buffer of type buffer_type a scheduler node generates,
    or None."""
    template = node.get_template_node() if node.is_template() else None
    return template if isinstance(template, buffer_type) else None
