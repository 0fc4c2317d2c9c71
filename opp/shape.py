"""Shape, indexing and tensor-creation ops: slicing, gathering and scattering, tiling, filling, ranges, one-hot, space/batch/depth rearrangements."""

from __future__ import annotations

from typing import List, Optional

import numpy as np

from tf2ir.ir import ConversionError, TensorDesc, OpSet
from tf2ir.ir.onnx.writer import ONNX_DTYPES
from tf2ir.ir.tensor import FLOAT_TYPES, INDEX_TYPES, NUMBER_TYPES, numpy_dtype
from tf2ir.opp.common import (
    INT64_MAX, INT64_MIN, cast_from_int64, const_ints, int64_input, normalize_axis, same_as_input,
)

OPS = OpSet("tf2ir.opp.shape")

# onnxruntime's CPU kernels lack some dtypes; these ops run on a wider dtype and cast back.
WHERE_TYPES = ("float16", "float32", "float64", "int8", "uint8", "int32", "int64")
WIDER = {"bool": "uint8", "bfloat16": "float32", "int16": "int32", "uint16": "int32",
         "uint32": "int64", "uint64": "int64"}


def _unknown(desc_or_rank, dtype: str) -> TensorDesc:
    rank = desc_or_rank if isinstance(desc_or_rank, int) or desc_or_rank is None else desc_or_rank.rank
    return TensorDesc(dtype, None if rank is None else (None,) * rank)


def _i64(ctx, values) -> str:
    return ctx.constant(np.asarray(values, np.int64))


def _cast(ctx, name: str, dtype: str, output: Optional[str] = None) -> str:
    return ctx.emit("Cast", [name], [output] if output else 1, to=ONNX_DTYPES[dtype])[0]


def _select(ctx, cond: str, a: str, b: str, dtype: str, output: Optional[str] = None) -> str:
    """ONNX Where, through a wider dtype where onnxruntime has no kernel for `dtype`."""
    if dtype in WHERE_TYPES:
        return ctx.emit("Where", [cond, a, b], [output] if output else 1)[0]
    wide = WIDER.get(dtype)
    if wide is None:
        raise ConversionError(f"dtype {dtype} is not supported here")
    picked = ctx.emit("Where", [cond, _cast(ctx, a, wide), _cast(ctx, b, wide)])[0]
    return _cast(ctx, picked, dtype, output)


def _dim(ctx, x: str, axis: int) -> str:
    """Dim `axis` of tensor x as an int64 scalar."""
    shape = ctx.emit("Shape", [x])[0]
    return ctx.emit("Gather", [shape, ctx.constant(np.array(axis, np.int64))], axis=0)[0]


def _scalar_int64(ctx, index: int) -> str:
    """The node's input `index` (a scalar or 1-element tensor) as an int64 scalar."""
    value = ctx.const_input(index)
    if value is not None:
        return ctx.constant(np.array(int(np.asarray(value).reshape(-1)[0]), np.int64))
    name = int64_input(ctx, index)
    if ctx.input_desc(index).rank != 0:
        name = ctx.emit("Reshape", [name, _i64(ctx, [])])[0]
    return name


def _shape_constant(ctx, node, shape, dtype: str, output: str) -> bool:
    """Emit a fully known shape (or size) as a constant; False when it is not known."""
    if shape is None or any(d is None for d in np.atleast_1d(np.asarray(shape, object))):
        return False
    ctx.emit("Identity", [ctx.constant(np.asarray(shape, numpy_dtype(dtype)))], [output])
    return True


# -- slicing ---------------------------------------------------------------------------------
slice_op = OPS.declare("Slice", "The block of x starting at `begin` with `size` (-1: to the end).") \
    .input("x").input("begin", INDEX_TYPES).input("size", INDEX_TYPES).output("y")


@slice_op.infer
def _infer_slice(node):
    x, begin, size = node.inputs[0].desc, const_ints(node, 1), const_ints(node, 2)
    if size is None:
        size_shape = node.inputs[2].desc.shape
        return [_unknown(size_shape[0] if size_shape else x.rank, x.dtype)]
    shape = []
    for i, s in enumerate(size):
        if s != -1:
            shape.append(s)
        elif begin is None or x.shape is None or x.shape[i] is None:
            shape.append(None)
        else:
            shape.append(x.shape[i] - begin[i])
    return [TensorDesc(x.dtype, tuple(shape))]


