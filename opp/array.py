"""Array ops: constants, identities and casts; reshaping, squeezing, expanding, transposing
and padding; and the shape queries Shape, ShapeN, Size and Rank."""

from __future__ import annotations

import numpy as np

from tf2ir.ir import ConversionError, TensorDesc, OpSet
from tf2ir.ir.onnx.writer import ONNX_DTYPES
from tf2ir.ir.tensor import DTYPES, INDEX_TYPES, dtype_of_numpy, numpy_dtype
from tf2ir.opp.coordinates import lower_flat_symmetric_pad, lower_runtime_transpose
from tf2ir.opp.emitting import cast_from_int64, emit_cast, emit_dim, int64_input
from tf2ir.opp.spectral import COMPLEX, check_pair_outputs, pair_input
from tf2ir.opp.shapes import (
    INT64_MIN, const_ints, normalize_axis, partial_ints, same_as_input, scalar_int,
)

OPS = OpSet("tf2ir.opp.array")

const = OPS.declare("Const", "A constant tensor (its data lives in the weights file).") \
    .output("y").attr("value", "tensor")


@const.infer
def _infer_const(node):
    value = node.attrs["value"]
    desc = node.outputs[0].desc
    return [TensorDesc(dtype_of_numpy(value.dtype), tuple(value.shape), desc.format, desc.origin_format)]


@const.lower
def _lower_const(ctx, node):
    ctx.initializer(ctx.output(0), node.attrs["value"])


identity = OPS.declare("Identity", "Returns its input.").input("x").output("y")
identity.infer(same_as_input)


@identity.lower
def _lower_identity(ctx, node):
    ctx.op.Identity(ctx.input(0), out=ctx.output(0))


identity_n = OPS.declare("IdentityN", "Returns x0..xN-1 as y0..yN-1.") \
    .dynamic_input("x", count_attr="N").dynamic_output("y", count_attr="N").attr("N", "int")


@identity_n.infer
def _infer_identity_n(node):
    return [TensorDesc(v.desc.dtype, v.desc.shape, v.desc.format, v.desc.origin_format)
            for v in node.inputs]


@identity_n.lower
def _lower_identity_n(ctx, node):
    for i in range(len(node.inputs)):
        ctx.op.Identity(ctx.input(i), out=ctx.output(i))


cast = OPS.declare("Cast", "Converts to `dst_type`.").input("x").output("y").attr("dst_type", "dtype")


@cast.infer
def _infer_cast(node):
    return [TensorDesc(node.attrs["dst_type"], node.inputs[0].desc.shape)]


@cast.lower
def _lower_cast(ctx, node):
    if node.inputs[0].desc.dtype == node.attrs["dst_type"]:   # a no-op (TFLite's DEQUANTIZE of
        ctx.op.Identity(ctx.input(0), out=ctx.output(0))     # a tensor the view dequantized)
        return
    ctx.op.Cast(ctx.input(0), out=ctx.output(0), to=ONNX_DTYPES[node.attrs["dst_type"]])


@cast.fold
def _fold_cast(node, values):
    return [values[0].astype(numpy_dtype(node.attrs["dst_type"]))]


# -- shapes ---------------------------------------------------------------------------------
reshape = OPS.declare("Reshape", "Gives x the shape `shape` (one -1 dim is inferred).") \
    .input("x").input("shape", INDEX_TYPES).output("y")


@reshape.infer
def _infer_reshape(node):
    x, dims = node.inputs[0].desc, const_ints(node, 1)
    if dims is None:
        shape_len = node.inputs[1].desc.shape
        rank = shape_len[0] if shape_len and len(shape_len) == 1 else None
        if rank is None:
            return [TensorDesc(x.dtype, None)]
        # the entries known now (a Pack of run-time and constant dims, as TF's own shape
        # function reads it): the channels after a reshape with run-time height and width
        known = partial_ints(node.inputs[1], rank)
        return [TensorDesc(x.dtype, tuple(None if d is None or d < 0 else d for d in known))]
    out = [None if d == -1 else d for d in dims]
    if -1 in dims and x.is_fully_known():
        known = int(np.prod([d for d in dims if d != -1]))
        total = int(np.prod(x.shape))
        if known == 0 or total % known:
            raise ConversionError(f"cannot reshape {list(x.shape)} to {dims}")
        out[dims.index(-1)] = total // known
    elif x.is_fully_known() and int(np.prod(x.shape)) != int(np.prod(dims)):
        raise ConversionError(f"cannot reshape {list(x.shape)} ({int(np.prod(x.shape))} values) to {dims}")
    return [TensorDesc(x.dtype, tuple(out))]


