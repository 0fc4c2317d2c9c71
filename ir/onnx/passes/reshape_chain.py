"""Reshape chains merged: a Reshape, Squeeze, Unsqueeze or Flatten that reads the result of
another of them, and whose own result's shape is statically known, becomes one Reshape of the
first one's input to that shape (exporters write Reshape -> Unsqueeze, Reshape -> Squeeze):
the outer node is morphed in place (same output, same place), and the inner node goes when
nothing else reads it (dead-code elimination)."""

from __future__ import annotations

import numpy as np

from tf2ir.ir.onnx.graph import OnnxGraph

_SHAPING = ("Reshape", "Squeeze", "Unsqueeze", "Flatten")


def merge_reshape_chains(g: OnnxGraph) -> int:
    """Merge each shaping node into the shaping node it reads; return how many."""
    merged = 0
    for node in g.of_type(*_SHAPING):      # graph order: a chain merges from its start
        if len(node.output) != 1 or not node.input:
            continue
        inner = g.producer(node.input[0])
        if inner is None or inner.op_type not in _SHAPING or not inner.standard:
            continue
        shape = g.shapes.get(node.output[0])
        if any(str(g.dtypes.get(n, "")).startswith("complex")
               for n in (node.output[0], inner.input[0])):
            continue               # tf2ir lowers a complex tensor with a trailing pair axis
        if shape is None or any(d is None or d <= 0 for d in shape):
            continue                       # unknown, or a 0 Reshape would read as "keep"
        target = g.add_initializer(np.array(shape, dtype=np.int64), f"{node.output[0]}_shape")
        g.set_op(node, "Reshape", [inner.input[0], target], attrs={})
        merged += 1
    return merged