@slice_op.lower
def _lower_slice(ctx, node):
    begin, size = const_ints(node, 1), const_ints(node, 2)
    starts = int64_input(ctx, 1)
    if begin is not None and size is not None:
        ends = _i64(ctx, [INT64_MAX if s == -1 else b + s for b, s in zip(begin, size)])
        n = len(size)
    else:
        sizes = int64_input(ctx, 2)
        to_end = ctx.emit("Equal", [sizes, ctx.constant(np.array(-1, np.int64))])[0]
        ends = ctx.emit("Where", [to_end, ctx.constant(np.array(INT64_MAX, np.int64)),
                                  ctx.emit("Add", [starts, sizes])[0]])[0]
        n = node.inputs[2].desc.shape[0] if node.inputs[2].desc.shape else node.inputs[0].desc.rank
        if n is None:
            raise ConversionError("the slice rank must be known")
    ctx.emit("Slice", [ctx.input(0), starts, ends, _i64(ctx, range(n))], [ctx.output(0)])


def _fold_slice(node, values):
    x, begin, size = values[0], values[1].reshape(-1), values[2].reshape(-1)
    return [x[tuple(slice(int(b), None if s == -1 else int(b + s)) for b, s in zip(begin, size))]]


slice_op.fold(_fold_slice)

reverse = OPS.declare("ReverseV2", "Reverses x along each dim in `axis`.") \
    .input("x").input("axis", INDEX_TYPES).output("y")
reverse.infer(same_as_input)


@reverse.lower
def _lower_reverse(ctx, node):
    axes = const_ints(node, 1)
    if axes is None:
        raise ConversionError("the reversed axes must be constant")
    rank = node.inputs[0].desc.rank
    if rank is None:
        raise ConversionError("the input rank must be known")
    axes = sorted({normalize_axis(a, rank) for a in axes})
    if not axes:
        ctx.emit("Identity", [ctx.input(0)], [ctx.output(0)])
        return
    n = len(axes)
    ctx.emit("Slice", [ctx.input(0), _i64(ctx, [-1] * n), _i64(ctx, [INT64_MIN] * n), _i64(ctx, axes),
                       _i64(ctx, [-1] * n)], [ctx.output(0)])


reverse.fold(lambda node, values: [np.flip(values[0], tuple(int(a) for a in values[1].reshape(-1)))])

reverse_sequence = OPS.declare(
    "ReverseSequence", "Per batch entry b, reverses the first seq_lengths[b] items along seq_dim.") \
    .input("x").input("seq_lengths", INDEX_TYPES).output("y") \
    .attr("seq_dim", "int").attr("batch_dim", "int", 0)
reverse_sequence.infer(same_as_input)


@reverse_sequence.lower
def _lower_reverse_sequence(ctx, node):
    # index[t] = len - 1 - t for t < len, else t; then GatherElements along seq_dim.
    rank = node.inputs[0].desc.rank
    if rank is None:
        raise ConversionError("the input rank must be known")
    seq = normalize_axis(node.attrs["seq_dim"], rank)
    batch = normalize_axis(node.attrs["batch_dim"], rank)
    if seq == batch:
        raise ConversionError("seq_dim and batch_dim must differ")

    def along(axis):
        return _i64(ctx, [-1 if i == axis else 1 for i in range(rank)])

    one = ctx.constant(np.array(1, np.int64))
    steps = ctx.emit("Range", [ctx.constant(np.array(0, np.int64)), _dim(ctx, ctx.input(0), seq), one])[0]
    t = ctx.emit("Reshape", [steps, along(seq)])[0]
    lengths = ctx.emit("Reshape", [int64_input(ctx, 1), along(batch)])[0]
    inside = ctx.emit("Less", [t, lengths])[0]
    mirrored = ctx.emit("Sub", [ctx.emit("Sub", [lengths, one])[0], t])[0]
    index = ctx.emit("Where", [inside, mirrored, t])[0]
    index = ctx.emit("Expand", [index, ctx.emit("Shape", [ctx.input(0)])[0]])[0]
    ctx.emit("GatherElements", [ctx.input(0), index], [ctx.output(0)], axis=seq)


