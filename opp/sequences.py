"""ONNX sequence building blocks for the list ops' lowerings (opp/lists.py): placeholder
elements, reserving, growing, replacing an element, stacking and scattering."""

from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

from tf2ir.ir import TensorDesc
from tf2ir.ir.onnx.writer import tensor_proto
from tf2ir.ir.tensor import Shape, element_dtype, numpy_dtype

_INT64 = 7   # onnx.TensorProto.INT64


def placeholder_dims(shape: Shape) -> Tuple[int, ...]:
    """The shape of a placeholder element: unknown dims 0, unknown rank a scalar."""
    return () if shape is None else tuple(0 if d is None else d for d in shape)


def as_int64(ctx, name: str, desc: TensorDesc) -> str:
    return name if desc.dtype == "int64" else ctx.op.Cast(name, to=_INT64)


def placeholder_shape(ctx, shape: Shape) -> str:
    """An int64 vector, the shape of a placeholder element (`placeholder_dims`). For an
    unknown rank it is empty, but made at run time (from a SequenceLength no pass folds),
    so that ONNX shape inference does not take the elements for scalars."""
    if shape is not None:
        return ctx.constant(np.array(placeholder_dims(shape), np.int64), "dims")
    none = ctx.op.SequenceEmpty(dtype=_INT64)
    end = ctx.op.Reshape(ctx.op.SequenceLength(none),
                         ctx.constant(np.array([1], np.int64), "one_dim"))
    return ctx.op.Slice(ctx.constant(np.array([0], np.int64), "zero_vector"),
                        ctx.constant(np.array([0], np.int64), "zero_vector"), end)


def placeholder(ctx, desc: TensorDesc) -> str:
    """One placeholder element of list `desc`."""
    zero = tensor_proto("value", np.zeros(1, numpy_dtype(element_dtype(desc.dtype))))
    return ctx.op.ConstantOfShape(placeholder_shape(ctx, desc.shape), value=zero)


def reserve(ctx, count: str, dtype: str, shape: Shape, output: Optional[str] = None) -> str:
    """A sequence of `count` (an int64 scalar) placeholder elements."""
    size = ctx.op.Reshape(count, ctx.constant(np.array([1], np.int64), "one_dim"))
    if shape != ():
        size = ctx.op.Concat(size, placeholder_shape(ctx, shape), axis=0)
    zero = tensor_proto("value", np.zeros(1, numpy_dtype(dtype)))
    zeros = ctx.op.ConstantOfShape(size, value=zero)
    return ctx.op.SplitToSequence(zeros, out=output, axis=0, keepdims=0)


def grow(ctx, seq: str, count: str, desc: TensorDesc) -> str:
    """`seq` with placeholder elements appended until it has at least `count` (int64)."""
    from tf2ir.ir.onnx.compile import subgraph_value_info
    length = ctx.op.SequenceLength(seq)
    missing = ctx.op.Max(ctx.op.Sub(count, length),
                         ctx.constant(np.array(0, np.int64), "zero"))
    element = placeholder(ctx, desc)
    body = ctx.subcontext()
    names = [body.fresh(hint) for hint in ("grow/i", "grow/cond", "grow/seq")]
    out = body.op.SequenceInsert(names[2], element)
    graph = body.make_subgraph(
        ctx.fresh("grow"), [subgraph_value_info(names[0], TensorDesc("int64", ())),
                            subgraph_value_info(names[1], TensorDesc("bool", ())),
                            subgraph_value_info(names[2], desc)],
        [(names[1], TensorDesc("bool", ())), (out, desc)])
    return ctx.op.Loop(missing, "", seq, body=graph)


def set_item(ctx, seq: str, index: str, item: str, output: Optional[str] = None) -> str:
    """`seq` with element `index` (int64) replaced by `item`."""
    erased = ctx.op.SequenceErase(seq, index)
    return ctx.op.SequenceInsert(erased, item, index, out=output)


def stack(ctx, seq: str, desc: TensorDesc, output: str, new_axis: int = 1) -> str:
    """The elements of `seq` stacked (new_axis=1) or concatenated along dim 0; an empty
    sequence gives an empty tensor shaped [0, *element shape] (resp. [0, *dims 1:])."""
    length = ctx.op.SequenceLength(seq)
    non_empty = ctx.op.Greater(length, ctx.constant(np.array(0, np.int64), "zero"))
    out_desc = TensorDesc(element_dtype(desc.dtype),
                          None if desc.shape is None else (None,) + desc.shape[new_axis ^ 1:])
    branches = {}
    for key in ("then_branch", "else_branch"):
        child = ctx.subcontext()
        if key == "then_branch":
            result = child.op.ConcatFromSequence(seq, axis=0, new_axis=new_axis)
        else:
            dims = placeholder_dims(desc.shape)[new_axis ^ 1:]
            result = ctx.constant(np.zeros((0,) + dims, numpy_dtype(out_desc.dtype)), "empty")
        branches[key] = child.make_subgraph(ctx.fresh(key), [], [(result, out_desc)])
    ctx.op.If(non_empty, out=output, **branches)
    return output


def scatter_into(ctx, seq: str, tensor: str, indices: str, desc: TensorDesc, output: str) -> None:
    """`seq` grown to hold every index of `indices` (int64), then item j of `tensor` set
    at indices[j] for each j in order (a Loop)."""
    from tf2ir.ir.onnx.compile import subgraph_value_info
    flat = ctx.op.Concat(ctx.constant(np.array([-1], np.int64), "minus_one"), indices,
                         axis=0)
    top = ctx.op.ReduceMax(flat, keepdims=0)
    seq = grow(ctx, seq, ctx.op.Add(top, ctx.constant(np.array(1, np.int64), "one")),
               desc)
    count = ctx.op.Size(indices)
    body = ctx.subcontext()
    names = [body.fresh(hint) for hint in ("scatter/j", "scatter/cond", "scatter/seq")]
    at = body.op.Gather(indices, names[0], axis=0)
    item = body.op.Gather(tensor, names[0], axis=0)
    out = set_item(body, names[2], at, item)
    graph = body.make_subgraph(
        ctx.fresh("scatter"), [subgraph_value_info(names[0], TensorDesc("int64", ())),
                               subgraph_value_info(names[1], TensorDesc("bool", ())),
                               subgraph_value_info(names[2], desc)],
        [(names[1], TensorDesc("bool", ())), (out, desc)])
    ctx.op.Loop(count, "", seq, out=output, body=graph)
