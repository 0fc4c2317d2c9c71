"""Sets and small tensor utilities: unique values with counts and along an axis (UniqueWithCounts,
UniqueV2), the set difference of two vectors (ListDiff), bucketing by boundaries (Bucketize),
rolling along axes (Roll), the cross product (Cross) and the softmax cross entropies with their
gradients (SoftmaxCrossEntropyWithLogits, SparseSoftmaxCrossEntropyWithLogits).

Unique values come from ONNX Unique with sorted=0, which gives TF's order of first occurrence.
onnxruntime's Unique merges everything once a NaN is among its values, while TF keeps every NaN
apart: float values are keyed as float64 rows (the values with NaN made 0, and a tag column that
is the row's position + 1 where the row holds a NaN, 0 elsewhere), so NaN rows are unique and the
rest compare by value: -0 is +0, except in float16 and bfloat16, whose bits TF hashes. Other
dtypes without an onnxruntime Unique kernel are keyed in one that holds them (bool in int8, the
other integers in int64). Slices along an axis are keyed as rows with one column more, since
onnxruntime's Unique aborts on empty slices, and gathered with GatherND, since its Gather copies
only the first string of each string slice.
"""

from __future__ import annotations

from typing import List, Optional, Tuple

import numpy as np

from tf2ir.ir import ConversionError, OpSet, TensorDesc
from tf2ir.ir.onnx.kernels import kernel_types, via
from tf2ir.ir.onnx.writer import ONNX_DTYPES, tensor_proto
from tf2ir.ir.tensor import FLOAT_TYPES, INDEX_TYPES, NUMBER_TYPES, numpy_dtype
from tf2ir.opp.emitting import Emitter, emit_cast, int64_constant, int64_input, lowering
from tf2ir.opp.shapes import (
    INT64_MAX, broadcast_shapes, const_ints, normalize_axis, onnx_axis, same_as_input,
)
from tf2ir.opp.ragged import emit_coordinates, emit_strides

OPS = OpSet("tf2ir.opp.setops")

UNIQUE_KERNELS = kernel_types("Unique", NUMBER_TYPES + ("bool", "string"))
UNIQUE_VIA = via("Unique", {"bool": "int8", "int16": "int64", "int32": "int64", "uint8": "int64",
                            "uint16": "int64", "uint32": "int64", "uint64": "int64"})   # bijective casts


def float_rows(ctx, rows: str, dtype: str) -> str:
    """float64 key rows [n, k + 1] for float rows [n, k]: NaN made 0, -0 made +0 (for float16
    and bfloat16, whose bits TF hashes, -0 is kept apart), and a last column that is the row's
    position + 1 where it holds a NaN (0 elsewhere)."""
    o = Emitter(ctx, "float64")
    if dtype == "bfloat16":
        rows = emit_cast(ctx, rows, "float32")
    if dtype != "float64":
        rows = emit_cast(ctx, rows, "float64")
    nan = o.IsNaN(rows)
    clean = o.Where(nan, o.c(0.0), rows)
    if dtype in ("float16", "bfloat16"):    # TF hashes their bits: -0 is not +0
        negative_zero = o.And(o.Equal(rows, o.c(0.0)), o.Less(o.Reciprocal(rows), o.c(0.0)))
        clean = o.Where(negative_zero, o.c(1e-300), clean)     # no half value is 1e-300
    else:
        clean = o.Add(clean, o.c(0.0))      # -0 + 0 is +0
    has_nan = o.ReduceMax(o.Cast(nan, to=ONNX_DTYPES["float64"]), int64_constant(ctx, [1]),
                          keepdims=1)
    count = o.Gather(o.Shape(rows), o.c(0, "int64"), axis=0)
    positions = o.Range(o.c(1.0), o.Add(o.Cast(count, to=ONNX_DTYPES["float64"]), o.c(1.0)),
                        o.c(1.0))
    tag = o.Mul(has_nan, o.Unsqueeze(positions, int64_constant(ctx, [1])))
    return o.Concat(clean, tag, axis=1)


