"""Activation fusion on the lowered ONNX graph (MobileNetV3's hard-swish and hard-sigmoid):

- Mul(x, HardSigmoid(x; alpha 1/6, beta 1/2)) is ONNX HardSwish(x), one kernel;
- Clip(z, 0, hi) * k with k * hi = 1 (relu6(z + 3) / 6 once the + 3 went into a Conv's
  bias) is HardSigmoid(z; alpha k, beta 0).

The Mul is turned into the fused op in place (same output, same place) and the
HardSigmoid or Clip it alone read goes."""

from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

from tf2ir.ir.onnx.graph import OnnxGraph, OnnxNode


def _scalar(g: OnnxGraph, name: str) -> Optional[float]:
    c = g.const(name)
    return float(c.reshape(-1)[0]) if c is not None and c.size == 1 and c.dtype.kind == "f" \
        else None


def _clip_bounds(g: OnnxGraph, clip: OnnxNode) -> Tuple[Optional[float], Optional[float]]:
    low = _scalar(g, clip.input[1]) if len(clip.input) > 1 and clip.input[1] else None
    high = _scalar(g, clip.input[2]) if len(clip.input) > 2 and clip.input[2] else None
    return low, high


def _fused(g: OnnxGraph, source: OnnxNode, other: str):
    """(op type, input, attributes) of the fused op for Mul(source's output, other), or None."""
    if source.op_type == "HardSigmoid" and source.input[0] == other \
            and np.isclose(source.attr("alpha", 0.2), 1 / 6, rtol=1e-6) \
            and np.isclose(source.attr("beta", 0.5), 0.5, rtol=1e-6):
        return "HardSwish", other, {}
    k = _scalar(g, other)
    if source.op_type == "Clip" and k is not None and k > 0:
        low, high = _clip_bounds(g, source)
        if low == 0.0 and high is not None and np.isclose(k * high, 1.0, rtol=1e-6):
            return "HardSigmoid", source.input[0], {"alpha": k, "beta": 0.0}
    return None


def fuse_hard_activations(g: OnnxGraph) -> int:
    """Rewrite the two patterns in place; return how many nodes went."""
    removed = 0
    for node in g.of_type("Mul"):
        if len(node.input) != 2:
            continue
        for pos in (0, 1):
            source = g.producer(node.input[pos])
            if source is None or not source.standard or not source.input \
                    or g.only_user(source.output[0]) is not node:
                continue
            fused = _fused(g, source, node.input[1 - pos])
            if fused is not None:
                op_type, x, attrs = fused
                g.set_op(node, op_type, [x], attrs=attrs)
                g.remove(source)
                removed += 1
                break
    return removed
