"""Constant folding on the lowered ONNX graph: a node of a cheap, well-defined op whose
inputs are all initializers becomes an initializer (e.g. batch-norm's Sqrt/Reciprocal/Mul
of its statistics). A result larger than FOLD_LIMIT_BYTES and than its inputs together
is not folded: folding must not blow up the model (Expand, Tile, big broadcasts)."""

from __future__ import annotations

import math
from typing import Callable, Dict, Optional

import numpy as np
from onnx import helper

from tf2ir.ir.onnx.passes.lowered import LoweredGraph, attr_value

FOLD_LIMIT_BYTES = 1 << 20


def _int_div(a, b):
    if np.issubdtype(a.dtype, np.integer):
        return np.trunc(np.true_divide(a, b)).astype(a.dtype)   # ONNX Div truncates
    return np.divide(a, b)


def _transpose(node, x):
    perm = attr_value(node, "perm")
    return x.transpose(perm) if perm is not None else x.T


def _reshape(node, x, shape):
    shape = [int(s) for s in shape]
    if attr_value(node, "allowzero", 0) == 0:
        shape = [x.shape[i] if s == 0 else s for i, s in enumerate(shape)]
    return x.reshape(shape)


def _unsqueeze(node, x, axes):
    rank = x.ndim + len(axes)
    out = x
    for axis in sorted(int(a) % rank for a in axes):
        out = np.expand_dims(out, axis)
    return out


def _squeeze(node, x, axes=None):
    return np.squeeze(x) if axes is None else np.squeeze(x, tuple(int(a) % x.ndim for a in axes))


def _concat(node, *xs):
    return np.concatenate(xs, axis=attr_value(node, "axis"))


def _cast(node, x):
    return x.astype(helper.tensor_dtype_to_np_dtype(attr_value(node, "to")))


def _gather(node, x, indices):
    axis = attr_value(node, "axis", 0)
    return np.take(x, np.where(indices < 0, indices + x.shape[axis], indices), axis=axis)


def _binary(fn):
    return lambda node, a, b: fn(a, b)


def _unary(fn):
    return lambda node, x: fn(x)


FOLDERS: Dict[str, Callable] = {
    "Add": _binary(np.add), "Sub": _binary(np.subtract), "Mul": _binary(np.multiply),
    "Div": _binary(_int_div), "Max": lambda node, *xs: _reduce_variadic(np.maximum, xs),
    "Min": lambda node, *xs: _reduce_variadic(np.minimum, xs),
    "Sqrt": _unary(np.sqrt), "Reciprocal": _unary(np.reciprocal), "Neg": _unary(np.negative),
    "Abs": _unary(np.abs), "Exp": _unary(np.exp), "Log": _unary(np.log),
    "Identity": _unary(lambda x: x), "Transpose": _transpose, "Reshape": _reshape,
    "Unsqueeze": _unsqueeze, "Squeeze": _squeeze, "Concat": _concat, "Cast": _cast,
    "Gather": _gather,
    "Equal": _binary(np.equal), "Less": _binary(np.less), "LessOrEqual": _binary(np.less_equal),
    "Greater": _binary(np.greater), "GreaterOrEqual": _binary(np.greater_equal),
    "And": _binary(np.logical_and), "Or": _binary(np.logical_or),
    "Xor": _binary(np.logical_xor), "Not": _unary(np.logical_not),
}
_TO_BOOL = ("Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual")


def _reduce_variadic(fn, xs):
    out = xs[0]
    for x in xs[1:]:
        out = fn(out, x)
    return out


_BROADCASTING = ("Add", "Sub", "Mul", "Div", "Max", "Min", "And", "Or", "Xor") + _TO_BOOL


def _result_elements(node, arrays) -> Optional[int]:
    """The element count of the node's result where it can exceed its inputs' (a
    broadcast, a gather), computed before folding so that nothing huge is allocated; None
    where the result is no larger than an input (or numpy will refuse it)."""
    try:
        if node.op_type in _BROADCASTING:
            return math.prod(np.broadcast_shapes(*(a.shape for a in arrays)))
        if node.op_type == "Gather":
            x, indices = arrays
            axis = attr_value(node, "axis", 0)
            return indices.size * (x.size // max(x.shape[axis], 1)) if x.ndim else None
    except (ValueError, IndexError, TypeError):
        return None
    return None


def fold_lowered_constants(g: LoweredGraph) -> int:
    """Replace foldable nodes by initializers; return how many were folded."""
    folded, dead = 0, []
    for node in g.nodes:
        fn = FOLDERS.get(node.op_type)
        if fn is None or node.domain not in ("", "ai.onnx") or len(node.output) != 1 \
                or not node.input or any(not name or name not in g.initializers for name in node.input):
            continue
        out = node.output[0]
        if out in g.pinned:
            continue
        arrays = [g.initializers[name] for name in node.input]
        elements = _result_elements(node, arrays)
        limit = max(FOLD_LIMIT_BYTES, sum(a.nbytes for a in arrays))
        if elements is not None and elements * max(a.itemsize for a in arrays) > limit:
            continue
        try:
            with np.errstate(all="ignore"):
                result = np.asarray(fn(node, *arrays))
        except (ValueError, TypeError, IndexError, KeyError):
            continue
        if node.op_type in _TO_BOOL:
            if arrays[0].dtype != arrays[1].dtype or result.dtype != np.bool_:
                continue
        elif result.dtype != arrays[0].dtype and node.op_type not in ("Cast", "Gather", "Concat"):
            continue            # numpy promoted: not what ONNX computes
        if result.dtype == np.object_ or result.nbytes > max(FOLD_LIMIT_BYTES, sum(a.nbytes for a in arrays)):
            continue
        # (np.ascontiguousarray would make a 0-d result 1-d)
        g.initializers[out] = result if result.flags.c_contiguous else result.copy(order="C")
        g.ranks[out] = result.ndim
        dead.append(id(node))
        folded += 1
    g.keep_only(dead)
    return folded