def unique_key(ctx, x: str, dtype: str) -> Tuple[str, Optional[int]]:
    """What ONNX Unique runs on for the 1-D `x` → (key, Unique's axis): float64 rows for floats
    (see float_rows), else `x` in a dtype with a Unique kernel."""
    if dtype in FLOAT_TYPES:
        return float_rows(ctx, ctx.op.Unsqueeze(x, int64_constant(ctx, [1])), dtype), 0
    if dtype in UNIQUE_KERNELS:
        return x, None
    if dtype not in UNIQUE_VIA:
        raise ConversionError(f"unique values of {dtype} are not supported")
    return emit_cast(ctx, x, UNIQUE_VIA[dtype]), None


# -- unique values with counts, along an axis ------------------------------------------------------
def _unique_op(op_type: str, doc: str, counts: bool):
    proto = OPS.declare(op_type, doc).input("x")
    if counts:
        proto.optional_input("axis", INDEX_TYPES)
    else:
        proto.input("axis", INDEX_TYPES)
    proto.output("y").output("idx", INDEX_TYPES)
    if counts:
        proto.output("count", INDEX_TYPES)
    proto.attr("out_idx", "dtype", "int32")
    proto.infer(_infer_unique)
    proto.lower(_lower_unique)
    return proto


def _unique_axis(node) -> Optional[int]:
    """The axis of a unique op: None for a 1-D x (no axis, or an empty one)."""
    if len(node.inputs) < 2 or node.inputs[1] is None:
        return None
    axis = const_ints(node, 1)
    if axis is None:
        raise ConversionError("the unique axis must be constant")
    if len(axis) > 1:
        raise ConversionError(f"the unique axis has {len(axis)} values; TF takes one")
    rank = node.inputs[0].desc.rank
    if not axis:
        return None
    return onnx_axis(axis[0], rank)


def _infer_unique(node):
    x, out_idx = node.inputs[0].desc, node.attrs["out_idx"]
    if x.rank is None:         # a vector unless an axis is given
        given = len(node.inputs) > 1 and node.inputs[1] is not None and const_ints(node, 1) != []
        y, length = TensorDesc(x.dtype, None if given else (None,)), None
    else:
        axis = _unique_axis(node)
        if axis is None and x.rank != 1:
            raise ConversionError(f"unique values without an axis need 1-D x, not rank {x.rank}")
        axis = axis or 0
        y = TensorDesc(x.dtype, x.shape[:axis] + (None,) + x.shape[axis + 1:])
        length = x.shape[axis]
    descs = [y, TensorDesc(out_idx, (length,))]
    return descs + [TensorDesc(out_idx, (None,))] if len(node.outputs) == 3 else descs


def _unique_rows(ctx, x: str, dtype: str, axis: int, rank: Optional[int]):
    """The slices of x along `axis` as rows [n, k] (x's dtype), their key rows for Unique
    (a last column added: the float tag, or zeros, so that no row is empty: onnxruntime's Unique
    aborts on empty slices), and a function writing the output from the chosen rows and their
    count. With the rank unknown, x is seen as [before, n, after] (the products of the dims
    around axis, at run time; a negative axis counts from the end)."""
    o = Emitter(ctx, "int64")
    start, end = int64_constant(ctx, [0]), int64_constant(ctx, [INT64_MAX])
    if rank is None:
        shape, at = o.Shape(x), int64_constant(ctx, [axis])
        after = int64_constant(ctx, [axis + 1]) if axis != -1 else end
        cube = [o.ReduceProd(o.Slice(shape, start, at), keepdims=1), o.Gather(shape, at, axis=0),
                o.ReduceProd(o.Slice(shape, after, end), keepdims=1)]
        moved = o.Transpose(o.Reshape(x, o.Concat(*cube, axis=0), allowzero=1), perm=[1, 0, 2])
        rows = o.Reshape(moved, o.Concat(cube[1], o.Mul(cube[0], cube[2]), axis=0), allowzero=1)

        def restore(picked, count, out):
            back = o.Transpose(o.Reshape(picked, o.Concat(count, cube[0], cube[2], axis=0),
                                         allowzero=1), perm=[1, 0, 2])
            o.Reshape(back, o.Concat(o.Slice(shape, start, at), count, o.Slice(shape, after, end),
                                     axis=0), allowzero=1, out=out)
    else:
        perm = [axis] + [d for d in range(rank) if d != axis]
        moved = x if axis == 0 else ctx.op.Transpose(x, perm=perm)
        shape = o.Shape(moved)
        rows = o.Flatten(moved, axis=1)

        def restore(picked, count, out):
            dims = o.Concat(count, o.Slice(shape, int64_constant(ctx, [1]), end), axis=0)
            if axis == 0:
                o.Reshape(picked, dims, allowzero=1, out=out)
            else:
                o.Transpose(o.Reshape(picked, dims, allowzero=1),
                            perm=[perm.index(d) for d in range(rank)], out=out)
    if dtype in FLOAT_TYPES:
        return rows, float_rows(ctx, rows, dtype), restore
    key = rows if dtype in UNIQUE_KERNELS else emit_cast(ctx, rows, UNIQUE_VIA[dtype])
    key_dtype = dtype if dtype in UNIQUE_KERNELS else UNIQUE_VIA[dtype]
    pad_shape = o.Concat(o.Slice(o.Shape(rows), start, int64_constant(ctx, [1])),
                         int64_constant(ctx, [1]), axis=0)
    pad = np.array([[""]], object) if dtype == "string" else np.zeros((1, 1), numpy_dtype(key_dtype))
    return rows, o.Concat(key, o.Expand(ctx.constant(pad), pad_shape), axis=1), restore