# -- creation: fill, range, linspace, tile, broadcast -------------------------------------------
def _infer_from_shape_input(node, index: int, dtype: str) -> List[TensorDesc]:
    dims = const_ints(node, index)
    if dims is not None:
        return [TensorDesc(dtype, tuple(dims))]
    shape = node.inputs[index].desc.shape
    return [_unknown(shape[0] if shape else None, dtype)]


fill = OPS.declare("Fill", "A tensor of shape `dims` filled with the scalar `value`.") \
    .input("dims", INDEX_TYPES).input("value").output("y")
fill.infer(lambda node: _infer_from_shape_input(node, 0, node.inputs[1].desc.dtype))
fill.lower(lambda ctx, node: ctx.emit("Expand", [ctx.input(1), int64_input(ctx, 0)], [ctx.output(0)]))
fill.fold(lambda node, values: [np.full([int(d) for d in values[0]], values[1])])

broadcast_to = OPS.declare("BroadcastTo", "x broadcast (numpy rules) to `shape`.") \
    .input("x").input("shape", INDEX_TYPES).output("y")
broadcast_to.infer(lambda node: _infer_from_shape_input(node, 1, node.inputs[0].desc.dtype))
broadcast_to.lower(lambda ctx, node: ctx.emit("Expand", [ctx.input(0), int64_input(ctx, 1)],
                                              [ctx.output(0)]))
broadcast_to.fold(lambda node, values: [np.broadcast_to(values[0], [int(d) for d in values[1]]).copy()])

tile = OPS.declare("Tile", "x repeated multiples[i] times along each dim i.") \
    .input("x").input("multiples", INDEX_TYPES).output("y")


@tile.infer
def _infer_tile(node):
    x, multiples = node.inputs[0].desc, const_ints(node, 1)
    if multiples is None or x.shape is None:
        return [_unknown(x, x.dtype)]
    return [TensorDesc(x.dtype, tuple(0 if m == 0 else None if d is None else d * m
                                      for d, m in zip(x.shape, multiples)))]


tile.lower(lambda ctx, node: ctx.emit("Tile", [ctx.input(0), int64_input(ctx, 1)], [ctx.output(0)]))
tile.fold(lambda node, values: [np.tile(values[0], [int(m) for m in values[1]])])

RANGE_TYPES = ("float32", "float64", "int16", "int32", "int64")
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
        ctx.emit("Range", inputs, [ctx.output(0)])
        return
    wide = "float32" if dtype in FLOAT_TYPES else "int64"
    values = ctx.emit("Range", [_cast(ctx, name, wide) for name in inputs])[0]
    _cast(ctx, values, dtype, ctx.output(0))


range_op.fold(lambda node, values: [np.arange(values[0], values[1], values[2])])

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
    num = _scalar_int64(ctx, 2)
    steps = ctx.emit("Range", [zero, num, one])[0]
    last = ctx.emit("Sub", [num, one])[0]
    divisor = _cast(ctx, ctx.emit("Max", [last, one])[0], dtype)
    step = ctx.emit("Div", [ctx.emit("Sub", [ctx.input(1), ctx.input(0)])[0], divisor])[0]
    values = ctx.emit("Add", [ctx.input(0), ctx.emit("Mul", [_cast(ctx, steps, dtype), step])[0]])[0]
    # TF writes stop itself as the last value (of two or more).
    is_last = ctx.emit("And", [ctx.emit("Equal", [steps, last])[0],
                               ctx.emit("Greater", [steps, zero])[0]])[0]
    _select(ctx, is_last, ctx.input(1), values, dtype, ctx.output(0))


linspace.fold(lambda node, values: [np.linspace(values[0], values[1], int(values[2]),
                                                dtype=values[0].dtype)])

# -- sizes -----------------------------------------------------------------------------------
size = OPS.declare("Size", "The number of elements of x, as a scalar of `dtype`.") \
    .input("x").output("y", INDEX_TYPES).attr("dtype", "dtype", "int32")
size.infer(lambda node: [TensorDesc(node.attrs["dtype"], ())])


@size.lower
def _lower_size(ctx, node):
    shape = node.inputs[0].desc.shape
    known = shape is not None and all(d is not None for d in shape)
    if not _shape_constant(ctx, node, int(np.prod(shape)) if known else None, node.attrs["dtype"],
                           ctx.output(0)):
        count = ctx.emit("Size", [ctx.input(0)])[0]
        cast_from_int64(ctx, count, node.attrs["dtype"], ctx.output(0))


