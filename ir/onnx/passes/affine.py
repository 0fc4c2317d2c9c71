"""Affine folding on the lowered ONNX graph: per-channel Add/Sub/Mul/Div by constants right
after a Conv, Gemm or MatMul with constant weights go into its weights and bias.

After constant folding and transpose sinking, a Keras batch norm (Rsqrt/Mul/Sub/Add of its
statistics) and a BiasAdd are Conv -> Add(bias) -> Mul(scale) -> Add(shift) with constants
per output channel: all three end up in the Conv's W and B. MatMul + Add becomes Gemm when
the MatMul's input is known to be a matrix; a MatMul's Add of zeros per column goes (its
shape is the MatMul's)."""

from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

from tf2ir.ir.onnx.graph import OnnxGraph, OnnxNode
from tf2ir.ir.onnx.passes.channels import ARITHMETIC, broadcast_fits


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


def _replace_const(g: OnnxGraph, node: OnnxNode, index: int, array: np.ndarray,
                   hint: str) -> None:
    """Point input `index` at a new initializer (dropping the old one if nothing else reads
    it, to keep peak memory down)."""
    old = node.input[index] if index < len(node.input) else ""
    g.set_input(node, index, g.add_initializer(np.ascontiguousarray(array), hint))
    if old and old in g.initializers and not g.use_count(old) and not g.is_pinned(old):
        del g.initializers[old]


def _follower(g: OnnxGraph, node: OnnxNode) -> Optional[Tuple[OnnxNode, np.ndarray]]:
    """The single Add/Sub/Mul/Div reading `node`'s output with a constant, and the
    constant."""
    y = node.output[0]
    m = g.only_user(y)
    if m is None or m.op_type not in ARITHMETIC or not m.standard or len(m.input) != 2:
        return None
    first = m.input[0] == y
    other = m.input[1] if first else m.input[0]
    c = g.const(other)
    if c is None or other == y or (not first and m.op_type in ("Sub", "Div")):
        return None
    return m, c


def _absorb(g: OnnxGraph, node: OnnxNode, m: OnnxNode) -> None:
    """`node` (whose output `m` alone read) produces `m`'s output itself; `m` goes."""
    out = m.output[0]
    g.remove(m, keep_uses=True)
    g.rename_output(node, 0, out)


def _fold_conv(g: OnnxGraph, node: OnnxNode) -> int:
    count = 0
    while True:
        w = g.const(node.input[1]) if len(node.input) > 1 else None
        found = _follower(g, node) if w is not None else None
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
            _replace_const(g, node, 2, b.astype(w.dtype), "bias_folded")
        else:
            s = s if m.op_type == "Mul" else np.reciprocal(s)
            _replace_const(g, node, 1, (w * s.reshape(shape)).astype(w.dtype), "weight_folded")
            if b is not None:
                _replace_const(g, node, 2, (b * s).astype(w.dtype), "bias_folded")
        _absorb(g, node, m)
        count += 1


def _fold_gemm(g: OnnxGraph, node: OnnxNode) -> int:
    count = 0
    if node.attr("transA", 0):
        return 0
    while True:
        w = g.const(node.input[1])
        found = _follower(g, node) if w is not None and w.ndim == 2 else None
        if w is None or found is None:
            return count
        m, c = found
        trans_b = node.attr("transB", 0)
        n = w.shape[0] if trans_b else w.shape[1]
        s = _per_channel(c, 2, 1, n) if c.dtype == w.dtype else None
        bias = g.const(node.input[2]) if len(node.input) > 2 and node.input[2] else None
        if s is None or (len(node.input) > 2 and node.input[2] and bias is None) \
                or (bias is not None and not broadcast_fits((bias, s), w)):
            return count
        beta = node.attr("beta", 1.0)
        bias = None if bias is None else bias * np.asarray(beta, w.dtype)
        if m.op_type in ("Add", "Sub"):
            bias = (bias if bias is not None else 0) + (s if m.op_type == "Add" else -s)
            _replace_const(g, node, 2, np.asarray(bias, w.dtype), "bias_folded")
        else:
            s = s if m.op_type == "Mul" else np.reciprocal(s)
            scaled = w * (s.reshape(-1, 1) if trans_b else s.reshape(1, -1))
            _replace_const(g, node, 1, scaled.astype(w.dtype), "weight_folded")
            if bias is not None:
                _replace_const(g, node, 2, (bias * s).astype(w.dtype), "bias_folded")
        if beta != 1.0:
            g.set_attr(node, "beta", 1.0)
        _absorb(g, node, m)
        count += 1


def _fold_matmul(g: OnnxGraph, node: OnnxNode) -> int:
    count = 0
    while True:
        w = g.const(node.input[1])
        found = _follower(g, node) if w is not None and w.ndim == 2 else None
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
            _replace_const(g, node, 1, (w * s.reshape(1, -1)).astype(w.dtype), "weight_folded")
        elif not np.any(s):        # + 0 of every column (an untrained bias)
            pass
        elif g.rank(node.input[0]) == 2 and w.dtype in (np.float32, np.float64):   # a Gemm
            g.set_op(node, "Gemm")
            _replace_const(g, node, 2, (s if m.op_type == "Add" else -s).astype(w.dtype),
                           "bias_folded")
            _absorb(g, node, m)
            return count + 1 + _fold_gemm(g, node)
        else:
            return count
        _absorb(g, node, m)
        count += 1


def fold_affine_into_weights(g: OnnxGraph) -> int:
    """Fold per-channel affine ops into the preceding Conv/Gemm/MatMul; return how many."""
    count = 0
    for node in g.of_type("Conv", "Gemm", "MatMul"):
        if node.op_type == "Conv" and len(node.output) == 1:
            count += _fold_conv(g, node)
        elif node.op_type == "Gemm":
            count += _fold_gemm(g, node)
        elif node.op_type == "MatMul":
            count += _fold_matmul(g, node)
    return count
