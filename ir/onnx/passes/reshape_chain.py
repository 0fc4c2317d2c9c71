"""Reshape chains merged: a Reshape, Squeeze, Unsqueeze or Flatten that reads the result of
another of them, and whose own result's shape is statically known, becomes one Reshape of the
first one's input to that shape (exporters write Reshape -> Unsqueeze, Reshape -> Squeeze);
the inner node goes when nothing else reads it (dead-code elimination)."""

from __future__ import annotations

import numpy as np
from onnx import helper

_SHAPING = ("Reshape", "Squeeze", "Unsqueeze", "Flatten")


def merge_reshape_chains(g) -> int:
    """Merge each shaping node into the shaping node it reads; return how many."""
    producers = g.producers()
    merged = 0
    for i, node in enumerate(g.nodes):
        if node.op_type not in _SHAPING or node.domain not in ("", "ai.onnx") \
                or len(node.output) != 1 or not node.input:
            continue
        inner = producers.get(node.input[0])
        if inner is None or inner.op_type not in _SHAPING or inner.domain not in ("", "ai.onnx"):
            continue
        shape = g.shapes.get(node.output[0])
        if any(str(g.dtypes.get(n, "")).startswith("complex")
               for n in (node.output[0], inner.input[0])):
            continue               # tf2ir lowers a complex tensor with a trailing pair axis
        if shape is None or any(d is None or d <= 0 for d in shape):
            continue                       # unknown, or a 0 Reshape would read as "keep"
        target = g.add_initializer(np.array(shape, dtype=np.int64), f"{node.output[0]}_shape")
        g.nodes[i] = helper.make_node("Reshape", [inner.input[0], target], list(node.output),
                                      name=node.name)
        producers[node.output[0]] = g.nodes[i]
        merged += 1
    return merged
