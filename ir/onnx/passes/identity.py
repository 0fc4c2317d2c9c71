"""Identity and no-op elimination on the lowered ONNX graph: Identity, Transpose with the
identity permutation, Pad by zeros, and Add/Sub of 0 or Mul/Div by 1 (a size-1 constant
that cannot change the shape) are removed, their consumers reading the input instead."""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence

import numpy as np
import onnx

from tf2ir.ir.onnx.passes.lowered import LoweredGraph, attr_value, replace_uses

_NEUTRAL = {"Add": (0, (0, 1)), "Sub": (0, (0,)), "Mul": (1, (0, 1)), "Div": (1, (0,))}
_CANDIDATES = {"Identity", "Transpose", "Pad", *_NEUTRAL}


def _aliased_input(g: LoweredGraph, node: onnx.NodeProto) -> Optional[str]:
    """The input that `node` passes through unchanged, or None."""
    if node.domain not in ("", "ai.onnx") or len(node.output) != 1 or not node.input:
        return None
    op = node.op_type
    if op == "Identity":
        return node.input[0]
    if op == "Transpose":
        perm = attr_value(node, "perm")
        return node.input[0] if perm is not None and list(perm) == sorted(perm) else None
    if op == "Pad" and len(node.input) >= 2:
        pads = g.const(node.input[1])
        return node.input[0] if pads is not None and not np.any(pads) else None
    if op in _NEUTRAL and len(node.input) == 2:
        neutral, positions = _NEUTRAL[op]
        for pos in positions:
            x, c = node.input[pos], g.const(node.input[1 - pos])
            if c is None or c.size != 1 or not np.all(c == neutral) or x in g.initializers:
                continue
            rank = g.rank(x)
            if c.ndim == 0 or (rank is not None and c.ndim <= rank):
                return x
    return None


def remove_identities(g: LoweredGraph, only: Optional[Sequence[str]] = None) -> int:
    """Remove pass-through nodes (of the op types `only`, if given); return how many."""
    # built at the first hit: most graphs have none
    producers: Optional[Dict[str, onnx.NodeProto]] = None
    users: Optional[Dict[str, List[onnx.NodeProto]]] = None
    graph_inputs = set(g.inputs)
    removed = []
    for node in g.nodes:
        if node.op_type not in (only or _CANDIDATES):
            continue
        x = _aliased_input(g, node)
        if x is None:
            continue
        if producers is None or users is None:
            producers, users = g.producers(), g.consumers()
        y = node.output[0]
        if y not in g.pinned:
            replace_uses(users.get(y, ()), y, x)
            users.setdefault(x, []).extend(users.pop(y, []))
        else:
            # y must keep its name (a graph output): the producer of x writes y instead.
            source = producers.get(x)
            if source is None or x in g.pinned or x in graph_inputs or g.has_subgraphs(source):
                continue
            source.output[list(source.output).index(x)] = y
            producers[y] = source
            replace_uses(users.get(x, ()), x, y)
            users.setdefault(y, []).extend(n for n in users.pop(x, []) if n is not node)
        users[x] = [n for n in users.get(x, []) if n is not node]
        removed.append(id(node))
    g.keep_only(removed)
    return len(removed)
