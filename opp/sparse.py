"""Sparse and partition ops: SparseToDense, SparseReshape, SparseFillEmptyRows,
DynamicPartition and DynamicStitch.

A TF SparseTensor reaches these ops as its parts: indices [N, R] (int64), values [N] and the
dense shape [R]. Every operand may be known only at run time; the ranks must be known.

* SparseToDense: the default value expanded to the output shape, the values scattered in
  (ScatterND). TF's validate_indices refuses repeated or unordered indices at run time; the
  converted model does not check them (repeated indices: the last value wins).
* SparseReshape: each index made linear by the input shape's strides, then split again by
  the new shape's (a -1 in the new shape is the input's size over the other dims); both
  ranks may be known only at run time.
* SparseFillEmptyRows: the output holds each row's entries in input order, rows in order,
  and one [r, 0, ...] entry of `default_value` for each row r that has none. An entry's
  place (reverse_index_map) is where its row starts plus its rank within the row: a stable
  sort by row (TopK over row * N + position) gives the rank without an N x N comparison.
* DynamicPartition: output i is `data` where `partitions == i` (Compress over the flattened
  partition dims), in order.
* DynamicStitch: every index with its data row scattered into a zero tensor of max index + 1
  rows; where indices repeat, the later input wins, as TF's kernel documents.
"""

from __future__ import annotations

import numpy as np

from tf2ir.ir import ConversionError, OpSet, TensorDesc
from tf2ir.ir.tensor import INDEX_TYPES
from tf2ir.opp.emitting import emit_cast, int64_constant, int64_input

OPS = OpSet("tf2ir.opp.sparse")


def _length_vector(ctx, index: int) -> str:
    """The length of vector input `index` (a dense shape: the rank) as a 1-element int64
    tensor: a constant where known, else read at run time."""
    shape = ctx.node.inputs[index].desc.shape
    if shape is not None and len(shape) != 1:
        raise ConversionError(f"input {index} must be a vector, not of rank {len(shape)}")
    if shape is not None and shape[0] is not None:
        return int64_constant(ctx, [shape[0]])
    return ctx.op.Shape(ctx.op.Reshape(ctx.input(index), int64_constant(ctx, [-1])))


def _rows_of(ctx, index: int, data: int) -> str:
    """Input `data` as rows: its dims after those of input `index` kept, the leading ones
    (index's dims, of a rank known at run time only too) joined into one."""
    lead = ctx.op.Shape(ctx.input(index))
    rest = ctx.op.Slice(ctx.op.Shape(ctx.input(data)), ctx.op.Shape(lead),
                        int64_constant(ctx, [np.iinfo(np.int64).max]))
    count = ctx.op.ReduceProd(lead, keepdims=1)
    target = ctx.op.Concat(count, rest, axis=0)
    return ctx.op.Reshape(ctx.input(data), target, allowzero=1), rest


def _product(ctx, shape: str, start: int, stop: int) -> str:
    """The product of shape[start:stop] (an int64 vector), as a 1-element vector."""
    if start >= stop:
        return int64_constant(ctx, [1])
    part = ctx.op.Slice(shape, int64_constant(ctx, [start]), int64_constant(ctx, [stop]))
    return ctx.op.ReduceProd(part, keepdims=1)


def _strides(ctx, shape: str, rank) -> str:
    """The row-major strides of a dense shape (int64 vector of `rank`, None when it is known
    only at run time: then stride d is the product of shape[j] over the j > d of an R x R
    mask, as ONNX has no cumulative product)."""
    if rank is not None:
        parts = [_product(ctx, shape, d + 1, rank) for d in range(rank)]
        return parts[0] if rank == 1 else ctx.op.Concat(*parts, axis=0)
    from tf2ir.opp.emitting import Emitter
    o = Emitter(ctx, "int64")
    axes = o.Range(o.c(0), o.Size(shape), o.c(1))
    after = o.Greater(o.Unsqueeze(axes, o.c([0])), o.Unsqueeze(axes, o.c([1])))   # [d, j]: j > d
    dims = o.Where(after, o.Unsqueeze(shape, o.c([0])), o.c(1))
    return o.ReduceProd(dims, o.c([1]), keepdims=0)


# -- SparseToDense ----------------------------------------------------------------------
sparse_to_dense = (
    OPS.declare("SparseToDense", "Dense tensor of shape `output_shape`: `default_value` "
                "except at `sparse_indices`, which take `sparse_values`.")
    .input("sparse_indices", INDEX_TYPES).input("output_shape", INDEX_TYPES)
    .input("sparse_values").input("default_value")
    .output("dense").attr("validate_indices", "bool", True))


@sparse_to_dense.infer
def _infer_sparse_to_dense(node):
    from tf2ir.opp.shapes import infer_from_shape_input
    return infer_from_shape_input(node, 1, node.inputs[2].desc.dtype)


