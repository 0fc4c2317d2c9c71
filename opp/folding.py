"""numpy evaluations of the shape-arithmetic ops, for constant folding (`fold_constants`):
TF computes permutations and shapes with small ops over constants that ONNX wants as
attributes or initializers."""

from __future__ import annotations

import numpy as np

from tf2ir.ir.tensor import numpy_dtype


def _scalar(array) -> int:
    return int(np.asarray(array).reshape(-1)[0])


def _squeeze(node, values):
    axes = node.attrs.get("axis") or None
    return [np.squeeze(values[0], axis=None if axes is None else tuple(axes))]


def _gather_v2(node, values):
    if node.attrs.get("batch_dims", 0):
        raise ValueError("batch_dims is not folded")
    return [np.take(values[0], values[1], axis=_scalar(values[2]))]


def _reduction(numpy_fn):
    def fold(node, values):
        axes = tuple(int(a) for a in np.asarray(values[1]).reshape(-1))
        return [numpy_fn(values[0], axis=axes, keepdims=node.attrs["keep_dims"])]
    return fold


FOLDS = {
    "ConcatV2": lambda node, values: [np.concatenate(values[:-1], axis=_scalar(values[-1]))],
    "Pack": lambda node, values: [np.stack(values, axis=node.attrs["axis"])],
    "Cast": lambda node, values: [values[0].astype(numpy_dtype(node.attrs["dst_type"]))],
    "Reshape": lambda node, values: [values[0].reshape([int(d) for d in values[1]])],
    "ExpandDims": lambda node, values: [np.expand_dims(values[0], _scalar(values[1]))],
    "Squeeze": _squeeze,
    "Transpose": lambda node, values: [np.transpose(values[0], [int(p) for p in values[1]])],
    "GatherV2": _gather_v2,
    "ReduceProd": _reduction(np.prod),
    "ReduceSum": _reduction(np.sum),
    "ReduceMax": _reduction(np.max),
    "ReduceMin": _reduction(np.min),
}

def _attach_folds() -> None:
    from tf2ir.opp import array, math, reduce, shape
    declared = {p.op_type: p for ops in (array.OPS, math.OPS, reduce.OPS, shape.OPS) for p in ops}
    for op_type, fn in FOLDS.items():
        declared[op_type].fold(fn)


_attach_folds()