def _lower_unique(ctx, node):
    x, dtype = ctx.input(0), node.inputs[0].desc.dtype
    axis = _unique_axis(node)
    rank = node.inputs[0].desc.rank
    if dtype not in UNIQUE_KERNELS and dtype not in UNIQUE_VIA and dtype not in FLOAT_TYPES:
        raise ConversionError(f"unique values of {dtype} are not supported")
    names = [ctx.fresh("unique_y"), ctx.fresh("first"), ctx.fresh("inverse"), ctx.fresh("counts")]
    if axis is None or rank == 1:
        key, key_axis = unique_key(ctx, x, dtype)
        ctx.op.Unique(key, outputs=names, sorted=0, axis=key_axis)
        if key_axis is not None:        # float rows: the values are x's at the first rows
            ctx.op.Gather(x, names[1], out=ctx.output(0), axis=0)
        elif key != x:
            emit_cast(ctx, names[0], dtype, ctx.output(0))
        else:
            ctx.op.Identity(names[0], out=ctx.output(0))
    else:
        rows, key, restore = _unique_rows(ctx, x, dtype, axis, rank)
        ctx.op.Unique(key, outputs=names, sorted=0, axis=0)
        o = Emitter(ctx, "int64")
        # GatherND: onnxruntime's Gather copies only the first string of each string slice
        picked = o.GatherND(rows, o.Unsqueeze(names[1], int64_constant(ctx, [1])))
        restore(picked, o.Shape(names[1]), ctx.output(0))
    for port, name in ((1, names[2]), (2, names[3]))[:len(node.outputs) - 1]:
        emit_cast(ctx, name, node.attrs["out_idx"], ctx.output(port))


_unique_op("UniqueWithCounts", "The distinct values of x (1-D, or its slices along `axis`) in "
                               "order of first occurrence, each entry's position among them, "
                               "and how often each occurs.", counts=True)
_unique_op("UniqueV2", "The distinct slices of x along `axis` in order of first occurrence, "
                       "and each slice's position among them.", counts=False)


# -- set difference ----------------------------------------------------------------------------
list_diff = OPS.declare("ListDiff", "The entries of 1-D x not in 1-D y, in x's order with "
                                    "repeats (out), and their positions in x (idx).") \
    .input("x").input("y").output("out").output("idx", INDEX_TYPES).attr("out_idx", "dtype", "int32")


@list_diff.infer
def _infer_list_diff(node):
    x, y = node.inputs[0].desc, node.inputs[1].desc
    if x.dtype != y.dtype:
        raise ConversionError(f"x is {x.dtype}, y {y.dtype}")
    for desc, name in ((x, "x"), (y, "y")):
        if desc.rank not in (None, 1):
            raise ConversionError(f"{name} must be 1-D, not rank {desc.rank}")
    return [TensorDesc(x.dtype, (None,)), TensorDesc(node.attrs["out_idx"], (None,))]


