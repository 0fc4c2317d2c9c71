"""Activation fusion on the lowered ONNX graph (MobileNetV3's hard-swish and hard-sigmoid):

- Mul(x, HardSigmoid(x; alpha 1/6, beta 1/2)) is ONNX HardSwish(x), one kernel;
- Clip(z, 0, hi) * k with k * hi = 1 (relu6(z + 3) / 6 once the + 3 went into a Conv's
  bias) is HardSigmoid(z; alpha k, beta 0)."""

from __future__ import annotations

from typing import Optional

import numpy as np
import onnx

from tf2ir.ir.onnx.passes.lowered import LoweredGraph, attr_value

_STANDARD = ("", "ai.onnx")


def _scalar(g: LoweredGraph, name: str) -> Optional[float]:
    c = g.const(name)
    return float(c.reshape(-1)[0]) if c is not None and c.size == 1 and c.dtype.kind == "f" \
        else None


def _clip_bounds(g: LoweredGraph, clip: onnx.NodeProto):
    low = _scalar(g, clip.input[1]) if len(clip.input) > 1 and clip.input[1] else None
    high = _scalar(g, clip.input[2]) if len(clip.input) > 2 and clip.input[2] else None
    return low, high


def fuse_hard_activations(g: LoweredGraph) -> int:
    """Rewrite the two patterns in place; return how many nodes went."""
    users = g.consumers()
    producers = g.producers()
    dead: set = set()
    for node in g.nodes:
        if node.op_type != "Mul" or node.domain not in _STANDARD or len(node.input) != 2 \
                or id(node) in dead:
            continue
        for pos in (0, 1):
            source = producers.get(node.input[pos])
            other = node.input[1 - pos]
            if source is None or id(source) in dead or source.domain not in _STANDARD \
                    or source.output[0] in g.pinned or len(users.get(source.output[0], [])) != 1:
                continue
            if source.op_type == "HardSigmoid" and source.input[0] == other \
                    and np.isclose(attr_value(source, "alpha", 0.2), 1 / 6, rtol=1e-6) \
                    and np.isclose(attr_value(source, "beta", 0.5), 0.5, rtol=1e-6):
                del node.input[:]
                node.input.append(other)
                node.op_type = "HardSwish"
                dead.add(id(source))
                break
            k = _scalar(g, other)
            if source.op_type == "Clip" and k is not None and k > 0:
                low, high = _clip_bounds(g, source)
                if low == 0.0 and high is not None and np.isclose(k * high, 1.0, rtol=1e-6):
                    z = source.input[0]
                    del node.input[:]
                    node.input.append(z)
                    node.op_type = "HardSigmoid"
                    node.attribute.extend([onnx.helper.make_attribute("alpha", k),
                                           onnx.helper.make_attribute("beta", 0.0)])
                    dead.add(id(source))
                    break
    g.keep_only(dead)
    return len(dead)
