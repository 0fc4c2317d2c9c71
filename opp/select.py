"""Selection by a bool condition: Select (TF v1, whose vector condition may choose whole rows)
and SelectV2 (tf.where, all three operands broadcast)."""

from __future__ import annotations

import numpy as np

from tf2ir.ir import ConversionError, TensorDesc, OpSet
from tf2ir.ir.onnx.kernels import kernel_types
from tf2ir.opp.carriers import ALL_TYPES
from tf2ir.opp.declare import fold_with
from tf2ir.opp.emitting import lowering
from tf2ir.opp.shapes import broadcast_shapes, infer_broadcast

OPS = OpSet("tf2ir.opp.select")

# onnxruntime's Where kernels (the selected operands are cast to a carrier among them)
WHERE_TYPES = kernel_types("Where", ALL_TYPES + ("string",))
SELECT_TYPES = ALL_TYPES + ("string",)      # TF's Select/SelectV2 take every dtype


def _merge_shapes(a, b, what: str):
    if a is None or b is None:
        return a if b is None else b
    if len(a) != len(b) or any(p is not None and q is not None and p != q for p, q in zip(a, b)):
        raise ConversionError(f"{what}: shapes {list(a)} and {list(b)} differ")
    return tuple(p if p is not None else q for p, q in zip(a, b))


select = (OPS.declare("Select", "TF Select (v1): condition is a scalar, x1's shape, or a vector "
                                 "choosing whole rows of x1 and x2 (which have one shape)")
          .input("condition", ("bool",)).input("x1", SELECT_TYPES).input("x2", SELECT_TYPES)
          .output("y"))


def _select_rows(node):
    """True when a vector condition picks rows of a higher-rank x1, None when the ranks cannot
    tell now (the lowering then lays the condition along x1's leading dims at run time)."""
    cond, x = node.inputs[0].desc, node.inputs[1].desc
    if cond.rank == 1 and x.rank is None or cond.rank is None and x.rank not in (0, 1):
        return None
    return cond.rank == 1 and x.rank > 1


def emit_pad_rank(ctx, name: str, like: str) -> str:
    """Tensor `name` reshaped to its shape followed by 1s up to the rank of tensor `like` (a
    rank no less than its own), at run time: a TF v1 condition laid along x's leading dims."""
    shape = ctx.op.Shape(name)
    missing = ctx.op.Sub(ctx.op.Shape(ctx.op.Shape(like)),
                         ctx.op.Shape(shape))
    ones = ctx.op.Expand(ctx.constant(np.array([1], np.int64)), missing)
    target = ctx.op.Concat(shape, ones, axis=0)
    return ctx.op.Reshape(name, target, allowzero=1)


@select.infer
def _infer_select(node):
    cond, x, y = (v.desc for v in node.inputs)
    if x.dtype != y.dtype:
        raise ConversionError(f"x1 and x2 dtypes differ: {x.dtype} and {y.dtype}")
    shape = _merge_shapes(x.shape, y.shape, "Select x1 and x2")
    rows = _select_rows(node)
    if cond.rank not in (None, 0) and shape is not None and rows is not None:
        if rows:
            _merge_shapes(cond.shape, shape[:1], "Select's vector condition and x1's first dim")
        else:
            shape = _merge_shapes(cond.shape, shape, "Select condition and x1")
    return [TensorDesc(x.dtype, shape, x.format, x.origin_format)]


def _select_body(o, xs, dtype):
    cond, rows = xs[0], _select_rows(o.ctx.node)
    if rows is None:
        cond = emit_pad_rank(o.ctx, cond, xs[1])
    elif rows:
        axes = list(range(1, o.ctx.node.inputs[1].desc.rank))
        cond = o.Unsqueeze(cond, o.ctx.constant(np.array(axes, np.int64)))
    return o.Where(cond, xs[1], xs[2], out=o.out)


def _fold_select(node, values):
    cond, x, y = values
    if cond.ndim == 1 and x.ndim > 1:
        cond = cond.reshape((-1,) + (1,) * (x.ndim - 1))
    return [np.where(cond, x, y)]


select.lower(lowering(_select_body, WHERE_TYPES, (1, 2)))
select.fold(_fold_select)

select_v2 = (OPS.declare("SelectV2", "condition ? x1 : x2, all three broadcast (TF SelectV2, "
                                     "tf.where)")
             .input("condition", ("bool",)).input("x1", SELECT_TYPES).input("x2", SELECT_TYPES)
          .output("y"))


@select_v2.infer
def _infer_select_v2(node):
    out = infer_broadcast(node, (1, 2))[0]
    out.shape = broadcast_shapes(node.inputs[0].desc.shape, out.shape)
    return [out]


select_v2.lower(lowering(lambda o, xs, dtype: o.Where(xs[0], xs[1], xs[2], out=o.out),
                         WHERE_TYPES, (1, 2)))
select_v2.fold(fold_with(np.where))
