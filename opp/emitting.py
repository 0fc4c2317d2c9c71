"""ONNX emission helpers for lowerings, all written with `ctx.op`: int64 inputs and constants,
casts, dims, Where and wider dtypes, the working-dtype `Emitter` of composed bodies and the
`lowering` factory that runs a body in a dtype onnxruntime has kernels for."""

from __future__ import annotations

from typing import Callable, List, Optional, Sequence

import numpy as np

from tf2ir.ir import ConversionError
from tf2ir.ir.onnx.writer import ONNX_DTYPES
from tf2ir.ir.tensor import numpy_dtype
from tf2ir.opp.carriers import CARRIERS, WHERE_TYPES, WHERE_VIA
from tf2ir.opp.shapes import normalize_axis


# -- int64 inputs and constants ------------------------------------------------------------
def int64_constant(ctx, values) -> str:
    """An int64 initializer holding `values`."""
    return ctx.constant(np.asarray(values, np.int64))


def int64_input(ctx, index: int) -> str:
    """The node's input `index` as an int64 tensor (folded when constant)."""
    value = ctx.const_input(index)
    if value is not None:
        return ctx.constant(np.asarray(value, dtype=np.int64), "i64")
    if ctx.input_desc(index).dtype == "int64":
        return ctx.input(index)
    return ctx.op.Cast(ctx.input(index), to=7)


def scalar_int64_input(ctx, index: int) -> str:
    """The node's input `index` (a scalar or 1-element tensor) as an int64 scalar."""
    value = ctx.const_input(index)
    if value is not None:
        return ctx.constant(np.array(int(np.asarray(value).reshape(-1)[0]), np.int64))
    name = int64_input(ctx, index)
    if ctx.input_desc(index).rank != 0:
        name = ctx.op.Reshape(name, int64_constant(ctx, []))
    return name


def cast_from_int64(ctx, name: str, dtype: str, output: Optional[str] = None) -> str:
    """Cast an int64 ONNX tensor to `dtype` (writing `output` when given)."""
    if dtype == "int64":
        if output:
            return ctx.op.Identity(name, out=output)
        return name
    return ctx.op.Cast(name, out=output, to=ONNX_DTYPES[dtype])


# -- casts, dims, Where and wider dtypes ---------------------------------------------------
def emit_cast(ctx, name: str, dtype: str, output: Optional[str] = None) -> str:
    """Cast ONNX tensor `name` to `dtype` (writing `output` when given)."""
    return ctx.op.Cast(name, out=output, to=ONNX_DTYPES[dtype])


def emit_dim(ctx, x: str, axis: int) -> str:
    """Dim `axis` of tensor x as an int64 scalar."""
    return ctx.op.Gather(ctx.op.Shape(x), ctx.constant(np.array(axis, np.int64)), axis=0)


def emit_along(ctx, x: str, axis: int, rank: Optional[int]) -> str:
    """The 1-D int64 shape [1, .., -1 at `axis`, .., 1] of tensor x's rank: a Reshape target
    that lays a vector along `axis` of x. A constant where `rank` is known; with the rank
    unknown (None) it is built at run time, and a negative `axis` counts from the end."""
    if rank is not None:
        axis = normalize_axis(axis, rank)
        return ctx.constant(np.array([-1 if i == axis else 1 for i in range(rank)], np.int64))
    count = ctx.op.Shape(ctx.op.Shape(x))
    ones = ctx.op.Expand(ctx.constant(np.array([1], np.int64)), count)
    return ctx.op.ScatterElements(ones, ctx.constant(np.array([axis], np.int64)),
                                  ctx.constant(np.array([-1], np.int64)), axis=0)


def emit_where(ctx, cond: str, a: str, b: str, dtype: str, output: Optional[str] = None) -> str:
    """ONNX Where, through a wider dtype where onnxruntime has no kernel for `dtype`."""
    if dtype in WHERE_TYPES:
        return ctx.op.Where(cond, a, b, out=output)
    wide = WHERE_VIA.get(dtype)
    if wide is None:
        raise ConversionError(f"dtype {dtype} is not supported here")
    picked = ctx.op.Where(cond, emit_cast(ctx, a, wide), emit_cast(ctx, b, wide))
    return emit_cast(ctx, picked, dtype, output)


def emit_via(ctx, onnx_op, inputs, output, dtype, via, cast_count=None, **attrs):
    """Emit `onnx_op` writing `output`; when `dtype` is a key of `via` (a table of
    `carriers`), the inputs (the first `cast_count` of them, when given) are cast to via[dtype]
    first and the result cast back."""
    write = getattr(ctx.op, onnx_op)
    wide = via.get(dtype)
    if wide is None:
        return write(*inputs, out=output, **attrs)
    count = len(inputs) if cast_count is None else cast_count
    cast_inputs = [ctx.op.Cast(name, to=ONNX_DTYPES[wide]) if name and i < count else name
                   for i, name in enumerate(inputs)]
    return ctx.op.Cast(write(*cast_inputs, **attrs), out=output, to=ONNX_DTYPES[dtype])


# -- composed bodies in a working dtype -----------------------------------------------------
Body = Callable[["Emitter", List[str], str], str]


class Emitter:
    """`ctx.op` with a working dtype, for composed lowerings: `o.Add(a, b)` emits one node and
    returns its output name (`out=`, `outputs=`, `domain=` as in ctx.op); `o.c(v)` is a
    constant of the working dtype."""

    def __init__(self, ctx, dtype: str, out: str = None):
        self.ctx, self.dtype = ctx, dtype
        self.out = out     # the name a body gives its last node (the op's output, or None)

    def c(self, value, dtype=None) -> str:
        return self.ctx.constant(np.array(value, numpy_dtype(dtype or self.dtype)))

    def __getattr__(self, onnx_op: str):
        if onnx_op.startswith("_"):
            raise AttributeError(onnx_op)
        return getattr(self.ctx.op, onnx_op)


def work_dtype(dtype: str, kernels: Sequence[str], what: str = "") -> str:
    """`dtype` when onnxruntime has kernels for it, else its first carrier that has."""
    if dtype in kernels:
        return dtype
    for carrier in CARRIERS.get(dtype, ()):
        if carrier in kernels:
            return carrier
    raise ConversionError(f"{what or 'this op'} has no onnxruntime kernel for {dtype}")


def lowering(body: Body, kernels: Sequence[str], operands: Sequence[int] = (0, 1),
             keeps_dtype: bool = True):
    """A lowering that runs `body(o, input names, dtype) -> output name` in a dtype from
    `kernels`: the `operands` inputs are cast to a carrier where needed, and the result cast
    back when the op's output has the operands' dtype (`keeps_dtype`). The body names its last
    node `o.out` (None when a cast back follows)."""
    def lower(ctx, node):
        dtype = node.inputs[operands[0]].desc.dtype
        work = work_dtype(dtype, kernels, node.op_type)
        names = [ctx.input(i) for i in range(len(node.inputs))]
        if work != dtype:
            for i in operands:
                names[i] = ctx.op.Cast(names[i], to=ONNX_DTYPES[work])
        o = Emitter(ctx, work, ctx.output(0) if work == dtype or not keeps_dtype else None)
        result = body(o, names, work)
        if o.out is None:
            ctx.op.Cast(result, out=ctx.output(0), to=ONNX_DTYPES[dtype])
    return lower