size.fold(lambda node, values: [np.array(values[0].size, numpy_dtype(node.attrs["dtype"]))])

rank_op = OPS.declare("Rank", "The rank of x as an int32 scalar.").input("x").output("y", ("int32",))
rank_op.infer(lambda node: [TensorDesc("int32", ())])


@rank_op.lower
def _lower_rank(ctx, node):
    rank = node.inputs[0].desc.rank
    if not _shape_constant(ctx, node, rank, "int32", ctx.output(0)):
        count = ctx.emit("Size", [ctx.emit("Shape", [ctx.input(0)])[0]])[0]
        _cast(ctx, count, "int32", ctx.output(0))


rank_op.fold(lambda node, values: [np.array(values[0].ndim, np.int32)])

shape_n = OPS.declare("ShapeN", "The shapes of x0..xN-1 as y0..yN-1 of `dtype`.") \
    .dynamic_input("x", count_attr="N").dynamic_output("y", INDEX_TYPES, count_attr="N") \
    .attr("N", "int").attr("dtype", "dtype", "int32")
shape_n.infer(lambda node: [TensorDesc(node.attrs["dtype"], (v.desc.rank,)) for v in node.inputs])


@shape_n.lower
def _lower_shape_n(ctx, node):
    dtype = node.attrs["dtype"]
    for i, value in enumerate(node.inputs):
        if not _shape_constant(ctx, node, value.desc.shape, dtype, ctx.output(i)):
            cast_from_int64(ctx, ctx.emit("Shape", [ctx.input(i)])[0], dtype, ctx.output(i))


shape_n.fold(lambda node, values: [np.array(v.shape, numpy_dtype(node.attrs["dtype"])) for v in values])

# -- indices: where, one-hot, unique, invert permutation ------------------------------------------
NONZERO_TYPES = ("float16", "float32", "uint8", "int32", "int64", "bool")
where = OPS.declare("Where", "The coordinates of the true (non-zero) entries of x, int64 [n, rank].") \
    .input("x").output("index", ("int64",))
where.infer(lambda node: [TensorDesc("int64", (None, node.inputs[0].desc.rank))])


@where.lower
def _lower_where(ctx, node):
    x = ctx.input(0)
    if node.inputs[0].desc.dtype not in NONZERO_TYPES:
        x = _cast(ctx, x, "bool")
    coords = ctx.emit("NonZero", [x])[0]
    ctx.emit("Transpose", [coords], [ctx.output(0)], perm=[1, 0])


one_hot = OPS.declare("OneHot", "on_value where indices == position along the new dim `axis`, "
                                 "off_value elsewhere (depth positions).") \
    .input("indices", ("uint8", "int32", "int64")).input("depth", INDEX_TYPES) \
    .input("on_value").input("off_value").output("y").attr("axis", "int", -1)


def _one_hot_axis(node, rank: int) -> int:
    axis = node.attrs["axis"]
    if not -1 <= axis <= rank:
        raise ConversionError(f"axis {axis} is out of range for indices of rank {rank}")
    return rank if axis == -1 else axis


@one_hot.infer
def _infer_one_hot(node):
    indices, depth = node.inputs[0].desc, const_ints(node, 1)
    dtype = node.inputs[2].desc.dtype
    if indices.shape is None:
        return [TensorDesc(dtype, None)]
    a = _one_hot_axis(node, len(indices.shape))
    return [TensorDesc(dtype, indices.shape[:a] + (None if depth is None else depth[0],)
                       + indices.shape[a:])]


@one_hot.lower
def _lower_one_hot(ctx, node):
    rank = node.inputs[0].desc.rank
    if rank is None:
        raise ConversionError("the indices rank must be known")
    a = _one_hot_axis(node, rank)
    indices = ctx.emit("Unsqueeze", [int64_input(ctx, 0), _i64(ctx, [a])])[0]
    positions = ctx.emit("Range", [ctx.constant(np.array(0, np.int64)), _scalar_int64(ctx, 1),
                                   ctx.constant(np.array(1, np.int64))])[0]
    positions = ctx.emit("Reshape", [positions, _i64(ctx, [-1] + [1] * (rank - a))])[0]
    hit = ctx.emit("Equal", [indices, positions])[0]
    _select(ctx, hit, ctx.input(2), ctx.input(3), node.inputs[2].desc.dtype, ctx.output(0))