@sparse_to_dense.lower
def _lower_sparse_to_dense(ctx, node):
    shape = int64_input(ctx, 1)
    rows = ctx.op.Concat(int64_constant(ctx, [-1]), _length_vector(ctx, 1), axis=0)
    indices = ctx.op.Reshape(int64_input(ctx, 0), rows)
    count = ctx.op.Slice(ctx.op.Shape(indices), int64_constant(ctx, [0]), int64_constant(ctx, [1]))
    values = ctx.op.Expand(ctx.input(2), count)   # a scalar value serves every index
    dense = ctx.op.Expand(ctx.input(3), shape)
    ctx.op.ScatterND(dense, indices, values, out=ctx.output(0))


# -- SparseReshape ----------------------------------------------------------------------
sparse_reshape = (
    OPS.declare("SparseReshape", "The indices of a SparseTensor of `input_shape` laid out "
                "for `new_shape` (one -1 dim is inferred); the new dense shape.")
    .input("input_indices", ("int64",)).input("input_shape", ("int64",))
    .input("new_shape", ("int64",)).output("output_indices").output("output_shape"))


def _length(node, index: int):
    """Input `index`'s length (a vector's), or None when known only at run time."""
    shape = node.inputs[index].desc.shape
    if shape is not None and len(shape) != 1:
        raise ConversionError(f"input {index} must be a vector, not of rank {len(shape)}")
    return None if shape is None else shape[0]


@sparse_reshape.infer
def _infer_sparse_reshape(node):
    count = node.inputs[0].desc.shape[0] if node.inputs[0].desc.shape else None
    _length(node, 1)
    rank = _length(node, 2)
    return [TensorDesc("int64", (count, rank)), TensorDesc("int64", (rank,))]


@sparse_reshape.lower
def _lower_sparse_reshape(ctx, node):
    rank_in, rank_out = _length(node, 1), _length(node, 2)
    old, new = ctx.input(1), ctx.input(2)
    size = ctx.op.ReduceProd(old, keepdims=1)
    # -1 → size / product of the others (the product of all, with -1 counted as 1, negated)
    known = ctx.op.ReduceProd(ctx.op.Abs(new), keepdims=1)
    inferred = ctx.op.Div(size, known)
    is_free = ctx.op.Equal(new, int64_constant(ctx, [-1]))
    shape = ctx.op.Where(is_free, inferred, new, out=ctx.output(1))
    linear = ctx.op.MatMul(ctx.input(0), ctx.op.Unsqueeze(_strides(ctx, old, rank_in),
                                                          int64_constant(ctx, [1])))   # [N, 1]
    strides = ctx.op.Unsqueeze(_strides(ctx, shape, rank_out), int64_constant(ctx, [0]))
    dims = ctx.op.Unsqueeze(shape, int64_constant(ctx, [0]))
    ctx.op.Mod(ctx.op.Div(linear, strides), dims, out=ctx.output(0))


# -- SparseFillEmptyRows ---------------------------------------------------------------
fill_empty_rows = (
    OPS.declare("SparseFillEmptyRows", "The SparseTensor (indices, values, dense_shape) with "
                "a `default_value` entry [r, 0, ...] in every empty row r; which rows were "
                "empty; where each input entry went.")
    .input("indices", ("int64",)).input("values").input("dense_shape", ("int64",))
    .input("default_value").output("output_indices").output("output_values")
    .output("empty_row_indicator").output("reverse_index_map"))


@fill_empty_rows.infer
def _infer_fill_empty_rows(node):
    shape = node.inputs[0].desc.shape
    rank = shape[1] if shape is not None and len(shape) == 2 else None
    dtype = node.inputs[1].desc.dtype
    return [TensorDesc("int64", (None, rank)), TensorDesc(dtype, (None,)),
            TensorDesc("bool", (None,)), TensorDesc("int64", (None,))]


