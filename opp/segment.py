"""Segment reductions and their relatives, all one ScatterND with a reduction onto a tensor of
[segments + 1, ...] filled with the reduction's identity; the extra row takes the ids TF drops
(negative, or past the segment count) and is sliced off.

- SegmentReduce (SegmentSum/Mean/Max/Min/Prod): rows of data by sorted segment_ids, as many
  segments as the largest id + 1; an empty segment is 0 for every reduction, as TF's sorted
  kernels make it (1 for Prod).
- UnsortedSegmentReduce (UnsortedSegmentSum/Max/Min/Prod): segment_ids of any rank k, the first
  k dims of data, and num_segments given; negative ids are dropped; an empty segment is 0 (Sum),
  1 (Prod), the dtype's lowest (Max) or highest (Min) value, as TF's.
- SparseSegmentReduce (SparseSegmentSum/Mean/SqrtN and the WithNumSegments forms): the rows
  data[indices] by segment_ids; Mean divides by the row count, SqrtN by its square root, and
  an empty segment is 0.
- Bincount (Bincount, DenseBincount): per value in [0, size) its count, its summed weights, or
  with binary_output 1 where it occurs; other values are dropped. DenseBincount takes 2-D input
  row by row.
- TensorScatterMax/Min (ScatterND max/min) and TensorScatterSub (the updates summed by a
  ScatterND add onto zeros, then subtracted).

onnxruntime has no float16 ScatterND reductions: float16 and bfloat16 reduce in float32 (exact
for Max and Min, one rounding for sums), uint16 in int32; integer sums are cast back before a Mean
divides them, so they wrap as TF's do, and integer means and TensorScatterSub compute where
onnxruntime has Div and Sub kernels (int32, int64).
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from tf2ir.ir import ConversionError, OpSet, TensorDesc
from tf2ir.ir.onnx.writer import ONNX_DTYPES, tensor_proto
from tf2ir.ir.tensor import FLOAT_TYPES, INDEX_TYPES, NUMBER_TYPES, numpy_dtype
from tf2ir.opp.carriers import ARITHMETIC_VIA
from tf2ir.opp.emitting import (
    Emitter, emit_cast, emit_where, int64_constant, int64_input, scalar_int64_input,
)
from tf2ir.opp.shapes import INT64_MAX, const_ints, same_as_input

OPS = OpSet("tf2ir.opp.segment")

REDUCE_VIA = {"float16": "float32", "bfloat16": "float32", "uint16": "int32"}
# reduction → (ONNX ScatterND reduction, what an empty segment starts from)
SCATTER = {"sum": "add", "mean": "add", "sqrtn": "add", "prod": "mul", "max": "max", "min": "min"}


def _limits(dtype: str):
    """The dtype's (lowest, highest) values: TF's empty unsorted Max and Min."""
    if dtype == "bfloat16":
        import ml_dtypes   # numpy's finfo does not know bfloat16
        info = ml_dtypes.finfo(numpy_dtype(dtype))
    elif dtype in FLOAT_TYPES:
        info = np.finfo(numpy_dtype(dtype))
    else:
        info = np.iinfo(numpy_dtype(dtype))
    return info.min, info.max


def _start_value(reduction: str, dtype: str):
    if reduction == "prod":
        return 1
    if reduction in ("max", "min"):
        return _limits(dtype)[0 if reduction == "max" else 1]
    return 0


def fill(ctx, shape: str, value, dtype: str) -> str:
    """A tensor of run-time `shape` filled with `value`."""
    array = np.array([value]).astype(numpy_dtype(dtype))
    return ctx.op.ConstantOfShape(shape, value=tensor_proto("value", array))


def segment_scatter(ctx, data: str, ids: str, count: str, rest: str, work: str,
                    reduction: str, start) -> str:
    """`data` (dims ids.shape + rest, dtype `work`) reduced into rows 0..count-1 by the int64
    `ids` (ids outside [0, count) dropped into an extra row): ScatterND with the ONNX
    `reduction` onto a tensor filled with `start`. Returns [count] + rest."""
    o = Emitter(ctx, "int64")
    outside = o.Or(o.Less(ids, o.c(0)), o.GreaterOrEqual(ids, count))
    rows = o.Unsqueeze(o.Where(outside, count, ids), int64_constant(ctx, [-1]))
    count_1d = o.Reshape(count, int64_constant(ctx, [1]))
    shape = o.Concat(o.Add(count_1d, o.c(1)), rest, axis=0)
    scattered = o.ScatterND(fill(ctx, shape, start, work), rows, data, reduction=reduction)
    return o.Slice(scattered, int64_constant(ctx, [0]), count_1d, int64_constant(ctx, [0]))


def segment_counts(ctx, ids: str, count: str) -> str:
    """The int64 number of ids equal to each of 0..count-1."""
    ones = fill(ctx, ctx.op.Shape(ids), 1, "int64")
    return segment_scatter(ctx, ones, ids, count, int64_constant(ctx, []), "int64", "add", 0)


def _per_row(ctx, counts: str, rest: str) -> str:
    """counts [segments] reshaped to broadcast over [segments] + rest."""
    trailing = fill(ctx, ctx.op.Shape(rest), 1, "int64")
    return ctx.op.Reshape(counts, ctx.op.Concat(int64_constant(ctx, [-1]), trailing,
                                                axis=0))


def _finish(ctx, value: str, work: str, dtype: str) -> None:
    if work == dtype:
        ctx.op.Identity(value, out=ctx.output(0))
    else:
        emit_cast(ctx, value, dtype, ctx.output(0))


def lower_segments(ctx, node, data: str, ids: str, count: str, rest: str, empty_zero: bool):
    """Reduce `data` by `ids` into `count` rows as node.attrs["reduction"] says; with
    `empty_zero` an empty segment is 0 (1 for prod) whatever the reduction."""
    dtype = node.output_desc(0).dtype
    work = REDUCE_VIA.get(dtype, dtype)
    reduction = node.attrs["reduction"]
    if work != dtype:
        data = emit_cast(ctx, data, work)
    start = _start_value(reduction, dtype)
    result = segment_scatter(ctx, data, ids, count, rest, work, SCATTER[reduction], start)
    if work != dtype and dtype not in FLOAT_TYPES:     # integer sums wrap as TF's do
        result, work = emit_cast(ctx, result, dtype), dtype
    if reduction in ("mean", "sqrtn"):      # integer means divide in a Div kernel's dtype
        divide = ARITHMETIC_VIA.get(work, work)
        o = Emitter(ctx, divide)
        rows = o.Cast(o.Max(segment_counts(ctx, ids, count), o.c(1, "int64")),
                      to=ONNX_DTYPES[divide])
        rows = o.Sqrt(rows) if reduction == "sqrtn" else rows
        result = o.Div(result if divide == work else emit_cast(ctx, result, divide),
                       _per_row(ctx, rows, rest))
        work = divide
    elif reduction in ("max", "min") and empty_zero:
        o = Emitter(ctx, work)
        empty = _per_row(ctx, o.Equal(segment_counts(ctx, ids, count), o.c(0, "int64")), rest)
        result = emit_where(ctx, empty, o.c(0), result, work)
    _finish(ctx, result, work, dtype)


def _rest(ctx, data: str, skip: int) -> str:
    """The dims of `data` after its first `skip`, int64 1-D."""
    return ctx.op.Slice(ctx.op.Shape(data), int64_constant(ctx, [skip]),
                        int64_constant(ctx, [INT64_MAX]))


def _largest_id_plus_one(ctx, ids: str) -> str:
    """The segment count of sorted ids: the largest id + 1 (0 for no ids)."""
    o = Emitter(ctx, "int64")
    largest = o.ReduceMax(o.Concat(ids, int64_constant(ctx, [-1]), axis=0), keepdims=0)
    return o.Add(largest, o.c(1))


def _check_reduction(node, allowed) -> str:
    reduction = node.attrs["reduction"]
    if reduction not in allowed:
        raise ConversionError(f"reduction {reduction!r} is not one of {', '.join(allowed)}")
    return reduction


def _segment_shape(node, data: TensorDesc, prefix: int, count: Optional[int]) -> TensorDesc:
    rest = None if data.shape is None else data.shape[prefix:]
    return TensorDesc(data.dtype, None if rest is None else (count,) + rest)


# -- sorted segments ---------------------------------------------------------------------------
segment = OPS.declare("SegmentReduce", "Rows of data reduced by sorted segment_ids (largest id + 1 "
                                       "segments; an empty one is 0).") \
    .input("data", NUMBER_TYPES).input("segment_ids", INDEX_TYPES).output("y") \
    .attr("reduction", "str", doc="sum, mean, max, min or prod")


@segment.infer
def _infer_segment(node):
    _check_reduction(node, ("sum", "mean", "max", "min", "prod"))
    ids, data = node.inputs[1].desc, node.inputs[0].desc
    if ids.rank not in (None, 1):
        raise ConversionError(f"segment_ids must be 1-D, not rank {ids.rank}")
    known = const_ints(node, 1)
    count = None if known is None else max(known, default=-1) + 1
    return [_segment_shape(node, data, 1, count)]


@segment.lower
def _lower_segment(ctx, node):
    ids = int64_input(ctx, 1)
    lower_segments(ctx, node, ctx.input(0), ids, _largest_id_plus_one(ctx, ids),
                   _rest(ctx, ctx.input(0), 1), empty_zero=True)


# -- unsorted segments -------------------------------------------------------------------------
unsorted = OPS.declare("UnsortedSegmentReduce", "Data reduced by segment_ids (the first dims of "
                                                "data) into num_segments rows; negative ids "
                                                "are dropped.") \
    .input("data", NUMBER_TYPES).input("segment_ids", INDEX_TYPES) \
    .input("num_segments", INDEX_TYPES).output("y") \
    .attr("reduction", "str", doc="sum, max, min or prod")


@unsorted.infer
def _infer_unsorted(node):
    _check_reduction(node, ("sum", "max", "min", "prod"))
    data, ids = node.inputs[0].desc, node.inputs[1].desc
    if ids.rank is None:
        return [TensorDesc(data.dtype, None)]
    if data.rank is not None and ids.rank > data.rank:
        raise ConversionError(f"segment_ids of rank {ids.rank} exceed data of rank {data.rank}")
    count = const_ints(node, 2)
    return [_segment_shape(node, data, ids.rank, None if count is None else count[0])]


@unsorted.lower
def _lower_unsorted(ctx, node):
    rank = node.inputs[1].desc.rank
    if rank is None:        # data's dims after the ids' rank, known at run time
        rest = ctx.op.Slice(ctx.op.Shape(ctx.input(0)),
                            ctx.op.Shape(ctx.op.Shape(ctx.input(1))),
                            int64_constant(ctx, [INT64_MAX]))
    else:
        rest = _rest(ctx, ctx.input(0), rank)
    lower_segments(ctx, node, ctx.input(0), int64_input(ctx, 1), scalar_int64_input(ctx, 2),
                   rest, empty_zero=False)


# -- sparse segments -----------------------------------------------------------------------------
sparse = OPS.declare("SparseSegmentReduce", "Rows data[indices] reduced by sorted segment_ids "
                                            "(num_segments, or the largest id + 1, rows; an "
                                            "empty one is 0).") \
    .input("data", NUMBER_TYPES).input("indices", INDEX_TYPES).input("segment_ids", INDEX_TYPES) \
    .optional_input("num_segments", INDEX_TYPES).output("y") \
    .attr("reduction", "str", doc="sum, mean or sqrtn")


@sparse.infer
def _infer_sparse(node):
    reduction = _check_reduction(node, ("sum", "mean", "sqrtn"))
    data = node.inputs[0].desc
    if reduction != "sum" and data.dtype not in FLOAT_TYPES:
        raise ConversionError(f"SparseSegment {reduction} takes floats, not {data.dtype}")
    for index, name in ((1, "indices"), (2, "segment_ids")):
        if node.inputs[index].desc.rank not in (None, 1):
            raise ConversionError(f"{name} must be 1-D, not rank {node.inputs[index].desc.rank}")
    if len(node.inputs) > 3 and node.inputs[3] is not None:
        known = const_ints(node, 3)
        count = None if known is None else known[0]
    else:
        ids = const_ints(node, 2)
        count = None if ids is None else max(ids, default=-1) + 1
    return [_segment_shape(node, data, 1, count)]


@sparse.lower
def _lower_sparse(ctx, node):
    rows = ctx.op.Gather(ctx.input(0), int64_input(ctx, 1), axis=0)
    ids = int64_input(ctx, 2)
    given = len(node.inputs) > 3 and node.inputs[3] is not None
    count = scalar_int64_input(ctx, 3) if given else _largest_id_plus_one(ctx, ids)
    lower_segments(ctx, node, rows, ids, count, _rest(ctx, ctx.input(0), 1), empty_zero=True)


# -- bincount ----------------------------------------------------------------------------------
BINCOUNT_TYPES = ("int32", "int64", "float32", "float64")
bincount = OPS.declare("Bincount", "Per value v in [0, size) of arr: its count, its summed "
                                   "weights, or with binary_output 1 where it occurs; 2-D arr "
                                   "row by row.") \
    .input("arr", INDEX_TYPES).input("size", INDEX_TYPES).input("weights", BINCOUNT_TYPES) \
    .output("y", BINCOUNT_TYPES).attr("binary_output", "bool", False) \
    .attr("flat", "bool", False)        # TF's Bincount: arr of any rank counted as one vector


@bincount.infer
def _infer_bincount(node):
    arr, size = node.inputs[0].desc, const_ints(node, 1)
    if node.attrs["flat"]:
        return [TensorDesc(node.inputs[2].desc.dtype, (None if size is None else size[0],))]
    if arr.rank not in (None, 1, 2):
        raise ConversionError(f"Bincount takes 1-D or 2-D input, not rank {arr.rank}")
    dtype = node.inputs[2].desc.dtype
    width = None if size is None else size[0]
    if arr.rank == 2:
        return [TensorDesc(dtype, (arr.shape[0], width))]
    return [TensorDesc(dtype, (width,) if arr.rank == 1 else None)]


def _bincount_updates(ctx, node, values: str, work: str) -> str:
    """What each value adds: 1 (counts, binary_output) or its weight; weights that are empty
    at run time count too (the weights followed by ones, cut to the values' size)."""
    ones = fill(ctx, ctx.op.Shape(values), 1, work)
    weights = node.inputs[2].desc
    if node.attrs["binary_output"] or (weights.shape is not None and 0 in weights.shape):
        return ones
    if weights.shape is not None and None not in weights.shape and not node.attrs["flat"]:
        return ctx.input(2)
    o = Emitter(ctx, "int64")
    flat = [o.Reshape(name, int64_constant(ctx, [-1])) for name in (ctx.input(2), ones)]
    size = o.Reshape(o.Size(values), int64_constant(ctx, [1]))
    head = o.Slice(o.Concat(*flat, axis=0), int64_constant(ctx, [0]), size)
    return o.Reshape(head, o.Shape(values))


@bincount.lower
def _lower_bincount(ctx, node):
    rank = 1 if node.attrs["flat"] else node.inputs[0].desc.rank
    if rank not in (None, 1, 2):
        raise ConversionError(f"Bincount takes 1-D or 2-D input, not rank {rank}")
    dtype = node.output_desc(0).dtype
    values, size = int64_input(ctx, 0), scalar_int64_input(ctx, 1)
    o = Emitter(ctx, "int64")
    if node.attrs["flat"]:
        values = o.Reshape(values, int64_constant(ctx, [-1]))
    updates = _bincount_updates(ctx, node, values, dtype)
    reduction = "max" if node.attrs["binary_output"] else "add"
    shape = None
    if rank is None:
        # 1-D or 2-D at run time: binned as rows ([1, n] or [rows, n]), the result reshaped
        # to the input's leading dims (none or [rows]) followed by size
        shape = o.Shape(values)
        lead = o.Slice(shape, int64_constant(ctx, [0]), int64_constant(ctx, [-1]))
        rows = o.ReduceProd(o.Concat(int64_constant(ctx, [1]), lead, axis=0), keepdims=1)
        last = o.Slice(shape, int64_constant(ctx, [-1]), int64_constant(ctx, [INT64_MAX]))
        values = o.Reshape(values, o.Concat(rows, last, axis=0))
        updates = ctx.op.Reshape(updates, o.Shape(values))
        shape = o.Concat(lead, o.Reshape(size, int64_constant(ctx, [1])), axis=0)
    if rank == 1:
        _finish(ctx, segment_scatter(ctx, updates, values, size, int64_constant(ctx, []), dtype,
                                     reduction, 0), dtype, dtype)
        return
    # 2-D: bin the rows' values side by side, value v of row r into bin r * (size + 1) + v
    outside = o.Or(o.Less(values, o.c(0)), o.GreaterOrEqual(values, size))
    width = o.Add(size, o.c(1))
    batch = o.Gather(o.Shape(values), o.c(0), axis=0)
    offsets = o.Mul(o.Unsqueeze(o.Range(o.c(0), batch, o.c(1)), int64_constant(ctx, [1])), width)
    bins = o.Add(o.Where(outside, size, values), offsets)
    total = o.Mul(batch, width)
    flat = segment_scatter(ctx, updates, bins, total, int64_constant(ctx, []), dtype, reduction, 0)
    table = o.Reshape(flat, o.Concat(o.Reshape(batch, int64_constant(ctx, [1])),
                                     o.Reshape(width, int64_constant(ctx, [1])), axis=0))
    table = o.Slice(table, int64_constant(ctx, [0]), o.Reshape(size, int64_constant(ctx, [1])),
                    int64_constant(ctx, [1]))
    o.Identity(table if shape is None else o.Reshape(table, shape), out=ctx.output(0))


# -- tensor scatter max, min, sub -------------------------------------------------------------------
def _tensor_scatter(op_type: str, doc: str):
    proto = OPS.declare(op_type, doc).input("tensor", NUMBER_TYPES).input("indices", INDEX_TYPES) \
        .input("updates", NUMBER_TYPES).output("y")
    proto.infer(same_as_input)
    proto.lower(_lower_tensor_scatter)
    return proto


def _lower_tensor_scatter(ctx, node):
    dtype = node.inputs[0].desc.dtype
    subtract = node.op_type == "TensorScatterSub"
    work = (ARITHMETIC_VIA if subtract else {}).get(dtype) or REDUCE_VIA.get(dtype, dtype)
    tensor, updates = ctx.input(0), ctx.input(2)
    if work != dtype:
        tensor, updates = emit_cast(ctx, tensor, work), emit_cast(ctx, updates, work)
    indices = int64_input(ctx, 1)
    if subtract:
        zeros = fill(ctx, ctx.op.Shape(tensor), 0, work)
        summed = ctx.op.ScatterND(zeros, indices, updates, reduction="add")
        result = ctx.op.Sub(tensor, summed)
    else:
        reduction = "max" if node.op_type == "TensorScatterMax" else "min"
        result = ctx.op.ScatterND(tensor, indices, updates, reduction=reduction)
    _finish(ctx, result, work, dtype)


_tensor_scatter("TensorScatterMax", "tensor with the slices at indices raised to the updates' "
                                    "maximum")
_tensor_scatter("TensorScatterMin", "tensor with the slices at indices lowered to the updates' "
                                    "minimum")
_tensor_scatter("TensorScatterSub", "tensor with the updates at indices subtracted")
