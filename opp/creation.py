"""Tensor creation: tensors filled with one value (Fill, ZerosLike, OnesLike), number
sequences (Range, LinSpace), and x repeated or broadcast to a larger shape (Tile, BroadcastTo)."""

from __future__ import annotations

import numpy as np

from tf2ir.ir import ConversionError, TensorDesc, OpSet
from tf2ir.ir.onnx.kernels import kernel_types
from tf2ir.ir.onnx.writer import ONNX_DTYPES, tensor_proto
from tf2ir.ir.tensor import FLOAT_TYPES, INDEX_TYPES, NUMBER_TYPES, numpy_dtype
from tf2ir.opp.carriers import ALL_TYPES
from tf2ir.opp.declare import fold_with
from tf2ir.opp.emitting import emit_cast, emit_where, int64_input, scalar_int64_input
from tf2ir.opp.shapes import const_ints, infer_from_shape_input, same_as_input, unknown_desc

OPS = OpSet("tf2ir.opp.creation")

# -- fill, broadcast, tile ------------------------------------------------------------------
fill = OPS.declare("Fill", "A tensor of shape `dims` filled with the scalar `value`.") \
    .input("dims", INDEX_TYPES).input("value").output("y")


@fill.infer
def _infer_fill(node):
    return infer_from_shape_input(node, 0, node.inputs[1].desc.dtype)


@fill.lower
def _lower_fill(ctx, node):
    ctx.op.Expand(ctx.input(1), int64_input(ctx, 0), out=ctx.output(0))


@fill.fold
def _fold_fill(node, values):
    return [np.full([int(d) for d in values[0]], values[1])]


broadcast_to = OPS.declare("BroadcastTo", "x broadcast (numpy rules) to `shape`.") \
    .input("x").input("shape", INDEX_TYPES).output("y")


@broadcast_to.infer
def _infer_broadcast_to(node):
    return infer_from_shape_input(node, 1, node.inputs[0].desc.dtype)


@broadcast_to.lower
def _lower_broadcast_to(ctx, node):
    ctx.op.Expand(ctx.input(0), int64_input(ctx, 1), out=ctx.output(0))


@broadcast_to.fold
def _fold_broadcast_to(node, values):
    return [np.broadcast_to(values[0], [int(d) for d in values[1]]).copy()]


tile = OPS.declare("Tile", "x repeated multiples[i] times along each dim i.") \
    .input("x").input("multiples", INDEX_TYPES).output("y")


@tile.infer
def _infer_tile(node):
    x, multiples = node.inputs[0].desc, const_ints(node, 1)
    if multiples is None or x.shape is None:
        return [unknown_desc(x, x.dtype)]
    return [TensorDesc(x.dtype, tuple(0 if m == 0 else None if d is None else d * m
                                      for d, m in zip(x.shape, multiples)))]


@tile.lower
def _lower_tile(ctx, node):
    ctx.op.Tile(ctx.input(0), int64_input(ctx, 1), out=ctx.output(0))


@tile.fold
def _fold_tile(node, values):
    return [np.tile(values[0], [int(m) for m in values[1]])]


# -- ranges ----------------------------------------------------------------------------------
RANGE_TYPES = kernel_types("Range", NUMBER_TYPES)     # onnxruntime's Range kernels
range_op = OPS.declare("Range", "start, start + delta, ... up to (not including) limit.") \
    .input("start", NUMBER_TYPES).input("limit", NUMBER_TYPES).input("delta", NUMBER_TYPES).output("y")


def _range_length(start, limit, delta) -> int:
    if delta == 0:
        raise ConversionError("Range needs a non-zero delta")
    return max(int(np.ceil((limit - start) / delta)), 0)


@range_op.infer
def _infer_range(node):
    dtype = node.inputs[0].desc.dtype
    values = [v.const_value for v in node.inputs]
    if any(v is None for v in values):
        return [TensorDesc(dtype, (None,))]
    return [TensorDesc(dtype, (_range_length(*(np.asarray(v).item() for v in values)),))]


@range_op.lower
def _lower_range(ctx, node):
    dtype = node.inputs[0].desc.dtype
    inputs = [ctx.input(i) for i in range(3)]
    if dtype in RANGE_TYPES:
        ctx.op.Range(*inputs, out=ctx.output(0))
        return
    wide = "float32" if dtype in FLOAT_TYPES else "int64"
    values = ctx.op.Range(*[emit_cast(ctx, name, wide) for name in inputs])
    emit_cast(ctx, values, dtype, ctx.output(0))


@range_op.fold
def _fold_range(node, values):
    return [np.arange(values[0], values[1], values[2])]


linspace = OPS.declare("LinSpace", "num evenly spaced values from start to stop (both included).") \
    .input("start", FLOAT_TYPES).input("stop", FLOAT_TYPES).input("num", INDEX_TYPES).output("y")


@linspace.infer
def _infer_linspace(node):
    num = const_ints(node, 2)
    return [TensorDesc(node.inputs[0].desc.dtype, (None if num is None else num[0],))]


@linspace.lower
def _lower_linspace(ctx, node):
    dtype = node.inputs[0].desc.dtype
    zero, one = ctx.constant(np.array(0, np.int64)), ctx.constant(np.array(1, np.int64))
    num = scalar_int64_input(ctx, 2)
    steps = ctx.op.Range(zero, num, one)
    last = ctx.op.Sub(num, one)
    divisor = emit_cast(ctx, ctx.op.Max(last, one), dtype)
    step = ctx.op.Div(ctx.op.Sub(ctx.input(1), ctx.input(0)), divisor)
    values = ctx.op.Add(ctx.input(0), ctx.op.Mul(emit_cast(ctx, steps, dtype), step))
    # TF writes stop itself as the last value (of two or more).
    is_last = ctx.op.And(ctx.op.Equal(steps, last), ctx.op.Greater(steps, zero))
    emit_where(ctx, is_last, ctx.input(1), values, dtype, ctx.output(0))


@linspace.fold
def _fold_linspace(node, values):
    return [np.linspace(values[0], values[1], int(values[2]), dtype=values[0].dtype)]


# -- zeros and ones like --------------------------------------------------------------------
def _fill_like(op_type: str, value: int):
    proto = OPS.declare(op_type, f"a tensor of {value}s with x's shape and dtype") \
        .input("x", ALL_TYPES).output("y")
    proto.infer(same_as_input)

    @proto.lower
    def lower(ctx, node):
        desc = node.inputs[0].desc
        work = "float32" if desc.dtype == "bfloat16" else desc.dtype
        shape = (ctx.constant(np.array(desc.shape, np.int64)) if desc.is_fully_known()
                 else ctx.op.Shape(ctx.input(0)))
        fill = tensor_proto("value", np.array([value], numpy_dtype(work)))
        if work == desc.dtype:
            ctx.op.ConstantOfShape(shape, out=ctx.output(0), value=fill)
        else:
            filled = ctx.op.ConstantOfShape(shape, value=fill)
            ctx.op.Cast(filled, out=ctx.output(0), to=ONNX_DTYPES[desc.dtype])
    proto.fold(fold_with(np.zeros_like if value == 0 else np.ones_like))


_fill_like("ZerosLike", 0)
_fill_like("OnesLike", 1)