@fill_empty_rows.lower
def _lower_fill_empty_rows(ctx, node):
    rank = _length_vector(ctx, 2)                                                 # [1]
    one, zero = int64_constant(ctx, [1]), int64_constant(ctx, [0])
    indices, values = ctx.input(0), ctx.input(1)
    rows = ctx.op.Slice(ctx.input(2), zero, one)                                 # [1]
    row = ctx.op.Squeeze(ctx.op.Slice(indices, zero, one, one), one)             # [N]
    count = ctx.op.Shape(row)                                                     # [1]
    ones = ctx.op.Expand(ctx.constant(np.array(1, np.int64)), count)
    counts = ctx.op.ScatterElements(ctx.op.Expand(ctx.constant(np.array(0, np.int64)), rows),
                                    row, ones, reduction="add")                  # per row
    empty = ctx.op.Equal(counts, ctx.constant(np.array(0, np.int64)), out=ctx.output(2))
    per_row = ctx.op.Max(counts, ctx.constant(np.array(1, np.int64)))
    starts = ctx.op.CumSum(per_row, ctx.constant(np.array(0, np.int64)), exclusive=1)
    firsts = ctx.op.CumSum(counts, ctx.constant(np.array(0, np.int64)), exclusive=1)
    position = ctx.op.Range(ctx.constant(np.array(0, np.int64)), ctx.op.Squeeze(count, zero),
                            ctx.constant(np.array(1, np.int64)))
    key = ctx.op.Add(ctx.op.Mul(row, count), position)
    _, order = ctx.op.TopK(key, count, outputs=2, largest=0, sorted=1)            # stable by row
    sorted_at = ctx.op.ScatterElements(position, order, position)                # inverse
    rank_in_row = ctx.op.Sub(sorted_at, ctx.op.Gather(firsts, row))
    where = ctx.op.Add(ctx.op.Gather(starts, row), rank_in_row, out=ctx.output(3))
    total = ctx.op.ReduceSum(per_row, keepdims=1)
    out_values = ctx.op.Expand(ctx.input(3), total)
    slots = ctx.op.Unsqueeze(where, one)
    ctx.op.ScatterND(out_values, slots, values, out=ctx.output(1))
    empty_rows = ctx.op.Squeeze(ctx.op.NonZero(empty), zero)                      # [E]
    filled = ctx.op.Unsqueeze(empty_rows, one)                                    # [E, 1]
    pad = ctx.op.Expand(ctx.constant(np.zeros((1, 1), np.int64)),
                        ctx.op.Concat(ctx.op.Shape(empty_rows), ctx.op.Sub(rank, one),
                                      axis=0))                                    # [E, rank-1]
    filled = ctx.op.Concat(filled, pad, axis=1)
    base = ctx.op.Expand(ctx.constant(np.zeros((1, 1), np.int64)),
                         ctx.op.Concat(total, rank, axis=0))
    placed = ctx.op.ScatterND(base, slots, indices)
    at = ctx.op.Unsqueeze(ctx.op.Gather(starts, empty_rows), one)
    ctx.op.ScatterND(placed, at, filled, out=ctx.output(0))


# -- DynamicPartition -------------------------------------------------------------------
dynamic_partition = (
    OPS.declare("DynamicPartition", "Output i holds the slices of `data` whose `partitions` "
                "entry is i, in order.")
    .input("data").input("partitions", ("int32",))
    .dynamic_output("outputs", count_attr="num_partitions").attr("num_partitions", "int"))


@dynamic_partition.infer
def _infer_dynamic_partition(node):
    data, parts = node.inputs[0].desc, node.inputs[1].desc
    rest = None
    if data.shape is not None and parts.shape is not None:
        rest = tuple(data.shape[len(parts.shape):])
    shape = None if rest is None else (None,) + rest
    return [TensorDesc(data.dtype, shape) for _ in range(node.attrs["num_partitions"])]


@dynamic_partition.lower
def _lower_dynamic_partition(ctx, node):
    data, parts = ctx.input(0), ctx.input(1)
    if node.inputs[1].desc.rank != 1:   # flatten the partition dims of both
        data, _ = _rows_of(ctx, 1, 0)
        parts = ctx.op.Reshape(parts, int64_constant(ctx, [-1]))
    for i in range(node.attrs["num_partitions"]):
        chosen = ctx.op.Equal(parts, ctx.constant(np.array([i], np.int32)))
        ctx.op.Compress(data, chosen, out=ctx.output(i), axis=0)


# -- DynamicStitch ----------------------------------------------------------------------
dynamic_stitch = (
    OPS.declare("DynamicStitch", "merged[indices[m][i]] = data[m][i]: the inputs' rows put "
                "in place; a repeated index takes the later input's row.")
    .dynamic_input("indices", ("int32",), count_attr="N").dynamic_input("data", count_attr="N")
    .output("merged").attr("N", "int"))


@dynamic_stitch.infer
def _infer_dynamic_stitch(node):
    n = node.attrs["N"]
    first_index, first_data = node.inputs[0].desc, node.inputs[n].desc
    rest = None
    if first_index.shape is not None and first_data.shape is not None:
        rest = tuple(first_data.shape[len(first_index.shape):])
    return [TensorDesc(first_data.dtype, None if rest is None else (None,) + rest)]


@dynamic_stitch.lower
def _lower_dynamic_stitch(ctx, node):
    n = node.attrs["N"]
    indices, rows = [], []
    for m in range(n):
        flat = ctx.op.Reshape(int64_input(ctx, m), int64_constant(ctx, [-1]))
        data, rest = _rows_of(ctx, m, n + m)
        rows.append(data)
        indices.append(flat)
        row_shape = rest
    index = indices[0] if n == 1 else ctx.op.Concat(*indices, axis=0)
    data = rows[0] if n == 1 else ctx.op.Concat(*rows, axis=0)
    top = ctx.op.ReduceMax(ctx.op.Concat(index, int64_constant(ctx, [-1]), axis=0), keepdims=1)
    count = ctx.op.Add(top, int64_constant(ctx, [1]))
    zero = emit_cast(ctx, ctx.constant(np.array(0, np.int64)), node.inputs[n].desc.dtype)
    merged = ctx.op.Expand(zero, ctx.op.Concat(count, row_shape, axis=0))
    ctx.op.ScatterND(merged, ctx.op.Unsqueeze(index, int64_constant(ctx, [1])), data,
                     out=ctx.output(0))
