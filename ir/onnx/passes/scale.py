"""Scale sinking on the lowered ONNX graph: a Mul (or Div) by a constant per-channel (or
scalar) scale s that no producer can absorb moves forward into the weights of the Convs,
Gemms or MatMuls reading it, through ops s commutes with. DenseNet's pre-activation batch
norm is Concat -> Mul(s) -> Add(t) -> Relu -> Conv: s*x + t = s*(x + t/s), Relu(s*z) =
s*Relu(z) for s > 0, and Conv(s*z) scales its weights per input channel (exact with zero
padding). Passed through: Add/Sub of a constant (divided by s), Mul/Div by a constant,
Relu/LeakyRelu/MaxPool (every s > 0), AveragePool, global pools (and their Flatten),
ReduceMean of other axes, zero Pad of other axes, Transpose; each value on the way has one
reader. A per-channel Add/Sub read only by unpadded Convs or Gemms (directly or through one
Transpose) goes into their biases; with padding it cannot (padded zeros would become -t)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Tuple

import numpy as np
import onnx

from tf2ir.ir.onnx.passes.lowered import LoweredGraph, attr_value, broadcast_fits, set_attr

_STANDARD = ("", "ai.onnx")
_POSITIVE_ONLY = {"Relu", "LeakyRelu", "MaxPool", "GlobalMaxPool"}
_SAME_SHAPE = {"Relu", "LeakyRelu", "Sigmoid", "Tanh", "Clip", "Elu", "Selu", "HardSigmoid",
               "HardSwish", "Softplus", "Erf", "Identity", "Neg", "Abs", "Exp", "Sqrt",
               "BatchNormalization"}
_SAME_RANK = _SAME_SHAPE | {"Conv", "MaxPool", "AveragePool", "GlobalAveragePool",
                            "GlobalMaxPool", "Concat", "Pad", "Transpose"}


@dataclass
class Scale:
    """A scale `s` (one value per channel, or one value) along `axis` of a rank-`rank`
    tensor; axis None for a scalar."""
    s: np.ndarray
    axis: Optional[int]
    rank: int

    def full(self) -> np.ndarray:
        """`s` shaped to broadcast against the rank-`rank` tensor it scales."""
        if self.axis is None:
            return self.s.reshape(())
        shape = [1] * self.rank
        shape[self.axis] = self.s.size
        return self.s.reshape(shape)


def channel_scale(c: np.ndarray, rank: int) -> Optional[Scale]:
    """`c` as a Scale when, broadcast against a rank-`rank` tensor, it varies along one
    axis at most and adds no dims; else None."""
    if c.ndim > rank or c.dtype.kind != "f":
        return None
    if c.size == 1:
        return Scale(c.reshape(-1), None, rank)
    varying = [i for i, d in enumerate(c.shape) if d != 1]
    if len(varying) != 1:
        return None
    return Scale(c.reshape(-1), rank - c.ndim + varying[0], rank)


@dataclass
class _Path:
    steps: List[onnx.NodeProto] = field(default_factory=list)
    scales: List[Scale] = field(default_factory=list)   # the scale on each step's input
    absorbers: List[onnx.NodeProto] = field(default_factory=list)
    last: Optional[Scale] = None


class _Sinker:
    def __init__(self, g: LoweredGraph):
        self.g = g
        self.users = g.consumers()
        self.producers = g.producers()
        self.memo: dict = {}
        self.dead: set = set()

    def channels(self, name: str, axis: int) -> Optional[int]:
        """The size of dim `axis` of `name` where the producers tell it (Conv, Gemm, MatMul
        weights; Concat sums; elementwise and pooling ops keep it), else None."""
        key = (name, axis)
        if key not in self.memo:
            self.memo[key] = None               # a cycle or a failure: unknown
            self.memo[key] = self._channels(name, axis)
        return self.memo[key]

    def rank(self, name: str) -> Optional[int]:
        """`name`'s rank, known or kept from the data input by a rank-keeping producer."""
        for _ in range(64):
            rank = self.g.rank(name)
            node = self.producers.get(name)
            if rank is not None or node is None or not node.input or node.domain not in _STANDARD:
                return rank
            if node.op_type in ("Add", "Sub", "Mul", "Div") and len(node.input) == 2:
                consts = [self.g.const(i) for i in node.input]   # x op c keeps x's rank
                if (consts[0] is None) == (consts[1] is None):
                    return None
                c, name = (consts[1], node.input[0]) if consts[0] is None else (consts[0], node.input[1])
                assert c is not None
                rank = self.rank(name)
                return rank if rank is not None and c.ndim <= rank else None
            if node.op_type not in _SAME_RANK:
                return None
            name = node.input[0]
        return None

    def _channels(self, name: str, axis: int) -> Optional[int]:
        g = self.g
        c = g.const(name)
        if c is not None:
            return c.shape[axis] if axis < c.ndim else None
        shape = g.shapes.get(name)
        if shape is not None and axis < len(shape) and shape[axis] is not None:
            return shape[axis]
        node = self.producers.get(name)
        if node is None or node.domain not in _STANDARD or len(node.output) != 1:
            return None
        op, rank = node.op_type, self.rank(name)
        w = g.const(node.input[1]) if len(node.input) > 1 else None
        if op == "Conv" and axis == 1:
            return w.shape[0] if w is not None else None
        if op == "Gemm" and axis == 1 and w is not None and w.ndim == 2:
            return w.shape[0] if attr_value(node, "transB", 0) else w.shape[1]
        if op == "MatMul" and rank and axis == rank - 1 and w is not None and w.ndim == 2:
            return w.shape[1]
        if op == "Concat":
            if rank is None or int(attr_value(node, "axis", 0)) % rank != axis:
                return self.channels(node.input[0], axis)
            sizes = [self.channels(i, axis) for i in node.input]
            known = [n for n in sizes if n is not None]
            return sum(known) if len(known) == len(sizes) else None
        if op in ("MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool") and axis == 1:
            return self.channels(node.input[0], axis)
        if op in _SAME_SHAPE:
            return self.channels(node.input[0], axis)
        if op == "Transpose":
            perm = attr_value(node, "perm")
            return self.channels(node.input[0], perm[axis]) if perm and axis < len(perm) else None
        if op == "Flatten" and axis == 1 and attr_value(node, "axis", 1) == 1:
            source = self.producers.get(node.input[0])
            if source is not None and source.op_type in ("GlobalAveragePool", "GlobalMaxPool"):
                return self.channels(node.input[0], 1)
        if op == "Pad" and rank and len(node.input) > 1:
            pads = g.const(node.input[1])
            if pads is not None and pads.size == 2 * rank and not pads[axis] and not pads[rank + axis]:
                return self.channels(node.input[0], axis)
        if op in ("Add", "Sub", "Mul", "Div") and len(node.input) == 2 and rank:
            factors: List[int] = []
            for operand in node.input:
                r = self.rank(operand)
                if r is None:
                    return None
                size = 1 if axis < rank - r else self.channels(operand, axis - (rank - r))
                if size is None:
                    return None
                factors.append(size)
            return max(factors) if min(factors) in (1, max(factors)) else None
        return None

    def const_operand(self, node: onnx.NodeProto, v: str) -> Optional[Tuple[int, np.ndarray]]:
        """(position, value) of the constant other operand of a binary `node` reading `v`."""
        if len(node.input) != 2 or list(node.input).count(v) != 1:
            return None
        pos = 1 - list(node.input).index(v)
        c = self.g.const(node.input[pos])
        return None if c is None else (pos, c)

    def passes_through(self, node: onnx.NodeProto, v: str, scale: Scale) -> Optional[Scale]:
        """The scale on `node`'s output when `node` commutes with `scale` on input `v`."""
        op = node.op_type
        if node.domain not in _STANDARD or len(node.output) != 1 or id(node) in self.dead:
            return None
        if op not in ("Add", "Sub", "Mul", "Div") and node.input[0] != v:
            return None
        positive = bool(np.all(scale.s > 0))
        if op in _POSITIVE_ONLY and not positive:
            return None
        if op in ("Add", "Sub", "Mul", "Div"):
            found = self.const_operand(node, v)
            if found is None or found[1].ndim > scale.rank or found[1].dtype != scale.s.dtype \
                    or (op in ("Add", "Sub") and not broadcast_fits((found[1], scale.full()))):
                return None   # an Add's constant is divided by the scale: bounded (README)
            return None if op == "Div" and found[0] == 0 else scale   # c / (s*x): no scale
        if op in ("Relu", "LeakyRelu"):
            return scale
        if op in ("MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"):
            return scale if scale.axis in (None, 1) else None
        if op == "Flatten":       # of a global pool's (N, C, 1, ...): C stays axis 1
            source = self.producers.get(v)
            if attr_value(node, "axis", 1) != 1 or scale.axis not in (None, 1) or source is None \
                    or source.op_type not in ("GlobalAveragePool", "GlobalMaxPool"):
                return None
            return Scale(scale.s, scale.axis, 2)
        if op == "Transpose":
            perm = attr_value(node, "perm")
            if perm is None or len(perm) != scale.rank:
                return None
            return Scale(scale.s, None if scale.axis is None else list(perm).index(scale.axis),
                         scale.rank)
        if op == "Pad":
            return self.through_pad(node, scale)
        if op == "ReduceMean":
            return self.through_reduce(node, scale)
        return None

    def through_pad(self, node: onnx.NodeProto, scale: Scale) -> Optional[Scale]:
        mode = attr_value(node, "mode", b"constant")
        if mode not in (b"constant", "constant") or len(node.input) < 2 \
                or (len(node.input) > 3 and node.input[3]):
            return None
        pads = self.g.const(node.input[1])
        value = self.g.const(node.input[2]) if len(node.input) > 2 and node.input[2] else np.zeros(1)
        if pads is None or value is None or np.any(value != 0) or pads.size != 2 * scale.rank:
            return None
        if scale.axis is not None and (pads[scale.axis] or pads[scale.rank + scale.axis]):
            return None
        return scale

    def through_reduce(self, node: onnx.NodeProto, scale: Scale) -> Optional[Scale]:
        if len(node.input) > 1 and node.input[1]:
            axes = self.g.const(node.input[1])
        else:
            axes = attr_value(node, "axes")
        if axes is None or len(np.atleast_1d(axes)) == 0:
            return None             # all axes (or none): leave it
        picked = sorted(int(a) % scale.rank for a in np.atleast_1d(axes))
        if scale.axis in picked:
            return None
        if attr_value(node, "keepdims", 1):
            return scale
        rank = scale.rank - len(picked)
        axis = None if scale.axis is None else scale.axis - sum(a < scale.axis for a in picked)
        return Scale(scale.s, axis, rank)

    def absorbs(self, node: onnx.NodeProto, v: str, scale: Scale) -> bool:
        """Whether `node` reads `v` only as its data input and can take `scale` into its
        constant weights."""
        if node.domain not in _STANDARD or id(node) in self.dead or node.input[0] != v \
                or list(node.input).count(v) != 1 or len(node.input) < 2:
            return False
        w = self.g.const(node.input[1])
        if w is None or w.dtype != scale.s.dtype:
            return False
        n = scale.s.size
        if node.op_type == "Conv":
            group = attr_value(node, "group", 1)
            return w.ndim >= 3 and scale.axis in (None, 1) and (n == 1 or w.shape[1] * group == n)
        if node.op_type == "Gemm":
            k = w.shape[1] if attr_value(node, "transB", 0) else w.shape[0]
            return not attr_value(node, "transA", 0) and w.ndim == 2 and scale.rank == 2 \
                and scale.axis in (None, 1) and (n == 1 or k == n)
        if node.op_type == "MatMul":
            return w.ndim == 2 and scale.rank >= 2 and scale.axis in (None, scale.rank - 1) \
                and (n == 1 or w.shape[0] == n)
        return False

    def follow(self, v: str, scale: Scale) -> Optional[_Path]:
        """The way from `v` (which carries `scale`) to nodes that absorb it, or None."""
        path = _Path()
        while True:
            readers = self.users.get(v, [])
            if v in self.g.pinned or not readers:
                return None
            if all(self.absorbs(r, v, scale) for r in readers):
                path.absorbers, path.last = list(readers), scale
                return path
            if len(readers) != 1:
                return None
            step = readers[0]
            after = self.passes_through(step, v, scale)
            if after is None:
                return None
            path.steps.append(step)
            path.scales.append(scale)
            v, scale = step.output[0], after

    def rewrite(self, mul: onnx.NodeProto, x: str, path: _Path) -> None:
        g = self.g
        for step, scale in zip(path.steps, path.scales):
            if step.op_type in ("Add", "Sub"):
                pos = 1 if g.const(step.input[1]) is not None else 0
                c = g.const(step.input[pos])
                assert c is not None
                step.input[pos] = g.add_initializer(
                    np.ascontiguousarray((c / scale.full()).astype(c.dtype)), "shift_unscaled")
        last = path.last
        assert last is not None
        for node in path.absorbers:
            w = g.const(node.input[1])
            assert w is not None
            if node.op_type == "Conv":
                group = attr_value(node, "group", 1)
                if last.s.size == 1:
                    scaled = w * last.s[0]
                else:
                    per_group = last.s.reshape(group, 1, -1)
                    grouped = w.reshape((group, w.shape[0] // group) + w.shape[1:])
                    factors = per_group.reshape(per_group.shape + (1,) * (w.ndim - 2))
                    scaled = (grouped * factors).reshape(w.shape)
            elif node.op_type == "Gemm" and attr_value(node, "transB", 0):
                scaled = w * last.s.reshape(1, -1)
            else:
                scaled = w * last.s.reshape(-1, 1)
            node.input[1] = g.add_initializer(np.ascontiguousarray(scaled.astype(w.dtype)),
                                              "weight_scaled")
        y = mul.output[0]
        for reader in self.users.get(y, []):
            for i, name in enumerate(reader.input):
                if name == y:
                    reader.input[i] = x
        self.users.setdefault(x, []).extend(self.users.pop(y, []))
        self.users[x] = [n for n in self.users[x] if n is not mul]
        self.dead.add(id(mul))

    def sink(self, mul: onnx.NodeProto) -> bool:
        g = self.g
        if mul.domain not in _STANDARD or len(mul.input) != 2 or len(mul.output) != 1:
            return False
        for pos in ((1,) if mul.op_type == "Div" else (1, 0)):
            x, c = mul.input[1 - pos], g.const(mul.input[pos])
            if c is None or g.const(x) is not None or x == mul.input[pos]:
                continue
            if mul.op_type == "Div":      # x / c is x times 1 / c
                with np.errstate(all="ignore"):
                    c = (np.ones((), c.dtype) / c).astype(c.dtype)
            rank = self.rank(x)
            scale = channel_scale(c, rank) if rank else None
            if scale is None or not np.all(np.isfinite(scale.s)) or np.any(scale.s == 0):
                continue
            try:
                known = scale.axis is None or self.channels(x, scale.axis) == scale.s.size
            except RecursionError:      # a very deep chain of producers: leave it
                known = False
            if not known:
                continue        # x might broadcast against the scale: not shape-preserving
            path = self.follow(mul.output[0], scale)
            if path is not None:
                self.rewrite(mul, x, path)
                return True
        return False

    def shift_absorbed(self, node: onnx.NodeProto, v: str, t: np.ndarray,
                       rank: int) -> Optional[np.ndarray]:
        """The bias that a Conv without padding or a Gemm reading `v` = x + t (t per
        channel) needs so that it may read x instead; None where it cannot. A padded
        Conv cannot: its zero padding would become -t."""
        if node.domain not in _STANDARD or id(node) in self.dead or node.input[0] != v \
                or list(node.input).count(v) != 1 or len(node.input) < 2:
            return None
        w = self.g.const(node.input[1])
        b = self.g.const(node.input[2]) if len(node.input) > 2 and node.input[2] else None
        if w is None or w.dtype != t.dtype or (len(node.input) > 2 and node.input[2] and b is None):
            return None
        if node.op_type == "Conv":
            group = attr_value(node, "group", 1)
            pads = attr_value(node, "pads", None) or []
            if w.ndim != rank or w.shape[1] * group != t.size or any(pads) \
                    or attr_value(node, "auto_pad", b"NOTSET") not in (b"NOTSET", b"VALID"):
                return None
            grouped = w.reshape((group, w.shape[0] // group, w.shape[1], -1))
            extra = np.einsum("gock,gc->go", grouped, t.reshape(group, -1)).reshape(-1)
            return (extra if b is None else b + extra).astype(w.dtype)
        if node.op_type == "Gemm":
            trans_b = attr_value(node, "transB", 0)
            k = w.shape[1] if trans_b else w.shape[0]
            if attr_value(node, "transA", 0) or w.ndim != 2 or rank != 2 or k != t.size:
                return None
            extra = attr_value(node, "alpha", 1.0) * (t @ (w.T if trans_b else w))
            if b is not None:
                extra = attr_value(node, "beta", 1.0) * b + extra
            return extra.astype(w.dtype)
        return None

    def fold_shift(self, add: onnx.NodeProto) -> bool:
        """Add(x, t) with t per channel (axis 1), read only by unpadded Convs or Gemms,
        goes into their biases."""
        g = self.g
        if add.domain not in _STANDARD or len(add.input) != 2 or len(add.output) != 1:
            return False
        for pos in ((1,) if add.op_type == "Sub" else (1, 0)):
            x, t = add.input[1 - pos], g.const(add.input[pos])
            y = add.output[0]
            readers = self.users.get(y, [])
            if t is None or g.const(x) is not None or y in g.pinned or not readers:
                continue
            if add.op_type == "Sub":
                t = -t
            rank = self.rank(x)
            if not rank:
                continue
            shift = channel_scale(t, rank)
            if shift is None:
                continue
            transpose = readers[0] if len(readers) == 1 and readers[0].op_type == "Transpose" \
                and readers[0].domain in _STANDARD else None
            if transpose is not None:       # x + t -> Transpose -> Conv: the same per channel
                perm = attr_value(transpose, "perm")
                if perm is None or len(perm) != rank or transpose.output[0] in g.pinned:
                    continue
                axis = None if shift.axis is None else list(perm).index(shift.axis)
                shift = Scale(shift.s, axis, rank)
                readers = self.users.get(transpose.output[0], [])
                y = transpose.output[0]
                if not readers:
                    continue
            if shift.axis not in (None, 1):
                continue
            try:
                size = self.channels(y if transpose is not None else x, 1)
            except RecursionError:
                size = None
            w = g.const(readers[0].input[1]) if len(readers[0].input) > 1 else None
            if size is None or shift.s.size not in (1, size) or not broadcast_fits((t,), w, size=size):
                continue   # a bias the size of `w`'s channels at most (README "Limits")
            vector = np.broadcast_to(shift.s, (size,)).astype(t.dtype)
            biases = [self.shift_absorbed(r, y, vector, rank) for r in readers]
            if any(b is None for b in biases):
                continue
            for reader, bias in zip(readers, biases):
                while len(reader.input) < 3:
                    reader.input.append("")
                reader.input[2] = g.add_initializer(np.ascontiguousarray(bias), "bias_shifted")
                if reader.op_type == "Gemm":
                    set_attr(reader, "beta", 1.0)
            first = transpose if transpose is not None else None
            for reader in ([first] if first is not None else readers):
                reader.input[0] = x
            self.users.setdefault(x, []).extend([first] if first is not None else readers)
            self.users[x] = [n for n in self.users[x] if n is not add]
            if first is None:
                self.users.pop(y, None)
            self.dead.add(id(add))
            return True
        return False


def sink_scales_into_weights(g: LoweredGraph) -> int:
    """Move constant per-channel Muls forward into Conv/Gemm/MatMul weights, and constant
    per-channel Adds into the biases of unpadded Convs and Gemms reading them; return how
    many nodes went."""
    sinker = _Sinker(g)
    count = 0
    for node in list(g.nodes):
        if node.op_type in ("Mul", "Div") and id(node) not in sinker.dead:
            count += sinker.sink(node)
    for node in list(g.nodes):
        if node.op_type in ("Add", "Sub") and id(node) not in sinker.dead:
            count += sinker.fold_shift(node)
    g.keep_only(sinker.dead)
    return count