@reshape.lower
def _lower_reshape(ctx, node):
    dims = const_ints(node, 1)
    # TF's 0 is a 0 (never "copy the input dim"), in a run-time target too
    allow_zero = 1 if dims is None or 0 in dims else None
    source, target = ctx.input(0), int64_input(ctx, 1)
    if node.inputs[0].desc.dtype in COMPLEX:      # (real, imaginary) pairs: the pair dim kept
        check_pair_outputs(node)
        source = pair_input(ctx, node, 0)
        target = ctx.op.Concat(target, ctx.constant(np.array([2], np.int64)), axis=0)
    ctx.op.Reshape(source, target, out=ctx.output(0), allowzero=allow_zero)


@reshape.fold
def _fold_reshape(node, values):
    return [values[0].reshape([int(d) for d in values[1]])]


squeeze = OPS.declare("Squeeze", "Removes size-1 dims (all of them when `axis` is empty).") \
    .input("x").output("y").attr("axis", "ints", [])


@squeeze.infer
def _infer_squeeze(node):
    x, axes = node.inputs[0].desc, node.attrs["axis"]
    if x.shape is None:
        return [TensorDesc(x.dtype, None)]
    if not axes:
        if any(d is None for d in x.shape):     # which dims are 1 is known at run time (as in TF)
            return [TensorDesc(x.dtype, None)]
        return [TensorDesc(x.dtype, tuple(d for d in x.shape if d != 1))]
    axes = {normalize_axis(a, len(x.shape)) for a in axes}
    for a in axes:
        if x.shape[a] not in (None, 1):
            raise ConversionError(f"cannot squeeze dim {a} of size {x.shape[a]}")
    return [TensorDesc(x.dtype, tuple(d for i, d in enumerate(x.shape) if i not in axes))]


@squeeze.lower
def _lower_squeeze(ctx, node):
    axes = node.attrs["axis"]
    if not axes:
        shape = node.inputs[0].desc.shape
        if shape is None or None in shape:     # ONNX Squeeze without axes drops every 1-dim
            ctx.op.Squeeze(ctx.input(0), out=ctx.output(0))
            return
        axes = [i for i, d in enumerate(shape) if d == 1]
    ctx.op.Squeeze(ctx.input(0), ctx.constant(np.array(axes, np.int64)), out=ctx.output(0))


@squeeze.fold
def _fold_squeeze(node, values):
    axes = node.attrs.get("axis") or None
    return [np.squeeze(values[0], axis=None if axes is None else tuple(axes))]


expand_dims = OPS.declare("ExpandDims", "Inserts a size-1 dim at `axis`.") \
    .input("x").input("axis", INDEX_TYPES).output("y")


@expand_dims.infer
def _infer_expand_dims(node):
    x, axis = node.inputs[0].desc, const_ints(node, 1)
    if x.shape is None or axis is None:
        return [TensorDesc(x.dtype, None if x.rank is None else (None,) * (x.rank + 1))]
    a = normalize_axis(axis[0], len(x.shape) + 1)
    return [TensorDesc(x.dtype, x.shape[:a] + (1,) + x.shape[a:])]


@expand_dims.lower
def _lower_expand_dims(ctx, node):
    axis, rank = const_ints(node, 1), node.inputs[0].desc.rank
    if axis is not None and rank is not None:
        a = normalize_axis(axis[0], rank + 1)
        ctx.op.Unsqueeze(ctx.input(0), ctx.constant(np.array([a], np.int64)), out=ctx.output(0))
        return
    # A run-time axis (or rank): ONNX's negative axes count from the end of the expanded
    # dims, as TF's do (axis + rank + 1).
    axes = ctx.op.Reshape(int64_input(ctx, 1), ctx.constant(np.array([1], np.int64)))
    ctx.op.Unsqueeze(ctx.input(0), axes, out=ctx.output(0))


@expand_dims.fold
def _fold_expand_dims(node, values):
    return [np.expand_dims(values[0], scalar_int(values[1]))]


transpose = OPS.declare("Transpose", "Permutes dims by `perm`.") \
    .input("x").input("perm", INDEX_TYPES).output("y")


@transpose.infer
def _infer_transpose(node):
    x, perm = node.inputs[0].desc, const_ints(node, 1)
    if node.inputs[1].desc.rank not in (None, 1):
        raise ConversionError(f"perm must be 1-D, it has rank {node.inputs[1].desc.rank}")
    if perm is None:
        return [TensorDesc(x.dtype, None if x.rank is None else (None,) * x.rank)]
    if sorted(perm) != list(range(len(perm))) or x.rank not in (None, len(perm)):
        raise ConversionError(f"perm {perm} is not a permutation of the {x.rank} dims of x"
                              if x.rank is not None else f"perm {perm} is not a permutation")
    shape = None if x.shape is None else tuple(x.shape[p] for p in perm)
    return [TensorDesc(x.dtype, shape)]


