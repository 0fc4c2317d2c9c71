"""Affine folding on the lowered ONNX graph: per-channel Add/Sub/Mul/Div by constants right
after a Conv, Gemm or MatMul with constant weights go into its weights and bias.

After constant folding and transpose sinking, a Keras batch norm (Rsqrt/Mul/Sub/Add of its
statistics) and a BiasAdd are Conv -> Add(bias) -> Mul(scale) -> Add(shift) with constants
per output channel: all three end up in the Conv's W and B. MatMul + Add becomes Gemm when
the MatMul's input is known to be a matrix; a MatMul's Add of zeros per column goes (its
shape is the MatMul's)."""

from __future__ import annotations

from typing import Optional

import numpy as np
import onnx

from tf2ir.ir.onnx.passes.lowered import LoweredGraph, attr_value, broadcast_fits, set_attr

AFFINE = ("Add", "Sub", "Mul", "Div")


def _per_channel(c: np.ndarray, rank: int, axis: int, size: int) -> Optional[np.ndarray]:
    """`c` as a (size,) vector when, broadcast against a rank-`rank` tensor, it varies along
    `axis` only (and does not add dims); else None."""
    if c.ndim > rank:
        return None
    full: np.ndarray = c.reshape((1,) * (rank - c.ndim) + c.shape)
    if any(d != 1 for i, d in enumerate(full.shape) if i != axis) or full.shape[axis] not in (1, size):
        return None
    flat = full.reshape(-1)
    return flat if flat.size == size else np.full(size, flat[0], flat.dtype)