@list_diff.lower
def _lower_list_diff(ctx, node):
    """x's entries whose value first occurs, in y then x, at a position past y's end."""
    dtype = node.inputs[0].desc.dtype
    o = Emitter(ctx, "int64")
    x = ctx.input(0)
    key, axis = unique_key(ctx, o.Concat(ctx.input(1), x, axis=0), dtype)
    first, inverse = ctx.op.Unique(key, outputs=4, sorted=0, axis=axis)[1:3]
    known = o.Size(ctx.input(1))
    mine = o.Slice(inverse, o.Reshape(known, int64_constant(ctx, [1])),
                   int64_constant(ctx, [INT64_MAX]))
    keep = o.GreaterOrEqual(o.Gather(first, mine, axis=0), known)
    positions = o.Squeeze(o.NonZero(keep), int64_constant(ctx, [0]))
    ctx.op.Gather(x, positions, out=ctx.output(0), axis=0)
    emit_cast(ctx, positions, node.attrs["out_idx"], ctx.output(1))


# -- bucketize -----------------------------------------------------------------------------------
BUCKETIZE_TYPES = ("int32", "int64", "float32", "float64")
bucketize = OPS.declare("Bucketize", "The number of `boundaries` (sorted floats) not above each "
                                     "x (NaN: all of them), int32.") \
    .input("x", BUCKETIZE_TYPES).output("y", ("int32",)).attr("boundaries", "floats")


@bucketize.infer
def _infer_bucketize(node):
    bounds = node.attrs["boundaries"]
    if any(b > a for a, b in zip(bounds[1:], bounds)):
        raise ConversionError("boundaries must be sorted")
    return [TensorDesc("int32", node.inputs[0].desc.shape)]


@bucketize.lower
def _lower_bucketize(ctx, node):
    """count(not x < b): TF's upper_bound, comparing as C++ does with float boundaries (x in
    float32, float64 x against the float32 boundaries widened)."""
    dtype = node.inputs[0].desc.dtype
    bounds = np.asarray(node.attrs["boundaries"], np.float32)
    o = Emitter(ctx, "int32")
    if bounds.size == 0:
        zeros = tensor_proto("value", np.zeros(1, np.int32))
        ctx.op.ConstantOfShape(o.Shape(ctx.input(0)), out=ctx.output(0), value=zeros)
        return
    work = "float64" if dtype == "float64" else "float32"
    x = ctx.input(0) if dtype == work else emit_cast(ctx, ctx.input(0), work)
    below = o.Less(o.Unsqueeze(x, int64_constant(ctx, [-1])), ctx.constant(bounds.astype(work)))
    o.ReduceSum(o.Cast(o.Not(below), to=ONNX_DTYPES["int32"]), int64_constant(ctx, [-1]),
                keepdims=0, out=ctx.output(0))


# -- roll ------------------------------------------------------------------------------------------
roll = OPS.declare("Roll", "x with its elements shifted by `shift` along each `axis` (shifts of "
                           "a repeated axis add up), wrapping around.") \
    .input("x").input("shift", INDEX_TYPES).input("axis", INDEX_TYPES).output("y")
roll.infer(same_as_input)


def _roll_one(ctx, x: str, axis: int, shift, size: Optional[int]) -> str:
    """x rolled by `shift` (an int, or an int64 scalar tensor) along `axis`: x[n - s:] then
    x[:n - s] with s = shift mod n."""
    if isinstance(shift, int) and size is not None:
        split = size - shift % size if size else 0
        if split in (0, size):
            return x
        split_name = int64_constant(ctx, [split])
    else:
        o = Emitter(ctx, "int64")
        length = o.Gather(o.Shape(x), o.c(axis), axis=0)
        shift = o.c(shift) if isinstance(shift, int) else shift
        split = o.Sub(length, o.Mod(shift, o.Max(length, o.c(1))))
        split_name = o.Reshape(split, int64_constant(ctx, [1]))
    axes = int64_constant(ctx, [axis])
    tail = ctx.op.Slice(x, split_name, int64_constant(ctx, [INT64_MAX]), axes)
    head = ctx.op.Slice(x, int64_constant(ctx, [0]), split_name, axes)
    return ctx.op.Concat(tail, head, axis=axis)