UNIQUE_TYPES = ("float16", "float32", "float64", "int8", "int64")
unique = OPS.declare("Unique", "The distinct values of 1-D x in order of first occurrence (y), "
                                "and for each entry of x its position in y (idx).") \
    .input("x").output("y").output("idx", INDEX_TYPES).attr("out_idx", "dtype", "int32")


@unique.infer
def _infer_unique(node):
    x = node.inputs[0].desc
    if x.rank not in (None, 1):
        raise ConversionError(f"Unique takes a 1-D tensor, not rank {x.rank}")
    return [TensorDesc(x.dtype, (None,)), TensorDesc(node.attrs["out_idx"], x.shape or (None,))]


@unique.lower
def _lower_unique(ctx, node):
    dtype = node.inputs[0].desc.dtype
    x = ctx.input(0)
    wide = None
    if dtype not in UNIQUE_TYPES:
        wide = "int8" if dtype == "bool" else "int64"
        if dtype in ("uint64", "bfloat16"):
            raise ConversionError(f"Unique of {dtype} is not supported")
        x = _cast(ctx, x, wide)
    values, inverse = ctx.fresh("unique_values"), ctx.fresh("unique_inverse")
    ctx.emit("Unique", [x], [values, ctx.fresh("first"), inverse, ctx.fresh("counts")], sorted=0)
    if wide:
        _cast(ctx, values, dtype, ctx.output(0))
    else:
        ctx.emit("Identity", [values], [ctx.output(0)])
    cast_from_int64(ctx, inverse, node.attrs["out_idx"], ctx.output(1))


invert_permutation = OPS.declare("InvertPermutation", "y[x[i]] = i for a permutation x of 0..n-1.") \
    .input("x", INDEX_TYPES).output("y")
invert_permutation.infer(same_as_input)


@invert_permutation.lower
def _lower_invert_permutation(ctx, node):
    dtype = node.inputs[0].desc.dtype
    positions = ctx.emit("Range", [ctx.constant(np.array(0, np.int64)),
                                   ctx.emit("Size", [ctx.input(0)])[0],
                                   ctx.constant(np.array(1, np.int64))])[0]
    if dtype != "int64":
        positions = _cast(ctx, positions, dtype)
    ctx.emit("ScatterElements", [ctx.input(0), ctx.input(0), positions], [ctx.output(0)], axis=0)


invert_permutation.fold(lambda node, values: [np.argsort(values[0]).astype(values[0].dtype)])

# -- gather and scatter ------------------------------------------------------------------------
gather_nd = OPS.declare("GatherNd", "Slices of params at the index tuples in the last dim of indices.") \
    .input("params").input("indices", INDEX_TYPES).output("y")


@gather_nd.infer
def _infer_gather_nd(node):
    params, indices = node.inputs[0].desc, node.inputs[1].desc
    if params.shape is None or indices.shape is None or indices.shape[-1] is None:
        return [TensorDesc(params.dtype, None)]
    depth = indices.shape[-1]
    if depth > len(params.shape):
        raise ConversionError(f"index tuples of length {depth} exceed the params rank {len(params.shape)}")
    return [TensorDesc(params.dtype, indices.shape[:-1] + params.shape[depth:])]


gather_nd.lower(lambda ctx, node: ctx.emit("GatherND", [ctx.input(0), int64_input(ctx, 1)],
                                           [ctx.output(0)]))


def _scatter(ctx, data: str, indices: str, updates: str, dtype: str, reduction: str) -> None:
    """ONNX ScatterND (float16 'add' runs in float32, onnxruntime has no kernel for it)."""
    if dtype in ("float16", "bfloat16") and reduction == "add":
        result = ctx.emit("ScatterND", [_cast(ctx, data, "float32"), indices, _cast(ctx, updates, "float32")],
                          reduction=reduction)[0]
        _cast(ctx, result, dtype, ctx.output(0))
        return
    ctx.emit("ScatterND", [data, indices, updates], [ctx.output(0)], reduction=reduction)


