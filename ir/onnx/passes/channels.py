"""What the per-channel passes (affine, scale) know of a name on the lowered ONNX graph: a
constant as a per-channel `Scale`, a name's rank and channel count found through its
producers (the size bound on the constants they compute is ir/fold_limits.py's)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import numpy as np

from tf2ir.ir.fold_limits import FOLD_LIMIT_BYTES, broadcast_fits
from tf2ir.ir.onnx.graph import OnnxGraph

__all__ = ["ARITHMETIC", "ChannelFacts", "FOLD_LIMIT_BYTES", "Scale", "broadcast_fits",
           "channel_scale", "const_operand"]

_SAME_SHAPE = {"Relu", "LeakyRelu", "Sigmoid", "Tanh", "Clip", "Elu", "Selu", "HardSigmoid",
               "HardSwish", "Softplus", "Erf", "Identity", "Neg", "Abs", "Exp", "Sqrt",
               "BatchNormalization"}
_SAME_RANK = _SAME_SHAPE | {"Conv", "MaxPool", "AveragePool", "GlobalAveragePool",
                            "GlobalMaxPool", "Concat", "Pad", "Transpose"}
ARITHMETIC = ("Add", "Sub", "Mul", "Div")


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


def const_operand(g: OnnxGraph, node, v: str) -> Optional[Tuple[int, np.ndarray]]:
    """(position, value) of the constant other operand of a binary `node` reading `v`."""
    if len(node.input) != 2 or node.input.count(v) != 1:
        return None
    pos = 1 - node.input.index(v)
    c = g.const(node.input[pos])
    return None if c is None else (pos, c)


class ChannelFacts:
    """Ranks and channel counts of names, found going up through their producers (memoised:
    a rewrite that changes what a name holds gives it a new name)."""

    def __init__(self, g: OnnxGraph):
        self.g = g
        self.memo: Dict[Tuple[str, int], Optional[int]] = {}
        self.ranks: Dict[str, Optional[int]] = {}

    def channels(self, name: str, axis: int) -> Optional[int]:
        """The size of dim `axis` of `name` where the producers tell it (Conv, Gemm, MatMul
        weights; Concat sums; elementwise and pooling ops keep it), else None."""
        key = (name, axis)
        if key not in self.memo:
            self.memo[key] = None               # a cycle or a failure: unknown
            self.memo[key] = self._channels(name, axis)
        return self.memo[key]

    def rank(self, name: str) -> Optional[int]:
        """`name`'s rank, known or kept from the data input by a rank-keeping producer (x op c
        keeps x's rank when c has no more dims). One walk up per name (memoised)."""
        g, chain = self.g, []           # (name, the dims a constant operand there has)
        while True:
            if name in self.ranks:
                rank = self.ranks[name]
                break
            rank, node = g.rank(name), g.producer(name)
            if rank is not None or node is None or not node.input or not node.standard:
                break
            if node.op_type in ARITHMETIC and len(node.input) == 2:
                consts = [g.const(i) for i in node.input]
                if (consts[0] is None) == (consts[1] is None):
                    break
                c, following = (consts[1], node.input[0]) if consts[0] is None \
                    else (consts[0], node.input[1])
                assert c is not None     # exactly one of the two is a constant (checked above)
                chain.append((name, c.ndim))
            elif node.op_type in _SAME_RANK:
                following = node.input[0]
                chain.append((name, 0))
            else:
                break
            name = following
        for known, dims in reversed(chain):
            if rank is not None and dims > rank:
                rank = None
            self.ranks[known] = rank
        return rank

    def _channels(self, name: str, axis: int) -> Optional[int]:
        g = self.g
        c = g.const(name)
        if c is not None:
            return c.shape[axis] if axis < c.ndim else None
        shape = g.shapes.get(name)
        if shape is not None and axis < len(shape) and shape[axis] is not None:
            return shape[axis]
        node = g.producer(name)
        if node is None or not node.standard or len(node.output) != 1:
            return None
        op, rank = node.op_type, self.rank(name)
        w = g.const(node.input[1]) if len(node.input) > 1 else None
        if op == "Conv" and axis == 1:
            return w.shape[0] if w is not None else None
        if op == "Gemm" and axis == 1 and w is not None and w.ndim == 2:
            return w.shape[0] if node.attr("transB", 0) else w.shape[1]
        if op == "MatMul" and rank and axis == rank - 1 and w is not None and w.ndim == 2:
            return w.shape[1]
        if op == "Concat":
            if rank is None or int(node.attr("axis", 0)) % rank != axis:
                return self.channels(node.input[0], axis)
            sizes = [self.channels(i, axis) for i in node.input]
            known = [n for n in sizes if n is not None]
            return sum(known) if len(known) == len(sizes) else None
        if op in ("MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool") and axis == 1:
            return self.channels(node.input[0], axis)
        if op in _SAME_SHAPE:
            return self.channels(node.input[0], axis)
        if op == "Transpose":
            perm = node.attr("perm")
            return self.channels(node.input[0], perm[axis]) if perm and axis < len(perm) else None
        if op == "Flatten" and axis == 1 and node.attr("axis", 1) == 1:
            source = g.producer(node.input[0])
            if source is not None and source.op_type in ("GlobalAveragePool", "GlobalMaxPool"):
                return self.channels(node.input[0], 1)
        if op == "Pad" and rank and len(node.input) > 1:
            pads = g.const(node.input[1])
            if pads is not None and pads.size == 2 * rank and not pads[axis] \
                    and not pads[rank + axis]:
                return self.channels(node.input[0], axis)
        if op in ARITHMETIC and len(node.input) == 2 and rank:
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