@transpose.lower
def _lower_transpose(ctx, node):
    perm = const_ints(node, 1)
    if perm is None:
        lower_runtime_transpose(ctx)
        return
    ctx.op.Transpose(ctx.input(0), out=ctx.output(0), perm=perm)


@transpose.fold
def _fold_transpose(node, values):
    return [np.transpose(values[0], [int(p) for p in values[1]])]

# -- padding --------------------------------------------------------------------------------
pad = OPS.declare("Pad", "Pads with a constant (0 unless `constant_values` is given).") \
    .input("x").input("paddings", INDEX_TYPES).optional_input("constant_values").output("y") \
    .attr("mode", "str", "CONSTANT")


@pad.infer
def _infer_pad(node):
    x, pads = node.inputs[0].desc, const_ints(node, 1)
    if x.shape is None or pads is None:
        return [TensorDesc(x.dtype, None if x.rank is None else (None,) * x.rank, x.format, x.origin_format)]
    shape = tuple(None if d is None else d + pads[2 * i] + pads[2 * i + 1] for i, d in enumerate(x.shape))
    return [TensorDesc(x.dtype, shape, x.format, x.origin_format)]


@pad.lower
def _lower_pad(ctx, node):
    mode = node.attrs["mode"].upper()
    if mode not in ("CONSTANT", "REFLECT", "SYMMETRIC"):
        raise ConversionError(f"pad mode {mode} is not CONSTANT, REFLECT or SYMMETRIC")
    pads = ctx.const_input(1)
    if mode == "SYMMETRIC":
        if pads is None:
            _lower_runtime_symmetric_pad(ctx, node)
        else:
            _lower_symmetric_pad(ctx, np.asarray(pads, np.int64).reshape(-1, 2))
        return
    if pads is not None:
        pads_name = ctx.constant(np.asarray(pads, np.int64).T.reshape(-1), "pads")
    else:
        pairs = int64_input(ctx, 1)
        flipped = ctx.op.Transpose(pairs, perm=[1, 0])
        pads_name = ctx.op.Reshape(flipped, ctx.constant(np.array([-1], np.int64)))
    inputs = [ctx.input(0), pads_name] + ([ctx.input(2)] if ctx.input(2) else [])
    ctx.op.Pad(*inputs, out=ctx.output(0),
               mode={"CONSTANT": "constant", "REFLECT": "reflect"}[mode])


def _lower_symmetric_pad(ctx, pads):
    """SYMMETRIC mirrors the edge values too (ONNX Pad's reflect does not): per padded axis,
    concatenate the reversed leading slice, x and the reversed trailing slice."""
    current = ctx.input(0)
    padded = [axis for axis, (before, after) in enumerate(pads) if before or after]

    def reversed_slice(source, axis, start, stop):
        return ctx.op.Slice(source, ctx.constant(np.array([start], np.int64)),
                            ctx.constant(np.array([stop], np.int64)),
                            ctx.constant(np.array([axis], np.int64)),
                            ctx.constant(np.array([-1], np.int64)))

    for axis in padded:
        before, after = (int(p) for p in pads[axis])
        parts = []
        if before:
            parts.append(reversed_slice(current, axis, before - 1, INT64_MIN))
        parts.append(current)
        if after:
            parts.append(reversed_slice(current, axis, -1, -after - 1))
        final = axis == padded[-1]
        current = ctx.op.Concat(*parts, out=ctx.output(0) if final else None, axis=axis)
    if not padded:
        ctx.op.Identity(current, out=ctx.output(0))


def _lower_runtime_symmetric_pad(ctx, node):
    """SYMMETRIC with run-time paddings: per axis, a Gather of x at the source index of each
    output position j: i = j - before, mirrored as -i-1 below 0 and 2*dim-1-i past the end."""
    rank = node.inputs[0].desc.rank
    if rank is None:
        shape = node.inputs[1].desc.shape
        rank = shape[0] if shape is not None and len(shape) == 2 else None
    if rank is None:
        lower_flat_symmetric_pad(ctx)
        return
    pairs = int64_input(ctx, 1)

    def c(value):
        return ctx.constant(np.array(value, np.int64))

    current = ctx.input(0)
    for axis in range(rank):
        before, after = (ctx.op.Gather(ctx.op.Gather(pairs, c(axis), axis=0), c(side),
                                       axis=0) for side in (0, 1))
        dim = emit_dim(ctx, current, axis)
        size = ctx.op.Add(ctx.op.Add(dim, before), after)
        source = ctx.op.Sub(ctx.op.Range(c(0), size, c(1)), before)
        below = ctx.op.Less(source, c(0))
        source = ctx.op.Where(below, ctx.op.Sub(c(-1), source), source)
        past = ctx.op.GreaterOrEqual(source, dim)
        mirrored = ctx.op.Sub(ctx.op.Sub(ctx.op.Add(dim, dim), c(1)), source)
        source = ctx.op.Where(past, mirrored, source)
        current = ctx.op.Gather(current, source, out=ctx.output(0) if axis == rank - 1 else None,
                                axis=axis)
    if rank == 0:
        ctx.op.Identity(current, out=ctx.output(0))


