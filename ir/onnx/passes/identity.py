"""Identity and no-op elimination on the lowered ONNX graph: Identity, Transpose with the
identity permutation, Pad by zeros, Add/Sub of 0, Mul/Div by 1, Or/Xor with false and And
with true (a size-1 constant
that cannot change the shape, or a larger one where the other operand's shape is known to
hold it) are removed, their consumers reading the input instead."""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from tf2ir.ir.onnx.graph import OnnxGraph, OnnxNode

_NEUTRAL = {"Add": (0, (0, 1)), "Sub": (0, (0,)), "Mul": (1, (0, 1)), "Div": (1, (0,)),
            "Or": (False, (0, 1)), "And": (True, (0, 1)), "Xor": (False, (0, 1))}
_CANDIDATES = ("Identity", "Transpose", "Pad", *_NEUTRAL)


def _aliased_input(g: OnnxGraph, node: OnnxNode) -> Optional[str]:
    """The input that `node` passes through unchanged, or None."""
    if not node.standard or len(node.output) != 1 or not node.input:
        return None
    op = node.op_type
    if op == "Identity":
        return node.input[0]
    if op == "Transpose":
        perm = node.attr("perm")
        return node.input[0] if perm is not None and list(perm) == sorted(perm) else None
    if op == "Pad" and len(node.input) >= 2:
        pads = g.const(node.input[1])
        return node.input[0] if pads is not None and not np.any(pads) else None
    if op in _NEUTRAL and len(node.input) == 2:
        neutral, positions = _NEUTRAL[op]
        for pos in positions:
            x, c = node.input[pos], g.const(node.input[1 - pos])
            if c is None or not np.all(c == neutral) or x in g.initializers:
                continue
            rank = g.rank(x)
            if c.size == 1 and (c.ndim == 0 or (rank is not None and c.ndim <= rank)):
                return x
            if c.size > 1 and _covers(g.shapes.get(x), c.shape):
                return x
    return None


def _covers(shape, const_shape) -> bool:
    """Whether a tensor of the known `shape` broadcast with `const_shape` keeps its shape."""
    if shape is None or len(const_shape) > len(shape):
        return False
    tail = shape[len(shape) - len(const_shape):]
    return all(c == 1 or d == c for d, c in zip(tail, const_shape))


def remove_identities(g: OnnxGraph, only: Optional[Sequence[str]] = None) -> int:
    """Remove pass-through nodes (of the op types `only`, if given); return how many."""
    removed = 0
    pinned = g.pinned           # no rewrite here changes what is pinned
    for node in g.of_type(*(only or _CANDIDATES)):
        if node.graph is not g:
            continue
        x = _aliased_input(g, node)
        if x is None or not x:
            continue
        y = node.output[0]
        if y not in pinned:
            g.replace_uses(y, x)
            g.remove(node)
        else:
            # y must keep its name (a graph output): the producer of x writes y instead,
            # and x's other readers read y.
            source = g.producer(x)
            if source is None or x in pinned or x in g.inputs:
                continue
            g.remove(node, keep_uses=True)
            g.rename_output(source, source.output.index(x), y)
            g.replace_uses(x, y)
        removed += 1
    return removed