def _roll_pairs(ctx, node) -> List[Tuple[int, object]]:
    """(axis, shift) pairs: shift an int or an int64 scalar tensor; with the rank known and a
    run-time axis, one pair per dim, its shift the sum of those given for it."""
    rank = node.inputs[0].desc.rank
    shifts, axes = const_ints(node, 1), const_ints(node, 2)
    o = Emitter(ctx, "int64")
    if axes is not None:
        if shifts is not None and len(shifts) != len(axes):
            raise ConversionError(f"{len(shifts)} shifts for {len(axes)} axes")
        if shifts is None:
            flat = o.Reshape(int64_input(ctx, 1), int64_constant(ctx, [-1]))
            shifts = [o.Gather(flat, o.c(i), axis=0) for i in range(len(axes))]
        if rank is None:
            return list(zip(axes, shifts))
        summed = {}
        for axis, shift in zip(axes, shifts):
            a = normalize_axis(axis, rank)
            summed[a] = shift if a not in summed else (
                summed[a] + shift if isinstance(shift, int) and isinstance(summed[a], int)
                else o.Add(o.c(summed[a]) if isinstance(summed[a], int) else summed[a],
                           o.c(shift) if isinstance(shift, int) else shift))
        return sorted(summed.items(), key=lambda pair: pair[0])
    if rank is None:
        return None
    axis = o.Reshape(int64_input(ctx, 2), int64_constant(ctx, [-1]))
    axis = o.Where(o.Less(axis, o.c(0)), o.Add(axis, o.c(rank)), axis)
    shift = o.Reshape(int64_input(ctx, 1), int64_constant(ctx, [-1]))
    return [(d, o.ReduceSum(o.Where(o.Equal(axis, o.c(d)), shift, o.c(0)), keepdims=0))
            for d in range(rank)]


@roll.lower
def _lower_roll(ctx, node):
    shape = node.inputs[0].desc.shape
    x, pairs = ctx.input(0), _roll_pairs(ctx, node)
    if pairs is None:
        _roll_any_rank(ctx)
        return
    for axis, shift in pairs:
        size = shape[axis] if shape is not None and axis >= 0 else None
        x = _roll_one(ctx, x, axis, shift, size)
    ctx.op.Identity(x, out=ctx.output(0))


def _roll_any_rank(ctx) -> None:
    """Roll of x of unknown rank along run-time axes: each output element's source is its
    coordinates minus the dim's summed shift (mod the dim), gathered from the flat x."""
    o = Emitter(ctx, "int64")
    x, column = ctx.input(0), int64_constant(ctx, [1])
    dims, flat = o.Shape(ctx.input(0)), int64_constant(ctx, [-1])
    axis = o.Reshape(int64_input(ctx, 2), flat)
    axis = o.Where(o.Less(axis, o.c(0)), o.Add(axis, o.Shape(dims)), axis)       # [k]
    steps = o.Range(o.c(0), o.Size(dims), o.c(1))
    hit = o.Equal(o.Unsqueeze(axis, int64_constant(ctx, [0])), o.Unsqueeze(steps, column))
    shift = o.ReduceSum(o.Where(hit, o.Unsqueeze(o.Reshape(int64_input(ctx, 1), flat),
                                                 int64_constant(ctx, [0])), o.c(0)),
                        column, keepdims=0)                                           # [rank]
    strides = emit_strides(ctx, dims)
    source = o.Mod(o.Sub(emit_coordinates(ctx, dims, strides), shift), o.Max(dims, o.c(1)))
    index = o.ReduceSum(o.Mul(source, strides), column, keepdims=0)
    o.Reshape(o.Gather(o.Reshape(x, flat), index, axis=0), dims, allowzero=1, out=ctx.output(0))


# -- cross product -------------------------------------------------------------------------------
cross = OPS.declare("Cross", "The cross product of the 3-vectors in the last dim of a and b.") \
    .input("a", NUMBER_TYPES).input("b", NUMBER_TYPES).output("product")