scatter_nd = OPS.declare("ScatterNd", "Zeros of `shape` with updates summed in at indices.") \
    .input("indices", INDEX_TYPES).input("updates").input("shape", INDEX_TYPES).output("y")
scatter_nd.infer(lambda node: _infer_from_shape_input(node, 2, node.inputs[1].desc.dtype))


@scatter_nd.lower
def _lower_scatter_nd(ctx, node):
    dtype = node.inputs[1].desc.dtype
    zero = np.zeros(1, numpy_dtype(dtype))
    from onnx import numpy_helper
    zeros = ctx.emit("ConstantOfShape", [int64_input(ctx, 2)], value=numpy_helper.from_array(zero))[0]
    _scatter(ctx, zeros, int64_input(ctx, 0), ctx.input(1), dtype, "add")


def _tensor_scatter(op_type, reduction, doc):
    proto = OPS.declare(op_type, doc).input("tensor").input("indices", INDEX_TYPES).input("updates") \
        .output("y")
    proto.infer(same_as_input)
    proto.lower(lambda ctx, node: _scatter(ctx, ctx.input(0), int64_input(ctx, 1), ctx.input(2),
                                           node.inputs[0].desc.dtype, reduction))
    return proto


_tensor_scatter("TensorScatterUpdate", "none", "tensor with the slices at indices replaced by updates")
_tensor_scatter("TensorScatterAdd", "add", "tensor with updates added at indices")

# -- band part -------------------------------------------------------------------------------------
band_part = OPS.declare("MatrixBandPart", "Keeps the band of num_lower sub- and num_upper "
                                           "super-diagonals of the innermost matrices (-1: all).") \
    .input("x").input("num_lower", INDEX_TYPES).input("num_upper", INDEX_TYPES).output("y")
band_part.infer(same_as_input)


@band_part.lower
def _lower_band_part(ctx, node):
    rank = node.inputs[0].desc.rank
    if rank is not None and rank < 2:
        raise ConversionError("MatrixBandPart needs a rank >= 2 input")
    zero, one = ctx.constant(np.array(0, np.int64)), ctx.constant(np.array(1, np.int64))
    rows = ctx.emit("Range", [zero, _dim(ctx, ctx.input(0), -2), one])[0]
    cols = ctx.emit("Range", [zero, _dim(ctx, ctx.input(0), -1), one])[0]
    below = ctx.emit("Sub", [ctx.emit("Unsqueeze", [rows, _i64(ctx, [1])])[0], cols])[0]  # i - j
    above = ctx.emit("Neg", [below])[0]

    def within(distance, index):
        limit = _scalar_int64(ctx, index)
        everything = ctx.emit("Less", [limit, zero])[0]
        return ctx.emit("Or", [everything, ctx.emit("LessOrEqual", [distance, limit])[0]])[0]

    keep = ctx.emit("And", [within(below, 1), within(above, 2)])[0]
    dtype = node.inputs[0].desc.dtype
    zeros = ctx.constant(np.zeros((), numpy_dtype(dtype)))
    _select(ctx, keep, ctx.input(0), zeros, dtype, ctx.output(0))


# -- space, batch and depth rearrangements -------------------------------------------------------------
def _block_and_pairs(node, what: str):
    block, pairs = const_ints(node, 1), const_ints(node, 2)
    if block is None or pairs is None:
        raise ConversionError(f"block_shape and {what} must be constant")
    if any(b < 1 for b in block):
        raise ConversionError(f"block_shape {block} must be positive")
    return block, [pairs[2 * i:2 * i + 2] for i in range(len(block))]


def _shape_pieces(ctx, x: str, pieces) -> str:
    """An int64 shape vector joined from pieces: ints (constants) or (start, end, op, value)
    ranges of x's shape, each combined elementwise with a constant (op 'Mul'/'Div'/None)."""
    shape = ctx.emit("Shape", [x])[0]
    parts = []
    for piece in pieces:
        if isinstance(piece, tuple):
            start, end, op, value = piece
            dims = ctx.emit("Slice", [shape, _i64(ctx, [start]), _i64(ctx, [end])])[0]
            if op:
                dims = ctx.emit(op, [dims, _i64(ctx, value)])[0]
            parts.append(dims)
        else:
            parts.append(_i64(ctx, [piece]))
    return ctx.emit("Concat", parts, axis=0)[0]