# -- shape queries -------------------------------------------------------------------------
shape_op = OPS.declare("Shape", "The shape of x as a 1-D tensor of `dtype`.") \
    .input("x").output("y", INDEX_TYPES).attr("dtype", "dtype", "int32")


@shape_op.infer
def _infer_shape(node):
    return [TensorDesc(node.attrs["dtype"], (node.inputs[0].desc.rank,))]


def _input_shape(ctx, node) -> str:
    """The Shape of input 0; of a complex one, its pair's shape without the pair dim."""
    if node.inputs[0].desc.dtype in COMPLEX:
        return ctx.op.Shape(pair_input(ctx, node, 0), end=-1)
    return ctx.op.Shape(ctx.input(0))


@shape_op.lower
def _lower_shape(ctx, node):
    shape = _input_shape(ctx, node)
    cast_from_int64(ctx, shape, node.attrs["dtype"], ctx.output(0))


@shape_op.fold
def _fold_shape(node, values):
    return [np.array(values[0].shape, DTYPES[node.attrs["dtype"]])]


def _shape_constant(ctx, node, shape, dtype: str, output: str) -> bool:
    """Emit a fully known shape (or size) as a constant; False when it is not known."""
    if shape is None or any(d is None for d in np.atleast_1d(np.asarray(shape, object))):
        return False
    ctx.op.Identity(ctx.constant(np.asarray(shape, numpy_dtype(dtype))), out=output)
    return True


size = OPS.declare("Size", "The number of elements of x, as a scalar of `dtype`.") \
    .input("x").output("y", INDEX_TYPES).attr("dtype", "dtype", "int32")


@size.infer
def _infer_size(node):
    return [TensorDesc(node.attrs["dtype"], ())]


@size.lower
def _lower_size(ctx, node):
    shape = node.inputs[0].desc.shape
    known = shape is not None and all(d is not None for d in shape)
    if not _shape_constant(ctx, node, int(np.prod(shape)) if known else None, node.attrs["dtype"],
                           ctx.output(0)):
        count = ctx.op.ReduceProd(_input_shape(ctx, node), keepdims=0) \
            if node.inputs[0].desc.dtype in COMPLEX else ctx.op.Size(ctx.input(0))
        cast_from_int64(ctx, count, node.attrs["dtype"], ctx.output(0))


@size.fold
def _fold_size(node, values):
    return [np.array(values[0].size, numpy_dtype(node.attrs["dtype"]))]


rank_op = OPS.declare("Rank", "The rank of x as an int32 scalar.").input("x").output("y", ("int32",))


@rank_op.infer
def _infer_rank(node):
    return [TensorDesc("int32", ())]


@rank_op.lower
def _lower_rank(ctx, node):
    rank = node.inputs[0].desc.rank
    if not _shape_constant(ctx, node, rank, "int32", ctx.output(0)):
        count = ctx.op.Size(_input_shape(ctx, node))
        emit_cast(ctx, count, "int32", ctx.output(0))


@rank_op.fold
def _fold_rank(node, values):
    return [np.array(values[0].ndim, np.int32)]


shape_n = OPS.declare("ShapeN", "The shapes of x0..xN-1 as y0..yN-1 of `dtype`.") \
    .dynamic_input("x", count_attr="N").dynamic_output("y", INDEX_TYPES, count_attr="N") \
    .attr("N", "int").attr("dtype", "dtype", "int32")


@shape_n.infer
def _infer_shape_n(node):
    return [TensorDesc(node.attrs["dtype"], (v.desc.rank,)) for v in node.inputs]


@shape_n.lower
def _lower_shape_n(ctx, node):
    dtype = node.attrs["dtype"]
    for i, value in enumerate(node.inputs):
        if not _shape_constant(ctx, node, value.desc.shape, dtype, ctx.output(i)):
            cast_from_int64(ctx, ctx.op.Shape(ctx.input(i)), dtype, ctx.output(i))


@shape_n.fold
def _fold_shape_n(node, values):
    return [np.array(v.shape, numpy_dtype(node.attrs["dtype"])) for v in values]
