"""Shape arithmetic on statically known shapes folded (the idiom of tf2onnx's and PyTorch's
exports: Shape -> Gather -> Unsqueeze -> Concat -> Reshape, ReduceProd of dims): a Shape (with
its start/end) or Size of a tensor whose shape is fully known becomes a constant, as does a
Reduce{Prod,Sum,Min,Max} of integer constants; constant folding then runs on what they feed,
until nothing more is known. A node made constant goes: its readers read a new initializer
holding its value."""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional

import numpy as np

from tf2ir.ir.onnx.graph import OnnxGraph, OnnxNode

_REDUCE: Dict[str, Callable[..., Any]] = {"ReduceProd": np.prod, "ReduceSum": np.sum,
                                           "ReduceMin": np.min, "ReduceMax": np.max}


def _static_shape(g: OnnxGraph, name: str) -> Optional[tuple]:
    shape = g.shapes.get(name)
    if str(g.dtypes.get(name, "")).startswith("complex"):
        return None             # tf2ir lowers a complex tensor with a trailing pair axis
    if shape is None or any(d is None or d < 0 for d in shape):
        return None
    return tuple(int(d) for d in shape)


def _shape_value(g: OnnxGraph, node: OnnxNode) -> Optional[np.ndarray]:
    shape = _static_shape(g, node.input[0]) if node.input else None
    if shape is None:
        return None
    if node.op_type == "Size":
        return np.array(int(np.prod(shape, dtype=np.int64)), dtype=np.int64)
    rank = len(shape)
    start, end = node.attr("start", 0), node.attr("end", rank)
    start = min(max(start + rank if start < 0 else start, 0), rank)
    end = min(max(end + rank if end < 0 else end, 0), rank)
    return np.array(shape[start:end], dtype=np.int64)


def _reduce_value(g: OnnxGraph, node: OnnxNode) -> Optional[np.ndarray]:
    x = g.const(node.input[0]) if node.input else None
    if x is None or x.dtype.kind not in "iu" or x.size > 64:
        return None
    axes = g.const(node.input[1]) if len(node.input) > 1 and node.input[1] else None
    keepdims = bool(node.attr("keepdims", 1))
    if axes is None or axes.size == 0:
        if len(node.input) > 1 and node.input[1] and axes is None:
            return None                      # axes computed at run time
        if axes is not None and node.attr("noop_with_empty_axes", 0):
            return x
        axis = None
    else:
        axis = tuple(int(a) % max(x.ndim, 1) for a in axes.reshape(-1))
    if x.size == 0 and node.op_type in ("ReduceMin", "ReduceMax"):
        return None
    return np.asarray(_REDUCE[node.op_type](x, axis=axis, keepdims=keepdims), dtype=x.dtype)


def _fold(g: OnnxGraph) -> int:
    """Constant folding as its pass record runs it (on this graph, or through the adapter
    while ir/onnx/passes/fold.py is written on the old graph)."""
    from tf2ir.ir.onnx.passes import ONNX_PASSES
    return next(r.run for r in ONNX_PASSES if r.name == "fold")(g)


def fold_static_shapes(g: OnnxGraph) -> int:
    """Make Shape/Size of fully known shapes and integer reductions of constants constant,
    folding what they feed after each round; return how many nodes became constants."""
    total = 0
    while True:
        made = 0
        for node in g.of_type("Shape", "Size", *_REDUCE):
            out = node.output[0] if len(node.output) == 1 else ""
            if not out or g.is_pinned(out):
                continue
            value = _shape_value(g, node) if node.op_type in ("Shape", "Size") \
                else _reduce_value(g, node)
            if value is None:
                continue
            g.replace_uses(out, g.add_initializer(value, out))
            g.remove(node)
            made += 1
        if not made:
            return total
        total += made + _fold(g)