space_to_batch = OPS.declare("SpaceToBatchND", "Zero-pads the spatial dims and moves blocks of them "
                                                "into the batch dim.") \
    .input("x").input("block_shape", INDEX_TYPES).input("paddings", INDEX_TYPES).output("y")


@space_to_batch.infer
def _infer_space_to_batch(node):
    x = node.inputs[0].desc
    block, pads = _block_and_pairs(node, "paddings")
    if x.shape is None:
        return [TensorDesc(x.dtype, None)]
    m = len(block)
    batch = None if x.shape[0] is None else x.shape[0] * int(np.prod(block))
    spatial = []
    for d, b, (before, after) in zip(x.shape[1:1 + m], block, pads):
        if d is not None and (d + before + after) % b:
            raise ConversionError(f"padded size {d + before + after} is not a multiple of block {b}")
        spatial.append(None if d is None else (d + before + after) // b)
    return [TensorDesc(x.dtype, (batch,) + tuple(spatial) + x.shape[1 + m:])]


@space_to_batch.lower
def _lower_space_to_batch(ctx, node):
    block, pads = _block_and_pairs(node, "paddings")
    rank, m = node.inputs[0].desc.rank, len(block)
    if rank is None:
        raise ConversionError("the input rank must be known")
    x = ctx.input(0)
    if any(p for pair in pads for p in pair):
        onnx_pads = [0] + [p[0] for p in pads] + [0] * (rank - 1 - m) + [0] + [p[1] for p in pads] \
            + [0] * (rank - 1 - m)
        x = ctx.emit("Pad", [x, _i64(ctx, onnx_pads)])[0]
    # [B, s1/b1, b1, ..., sM/bM, bM, rest] → [b1..bM, B, s1/b1..sM/bM, rest] → [B*prod(b), ...]
    pieces = [(0, 1, None, None)]
    for i, b in enumerate(block):
        pieces += [(1 + i, 2 + i, "Div", [b]), b]
    pieces.append((1 + m, INT64_MAX, None, None))
    split = ctx.emit("Reshape", [x, _shape_pieces(ctx, x, pieces)])[0]
    perm = [2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)] \
        + list(range(2 * m + 1, rank + m))
    moved = ctx.emit("Transpose", [split], perm=perm)[0]
    target = _shape_pieces(ctx, x, [(0, 1, "Mul", [int(np.prod(block))]),
                                    (1, 1 + m, "Div", block), (1 + m, INT64_MAX, None, None)])
    ctx.emit("Reshape", [moved, target], [ctx.output(0)])


batch_to_space = OPS.declare("BatchToSpaceND", "Moves blocks of the batch dim back into the "
                                                "spatial dims, then crops them.") \
    .input("x").input("block_shape", INDEX_TYPES).input("crops", INDEX_TYPES).output("y")


@batch_to_space.infer
def _infer_batch_to_space(node):
    x = node.inputs[0].desc
    block, crops = _block_and_pairs(node, "crops")
    if x.shape is None:
        return [TensorDesc(x.dtype, None)]
    m, total = len(block), int(np.prod(block))
    if x.shape[0] is not None and x.shape[0] % total:
        raise ConversionError(f"batch {x.shape[0]} is not a multiple of the block size {total}")
    batch = None if x.shape[0] is None else x.shape[0] // total
    spatial = [None if d is None else d * b - c[0] - c[1]
               for d, b, c in zip(x.shape[1:1 + m], block, crops)]
    return [TensorDesc(x.dtype, (batch,) + tuple(spatial) + x.shape[1 + m:])]


@batch_to_space.lower
def _lower_batch_to_space(ctx, node):
    block, crops = _block_and_pairs(node, "crops")
    rank, m = node.inputs[0].desc.rank, len(block)
    if rank is None:
        raise ConversionError("the input rank must be known")
    x, total = ctx.input(0), int(np.prod(block))
    # [b1..bM, B, s1..sM, rest] → [B, s1, b1, ..., sM, bM, rest] → [B, s1*b1, ..., rest]
    split = ctx.emit("Reshape", [x, _shape_pieces(ctx, x, list(block) + [(0, 1, "Div", [total]),
                                                                         (1, INT64_MAX, None, None)])])[0]
    perm = [m]
    for i in range(m):
        perm += [m + 1 + i, i]
    perm += list(range(2 * m + 1, rank + m))
    moved = ctx.emit("Transpose", [split], perm=perm)[0]
    target = _shape_pieces(ctx, x, [(0, 1, "Div", [total]), (1, 1 + m, "Mul", block),
                                    (1 + m, INT64_MAX, None, None)])
    cropped = any(c for pair in crops for c in pair)
    joined = ctx.emit("Reshape", [moved, target], 1 if cropped else [ctx.output(0)])[0]
    if cropped:
        ctx.emit("Slice", [joined, _i64(ctx, [c[0] for c in crops]),
                           _i64(ctx, [-c[1] if c[1] else INT64_MAX for c in crops]),
                           _i64(ctx, range(1, 1 + m))], [ctx.output(0)])


