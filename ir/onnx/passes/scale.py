"""Scale sinking on the lowered ONNX graph: a Mul (or Div) by a constant per-channel (or
scalar) scale s that no producer can absorb moves forward into the weights of the Convs,
Gemms or MatMuls reading it, through ops s commutes with. DenseNet's pre-activation batch
norm is Concat -> Mul(s) -> Add(t) -> Relu -> Conv: s*x + t = s*(x + t/s), Relu(s*z) =
s*Relu(z) for s > 0, and Conv(s*z) scales its weights per input channel (exact with zero
padding). Passed through: Add/Sub of a constant (divided by s), Mul/Div by a constant,
Relu/LeakyRelu/MaxPool (every s > 0), AveragePool, global pools (and their Flatten),
ReduceMean of other axes, zero Pad of other axes, Transpose; each value on the way has one
reader. Then the per-channel Adds/Subs left go into the biases of the Convs and Gemms
reading them where that is exact, or become a BatchNormalization onnxruntime runs in its
blocked layout (passes/shift.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Set

import numpy as np

from tf2ir.ir.onnx.graph import OnnxGraph, OnnxNode
from tf2ir.ir.onnx.passes.channels import (ARITHMETIC, ChannelFacts, Scale, broadcast_fits,
                                           channel_scale, const_operand)
from tf2ir.ir.onnx.passes.shift import fold_shift, shift_as_batch_norm

__all__ = ["sink_scales_into_weights", "channel_scale", "Scale"]

_POSITIVE_ONLY = {"Relu", "LeakyRelu", "MaxPool", "GlobalMaxPool"}


@dataclass
class _Path:
    steps: List[OnnxNode] = field(default_factory=list)
    scales: List[Scale] = field(default_factory=list)   # the scale on each step's input
    absorbers: List[OnnxNode] = field(default_factory=list)
    last: Optional[Scale] = None


class _Sinker:
    def __init__(self, g: OnnxGraph, facts: ChannelFacts):
        self.g = g
        self.facts = facts
        self.failed: Set[tuple] = set()     # (value, kind of scale) whose way failed

    def passes_through(self, node: OnnxNode, v: str, scale: Scale) -> Optional[Scale]:
        """The scale on `node`'s output when `node` commutes with `scale` on input `v`."""
        op = node.op_type
        if not node.standard or len(node.output) != 1:
            return None
        if op not in ARITHMETIC and node.input[0] != v:
            return None
        positive = bool(np.all(scale.s > 0))
        if op in _POSITIVE_ONLY and not positive:
            return None
        if op in ARITHMETIC:
            found = const_operand(self.g, node, v)
            if found is None or found[1].ndim > scale.rank or found[1].dtype != scale.s.dtype \
                    or (op in ("Add", "Sub") and not broadcast_fits((found[1], scale.full()))):
                return None   # an Add's constant is divided by the scale (bounded: docs, Limits)
            return None if op == "Div" and found[0] == 0 else scale   # c / (s*x): no scale
        if op in ("Relu", "LeakyRelu"):
            return scale
        if op in ("MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"):
            return scale if scale.axis in (None, 1) else None
        if op == "Flatten":       # of a global pool's (N, C, 1, ...): C stays axis 1
            source = self.g.producer(v)
            if node.attr("axis", 1) != 1 or scale.axis not in (None, 1) or source is None \
                    or source.op_type not in ("GlobalAveragePool", "GlobalMaxPool"):
                return None
            return Scale(scale.s, scale.axis, 2)
        if op == "Transpose":
            perm = node.attr("perm")
            if perm is None or len(perm) != scale.rank:
                return None
            return Scale(scale.s, None if scale.axis is None else list(perm).index(scale.axis),
                         scale.rank)
        if op == "Pad":
            return self.through_pad(node, scale)
        if op == "ReduceMean":
            return self.through_reduce(node, scale)
        return None

    def through_pad(self, node: OnnxNode, scale: Scale) -> Optional[Scale]:
        mode = node.attr("mode", b"constant")
        if mode not in (b"constant", "constant") or len(node.input) < 2 \
                or (len(node.input) > 3 and node.input[3]):
            return None
        pads = self.g.const(node.input[1])
        value = self.g.const(node.input[2]) if len(node.input) > 2 and node.input[2] \
            else np.zeros(1)
        if pads is None or value is None or np.any(value != 0) or pads.size != 2 * scale.rank:
            return None
        if scale.axis is not None and (pads[scale.axis] or pads[scale.rank + scale.axis]):
            return None
        return scale

    def through_reduce(self, node: OnnxNode, scale: Scale) -> Optional[Scale]:
        if len(node.input) > 1 and node.input[1]:
            axes = self.g.const(node.input[1])
        else:
            axes = node.attr("axes")
        if axes is None or len(np.atleast_1d(axes)) == 0:
            return None             # all axes (or none): leave it
        picked = sorted(int(a) % scale.rank for a in np.atleast_1d(axes))
        if scale.axis in picked:
            return None
        if node.attr("keepdims", 1):
            return scale
        rank = scale.rank - len(picked)
        axis = None if scale.axis is None else scale.axis - sum(a < scale.axis for a in picked)
        return Scale(scale.s, axis, rank)

    def absorbs(self, node: OnnxNode, v: str, scale: Scale) -> bool:
        """Whether `node` reads `v` only as its data input and can take `scale` into its
        constant weights."""
        if not node.standard or node.input[0] != v or node.input.count(v) != 1 \
                or len(node.input) < 2:
            return False
        w = self.g.const(node.input[1])
        if w is None or w.dtype != scale.s.dtype:
            return False
        n = scale.s.size
        if node.op_type == "Conv":
            group = node.attr("group", 1)
            return w.ndim >= 3 and scale.axis in (None, 1) and (n == 1 or w.shape[1] * group == n)
        if node.op_type == "Gemm":
            k = w.shape[1] if node.attr("transB", 0) else w.shape[0]
            return not node.attr("transA", 0) and w.ndim == 2 and scale.rank == 2 \
                and scale.axis in (None, 1) and (n == 1 or k == n)
        if node.op_type == "MatMul":
            return w.ndim == 2 and scale.rank >= 2 and scale.axis in (None, scale.rank - 1) \
                and (n == 1 or w.shape[0] == n)
        return False

    def follow(self, v: str, scale: Scale) -> Optional[_Path]:
        """The way from `v` (which carries `scale`) to nodes that absorb it, or None. A way
        that failed fails again for any scale of the same kind (rewrites only add readers),
        so each value is walked once per kind: the pass stays linear on long chains."""
        g, path = self.g, _Path()
        seen: List[tuple] = []
        while True:
            key = (v, scale.axis, scale.rank, scale.s.size, scale.s.dtype.str,
                   bool(np.all(scale.s > 0)))
            readers = g.users(v)
            if key in self.failed or not readers or g.is_pinned(v):
                self.failed.update(seen)
                return None
            seen.append(key)
            if all(self.absorbs(r, v, scale) for r in readers):
                path.absorbers, path.last = readers, scale
                return path
            after = self.passes_through(readers[0], v, scale) if g.use_count(v) == 1 else None
            if after is None:
                self.failed.update(seen)
                return None
            path.steps.append(readers[0])
            path.scales.append(scale)
            v, scale = readers[0].output[0], after

    def rewrite(self, mul: OnnxNode, x: str, path: _Path) -> None:
        g = self.g
        for step, scale in zip(path.steps, path.scales):
            if step.op_type in ("Add", "Sub"):
                pos = 1 if g.const(step.input[1]) is not None else 0
                c = g.const(step.input[pos])
                assert c is not None
                g.set_input(step, pos, g.add_initializer(
                    np.ascontiguousarray((c / scale.full()).astype(c.dtype)), "shift_unscaled"))
        last = path.last
        assert last is not None
        for node in path.absorbers:
            w = g.const(node.input[1])
            assert w is not None
            if node.op_type == "Conv":
                group = node.attr("group", 1)
                if last.s.size == 1:
                    scaled = w * last.s[0]
                else:
                    per_group = last.s.reshape(group, 1, -1)
                    grouped = w.reshape((group, w.shape[0] // group) + w.shape[1:])
                    factors = per_group.reshape(per_group.shape + (1,) * (w.ndim - 2))
                    scaled = (grouped * factors).reshape(w.shape)
            elif node.op_type == "Gemm" and node.attr("transB", 0):
                scaled = w * last.s.reshape(1, -1)
            else:
                scaled = w * last.s.reshape(-1, 1)
            g.set_input(node, 1, g.add_initializer(
                np.ascontiguousarray(scaled.astype(w.dtype)), "weight_scaled"))
        g.replace_uses(mul.output[0], x)
        g.remove(mul)

    def sink(self, mul: OnnxNode) -> bool:
        g = self.g
        if len(mul.input) != 2 or len(mul.output) != 1:
            return False
        for pos in ((1,) if mul.op_type == "Div" else (1, 0)):
            x, c = mul.input[1 - pos], g.const(mul.input[pos])
            if c is None or g.const(x) is not None or x == mul.input[pos]:
                continue
            if mul.op_type == "Div":      # x / c is x times 1 / c
                with np.errstate(all="ignore"):
                    c = (np.ones((), c.dtype) / c).astype(c.dtype)
            rank = self.facts.rank(x)
            scale = channel_scale(c, rank) if rank else None
            if scale is None or not np.all(np.isfinite(scale.s)) or np.any(scale.s == 0):
                continue
            try:
                known = scale.axis is None or self.facts.channels(x, scale.axis) == scale.s.size
            except RecursionError:      # a very deep chain of producers: leave it
                known = False
            if not known:
                continue        # x might broadcast against the scale: not shape-preserving
            path = self.follow(mul.output[0], scale)
            if path is not None:
                self.rewrite(mul, x, path)
                return True
        return False


def sink_scales_into_weights(g: OnnxGraph) -> int:
    """Move constant per-channel Muls forward into Conv/Gemm/MatMul weights, and constant
    per-channel Adds into the biases of unpadded Convs and Gemms reading them (the others
    of a channels-blocked value as BatchNormalization); return how many nodes went or
    changed."""
    facts = ChannelFacts(g)
    sinker = _Sinker(g, facts)
    count = 0
    for node in g.of_type("Mul", "Div"):
        if node.graph is g:
            count += sinker.sink(node)
    for node in g.of_type("Add", "Sub"):
        if node.graph is g:
            count += fold_shift(g, facts, node) or shift_as_batch_norm(g, facts, node)
    return count