@cross.infer
def _infer_cross(node):
    a, b = node.inputs[0].desc, node.inputs[1].desc
    if a.dtype != b.dtype:
        raise ConversionError(f"a is {a.dtype}, b {b.dtype}")
    for desc in (a, b):
        if desc.shape is not None and desc.shape and desc.shape[-1] not in (None, 3):
            raise ConversionError(f"the last dim must be 3, not {desc.shape[-1]}")
    return [TensorDesc(a.dtype, broadcast_shapes(a.shape, b.shape))]


def _cross(o, names, dtype):
    a, b = names
    yzx, zxy = (o.ctx.constant(np.array(p, np.int64)) for p in ([1, 2, 0], [2, 0, 1]))
    turn = [(o.Gather(v, yzx, axis=-1), o.Gather(v, zxy, axis=-1)) for v in (a, b)]
    return o.Sub(o.Mul(turn[0][0], turn[1][1]), o.Mul(turn[0][1], turn[1][0]), out=o.out)


cross.lower(lowering(_cross, ("float16", "float32", "float64", "int32", "int64")))


# -- softmax cross entropy -------------------------------------------------------------------------
def _xent_op(op_type: str, doc: str, labels):
    proto = OPS.declare(op_type, doc).input("features", FLOAT_TYPES).input("labels", labels) \
        .output("loss").output("backprop")
    proto.infer(_infer_xent)
    proto.lower(_lower_xent)
    return proto


def _infer_xent(node):
    features, labels = node.inputs[0].desc, node.inputs[1].desc
    sparse = node.op_type.startswith("Sparse")
    if sparse:
        if labels.rank not in (None, 1) or features.rank not in (None, 2):
            raise ConversionError("features must be [batch, classes] and labels [batch]")
        shape = features.shape
    else:
        if labels.dtype != features.dtype:
            raise ConversionError(f"features are {features.dtype}, labels {labels.dtype}")
        shape = broadcast_shapes(features.shape, labels.shape)
        if shape is not None and len(shape) != 2:
            raise ConversionError(f"features and labels must be 2-D, not rank {len(shape)}")
    dtype = features.dtype
    return [TensorDesc(dtype, None if shape is None else shape[:1]), TensorDesc(dtype, shape)]


def _lower_xent(ctx, node):
    """loss = log(sum(exp(f - max))) - (f - max) weighted by the labels, backprop =
    softmax(f) - labels, as TF computes them (float16/bfloat16 in float32)."""
    dtype = node.inputs[0].desc.dtype
    work = "float64" if dtype == "float64" else "float32"
    o = Emitter(ctx, work)
    last = int64_constant(ctx, [-1])
    features = ctx.input(0) if dtype == work else emit_cast(ctx, ctx.input(0), work)
    shifted = o.Sub(features, o.ReduceMax(features, last, keepdims=1))
    exp = o.Exp(shifted)
    total = o.ReduceSum(exp, last, keepdims=1)
    loss_terms = o.Sub(o.Log(total), shifted)
    if node.op_type.startswith("Sparse"):
        labels = o.Unsqueeze(int64_input(ctx, 1), last)
        loss = o.Squeeze(o.GatherElements(loss_terms, labels, axis=1), last)
        classes = o.Range(o.c(0, "int64"), o.Gather(o.Shape(features), o.c(1, "int64"), axis=0),
                          o.c(1, "int64"))
        targets = o.Cast(o.Equal(labels, classes), to=ONNX_DTYPES[work])
    else:
        targets = ctx.input(1) if dtype == work else emit_cast(ctx, ctx.input(1), work)
        loss = o.ReduceSum(o.Mul(targets, loss_terms), last, keepdims=0)
    backprop = o.Sub(o.Div(exp, total), targets)
    for port, value in enumerate((loss, backprop)):
        if dtype == work:
            ctx.op.Identity(value, out=ctx.output(port))
        else:
            emit_cast(ctx, value, dtype, ctx.output(port))


_xent_op("SoftmaxCrossEntropyWithLogits", "Per row, the cross entropy of softmax(features) "
                                          "against the label distribution, and its gradient.",
         FLOAT_TYPES)
_xent_op("SparseSoftmaxCrossEntropyWithLogits", "Per row, the cross entropy of "
                                                "softmax(features) against a class index, and "
                                                "its gradient.", INDEX_TYPES)