def _depth_op(op_type, doc):
    return OPS.declare(op_type, doc).input("x").output("y").attr("block_size", "int") \
        .attr("data_format", "str", "NHWC")


def _check_depth_attrs(node):
    if node.attrs["data_format"] != "NHWC":
        raise ConversionError(f"data_format {node.attrs['data_format']} is not supported (NHWC only)")
    if node.attrs["block_size"] < 2:
        raise ConversionError(f"block_size {node.attrs['block_size']} must be at least 2")
    if node.inputs[0].desc.rank not in (None, 4):
        raise ConversionError(f"{node.op_type} takes a rank-4 input")
    return node.attrs["block_size"]


depth_to_space = _depth_op("DepthToSpace", "NHWC: moves channel blocks into b x b spatial blocks "
                                           "(DCR order: the block position is the outer channel index).")


@depth_to_space.infer
def _infer_depth_to_space(node):
    b, x = _check_depth_attrs(node), node.inputs[0].desc
    if x.shape is None:
        return [TensorDesc(x.dtype, (None,) * 4)]
    n, h, w, c = x.shape
    if c is not None and c % (b * b):
        raise ConversionError(f"channels {c} are not a multiple of block_size^2 = {b * b}")
    return [TensorDesc(x.dtype, (n, None if h is None else h * b, None if w is None else w * b,
                                 None if c is None else c // (b * b)))]


@depth_to_space.lower
def _lower_depth_to_space(ctx, node):
    b, x = _check_depth_attrs(node), ctx.input(0)
    # [N, H, W, b, b, C'] → [N, H, b, W, b, C'] → [N, H*b, W*b, C']
    split = ctx.emit("Reshape", [x, _i64(ctx, [0, 0, 0, b, b, -1])])[0]
    moved = ctx.emit("Transpose", [split], perm=[0, 1, 3, 2, 4, 5])[0]
    target = _shape_pieces(ctx, x, [(0, 1, None, None), (1, 3, "Mul", [b, b]), (3, 4, "Div", [b * b])])
    ctx.emit("Reshape", [moved, target], [ctx.output(0)])


space_to_depth = _depth_op("SpaceToDepth", "NHWC: moves b x b spatial blocks into the channels "
                                           "(the block position is the outer channel index).")


@space_to_depth.infer
def _infer_space_to_depth(node):
    b, x = _check_depth_attrs(node), node.inputs[0].desc
    if x.shape is None:
        return [TensorDesc(x.dtype, (None,) * 4)]
    n, h, w, c = x.shape
    for name, d in (("height", h), ("width", w)):
        if d is not None and d % b:
            raise ConversionError(f"{name} {d} is not a multiple of block_size {b}")
    return [TensorDesc(x.dtype, (n, None if h is None else h // b, None if w is None else w // b,
                                 None if c is None else c * b * b))]


@space_to_depth.lower
def _lower_space_to_depth(ctx, node):
    b, x = _check_depth_attrs(node), ctx.input(0)
    # [N, H/b, b, W/b, b, C] → [N, H/b, W/b, b, b, C] → [N, H/b, W/b, b*b*C]
    split = ctx.emit("Reshape", [x, _shape_pieces(ctx, x, [(0, 1, None, None), (1, 2, "Div", [b]), b,
                                                           (2, 3, "Div", [b]), b, (3, 4, None, None)])])[0]
    moved = ctx.emit("Transpose", [split], perm=[0, 1, 3, 2, 4, 5])[0]
    ctx.emit("Reshape", [moved, _i64(ctx, [0, 0, 0, -1])], [ctx.output(0)])