class _Folder:
    def __init__(self, g: LoweredGraph):
        self.g = g
        self.users = g.consumers()
        self.dead: set = set()

    def replace_const(self, node: onnx.NodeProto, index: int, array: Optional[np.ndarray],
                      hint: str) -> None:
        """Point input `index` at a new initializer (dropping the old one if only `node`
        read it, to keep peak memory down); None removes an optional trailing input."""
        g = self.g
        old = node.input[index] if index < len(node.input) else ""
        if array is None:
            new = ""
        else:
            new = g.add_initializer(np.ascontiguousarray(array), hint)
            self.users.setdefault(new, []).append(node)
        while len(node.input) <= index:
            node.input.append("")
        node.input[index] = new
        if old:
            others = [u for u in self.users.get(old, []) if u is not node]
            self.users[old] = others
            if not others and old in g.initializers and old not in g.pinned:
                del g.initializers[old]

    def follower(self, node: onnx.NodeProto):
        """The single Add/Sub/Mul/Div reading `node`'s output with a constant, the
        constant, and whether the output is the first operand."""
        y = node.output[0]
        users = self.users.get(y, [])
        if y in self.g.pinned or len(users) != 1:
            return None
        m = users[0]
        if m.op_type not in AFFINE or m.domain not in ("", "ai.onnx") or len(m.input) != 2 \
                or id(m) in self.dead:
            return None
        first = m.input[0] == y
        other = m.input[1] if first else m.input[0]
        c = self.g.const(other)
        if c is None or other == y or (not first and m.op_type in ("Sub", "Div")):
            return None
        return m, c

    def absorb(self, node: onnx.NodeProto, m: onnx.NodeProto) -> None:
        node.output[0] = m.output[0]
        self.dead.add(id(m))

    def fold_conv(self, node: onnx.NodeProto) -> int:
        g, count = self.g, 0
        while True:
            w = g.const(node.input[1]) if len(node.input) > 1 else None
            found = self.follower(node) if w is not None else None
            if w is None or found is None:
                return count
            m, c = found
            b = g.const(node.input[2]) if len(node.input) > 2 and node.input[2] else None
            if (len(node.input) > 2 and node.input[2] and b is None) or c.dtype != w.dtype:
                return count
            s = _per_channel(c, w.ndim, 1, w.shape[0])
            if s is None or (b is not None and not broadcast_fits((b, s), w)):
                return count
            shape = (-1,) + (1,) * (w.ndim - 1)
            if m.op_type in ("Add", "Sub"):
                b = (b if b is not None else np.zeros(w.shape[0], w.dtype)) + \
                    (s if m.op_type == "Add" else -s)
                self.replace_const(node, 2, b.astype(w.dtype), "bias_folded")
            else:
                s = s if m.op_type == "Mul" else np.reciprocal(s)
                self.replace_const(node, 1, (w * s.reshape(shape)).astype(w.dtype), "weight_folded")
                if b is not None:
                    self.replace_const(node, 2, (b * s).astype(w.dtype), "bias_folded")
            self.absorb(node, m)
            count += 1

    def fold_gemm(self, node: onnx.NodeProto) -> int:
        g, count = self.g, 0
        if attr_value(node, "transA", 0):
            return 0
        while True:
            w = g.const(node.input[1])
            found = self.follower(node) if w is not None and w.ndim == 2 else None
            if w is None or found is None:
                return count
            m, c = found
            trans_b = attr_value(node, "transB", 0)
            n = w.shape[0] if trans_b else w.shape[1]
            s = _per_channel(c, 2, 1, n) if c.dtype == w.dtype else None
            bias = g.const(node.input[2]) if len(node.input) > 2 and node.input[2] else None
            if s is None or (len(node.input) > 2 and node.input[2] and bias is None) \
                    or (bias is not None and not broadcast_fits((bias, s), w)):
                return count
            beta = attr_value(node, "beta", 1.0)
            bias = None if bias is None else bias * np.asarray(beta, w.dtype)
            if m.op_type in ("Add", "Sub"):
                bias = (bias if bias is not None else 0) + (s if m.op_type == "Add" else -s)
                self.replace_const(node, 2, np.asarray(bias, w.dtype), "bias_folded")
            else:
                s = s if m.op_type == "Mul" else np.reciprocal(s)
                scaled = w * (s.reshape(-1, 1) if trans_b else s.reshape(1, -1))
                self.replace_const(node, 1, scaled.astype(w.dtype), "weight_folded")
                if bias is not None:
                    self.replace_const(node, 2, (bias * s).astype(w.dtype), "bias_folded")
            if beta != 1.0:
                set_attr(node, "beta", 1.0)
            self.absorb(node, m)
            count += 1

    def fold_matmul(self, node: onnx.NodeProto) -> int:
        g, count = self.g, 0
        while True:
            w = g.const(node.input[1])
            found = self.follower(node) if w is not None and w.ndim == 2 else None
            if w is None or found is None:
                return count
            m, c = found
            out_rank = g.rank(m.output[0]) or g.rank(node.output[0]) or g.rank(node.input[0])
            if c.dtype != w.dtype or out_rank is None or out_rank < 2:
                return count
            s = _per_channel(c, out_rank, out_rank - 1, w.shape[1])
            if s is None:
                return count
            if m.op_type in ("Mul", "Div"):
                s = s if m.op_type == "Mul" else np.reciprocal(s)
                self.replace_const(node, 1, (w * s.reshape(1, -1)).astype(w.dtype), "weight_folded")
            elif not np.any(s):        # + 0 of every column (an untrained bias)
                pass
            elif g.rank(node.input[0]) == 2 and w.dtype in (np.float32, np.float64):   # a Gemm
                node.op_type = "Gemm"
                self.replace_const(node, 2, (s if m.op_type == "Add" else -s).astype(w.dtype),
                                   "bias_folded")
                self.absorb(node, m)
                return count + 1 + self.fold_gemm(node)
            else:
                return count
            self.absorb(node, m)
            count += 1


def fold_affine_into_weights(g: LoweredGraph) -> int:
    """Fold per-channel affine ops into the preceding Conv/Gemm/MatMul; return how many."""
    folder = _Folder(g)
    count = 0
    for node in g.nodes:
        if id(node) in folder.dead or node.domain not in ("", "ai.onnx"):
            continue
        if node.op_type == "Conv" and len(node.output) == 1:
            count += folder.fold_conv(node)
        elif node.op_type == "Gemm":
            count += folder.fold_gemm(node)
        elif node.op_type == "MatMul":
            count += folder.fold_matmul(node)
    g.keep_only(folder.dead)
    return count
