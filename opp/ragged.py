"""Ragged ops as `tf.ragged` emits them: RaggedRange, RaggedTensorToTensor, RaggedGather and
RaggedTensorToSparse; RaggedTensorToVariant and RaggedTensorFromVariant are refused.

A RaggedTensor reaches these ops as its parts: one row-splits vector per ragged dimension
(int32 or int64, `splits[0] == 0`, `splits[-1]` the item count of the next level) and the
dense values. All lengths may be known only at run time. The lowerings share two steps:

* row ids from splits: a 1 added at each row end (ScatterElements, reduction add, so that
  empty rows stack), then a running sum gives each item the row it belongs to;
* coordinates: walking from the values up through the splits, each item's position in its
  row (item - splits[row]) and its row, which indexes the level above.

* RaggedRange: row i counts from starts[i] to limits[i] by deltas[i] (scalars broadcast);
  sizes as TF's kernel computes them; a float value is start + j * delta, where TF adds the
  delta j times (the same up to rounding).
* RaggedTensorToTensor: the values scattered (ScatterND) into `default_value` expanded to the
  output shape; dims of `shape` that are -1 (or all, for a scalar shape) take the row count and
  the longest rows; entries beyond a given dim are dropped. Partitions, per ragged dim:
  ROW_SPLITS, or VALUE_ROWIDS (turned into splits over FIRST_DIM_SIZE rows outermost, over the
  level above's items further in), mixed as TF emits them.
* RaggedGather: the gathered rows' item ranges expanded level by level (new splits are the
  running sum of the chosen rows' lengths); dense indices of rank 2 or more add uniform splits
  first, a scalar index drops the outer level.
* RaggedTensorToSparse: one entry per element of the values, its index (row, positions...,
  inner coordinates) in row-major order; the dense shape holds the longest rows.
"""

from __future__ import annotations

from typing import Callable, List, Optional

import numpy as np

from tf2ir.ir import ConversionError, OpSet, TensorDesc
from tf2ir.ir.onnx.writer import ONNX_DTYPES
from tf2ir.ir.tensor import INDEX_TYPES, INT_TYPES
from tf2ir.opp.emitting import Emitter, int64_constant, int64_input
from tf2ir.opp.shapes import INT64_MAX

OPS = OpSet("tf2ir.opp.ragged")
RANGE_TYPES = ("float32", "float64", "int32", "int64")


# -- shared steps ---------------------------------------------------------------------------
def _last(ctx, splits: str) -> str:
    """splits[-1] as a 1-element vector: the item count of the level below."""
    return ctx.op.Slice(splits, int64_constant(ctx, [-1]), int64_constant(ctx, [INT64_MAX]))


def _row_lengths(ctx, splits: str) -> str:
    o = Emitter(ctx, "int64")
    return o.Sub(o.Slice(splits, int64_constant(ctx, [1]), int64_constant(ctx, [INT64_MAX])),
                 o.Slice(splits, int64_constant(ctx, [0]), int64_constant(ctx, [-1])))


def _row_ids(ctx, splits: str, count: str) -> str:
    """For items 0..count-1 (count a 1-element vector), the row of `splits` holding each."""
    o = Emitter(ctx, "int64")
    ends = o.Slice(splits, int64_constant(ctx, [1]), int64_constant(ctx, [INT64_MAX]))
    marks = o.ScatterElements(o.Expand(o.c(0), o.Add(count, int64_constant(ctx, [1]))), ends,
                              o.Expand(o.c(1), o.Shape(ends)), reduction="add")
    return o.Slice(o.CumSum(marks, o.c(0)), int64_constant(ctx, [0]), count)


def _splits_from_lengths(ctx, lengths: str) -> str:
    o = Emitter(ctx, "int64")
    return o.Concat(int64_constant(ctx, [0]), o.CumSum(lengths, o.c(0)), axis=0)


def _splits_from_row_ids(ctx, row_ids: str, nrows: str) -> str:
    o = Emitter(ctx, "int64")
    counts = o.ScatterElements(o.Expand(o.c(0), nrows), row_ids,
                               o.Expand(o.c(1), o.Shape(row_ids)), reduction="add")
    return _splits_from_lengths(ctx, counts)


def _position(ctx) -> Callable[[str], str]:
    """A function of a 1-element count giving Range(0, count) (int64)."""
    def position(count: str) -> str:
        return ctx.op.Range(ctx.constant(np.array(0, np.int64)),
                            ctx.op.Squeeze(count, int64_constant(ctx, [0])),
                            ctx.constant(np.array(1, np.int64)))
    return position


def _coordinates(ctx, splits: List[str], count: str) -> List[str]:
    """For items 0..count-1 of the values: [row, position at level 0, ..., at level k-1],
    each an int64 vector."""
    o = Emitter(ctx, "int64")
    ids = _position(ctx)(count)
    cols: List[str] = []
    for level in reversed(splits):
        rows = _row_ids(ctx, level, _last(ctx, level))
        parent = o.Gather(rows, ids)
        cols.insert(0, o.Sub(ids, o.Gather(level, parent)))
        ids = parent
    return [ids] + cols


def _ragged_shape(ctx, splits: List[str], values: str) -> str:
    """[row count, the longest row at each ragged level, values.shape[1:]] (int64)."""
    o = Emitter(ctx, "int64")
    dims = [o.Sub(o.Shape(splits[0]), int64_constant(ctx, [1]))]
    for level in splits:
        lengths = o.Concat(int64_constant(ctx, [0]), _row_lengths(ctx, level), axis=0)
        dims.append(o.ReduceMax(lengths, keepdims=1))
    dims.append(o.Slice(o.Shape(values), int64_constant(ctx, [1]), int64_constant(ctx, [INT64_MAX])))
    return o.Concat(*dims, axis=0)


def _cast(ctx, name: str, dtype: str, output: str) -> None:
    ctx.op.Cast(name, out=output, to=ONNX_DTYPES[dtype])


def _values_rank(node, index: int) -> Optional[int]:
    """The values' rank (at least 1), None when it is known only at run time."""
    rank = node.inputs[index].desc.rank
    if rank is not None and rank < 1:
        raise ConversionError(f"input {index} (the values) needs a rank of at least 1")
    return rank


# -- RaggedRange ---------------------------------------------------------------------------------
ragged_range = (
    OPS.declare("RaggedRange", "A ragged tensor whose row i counts from starts[i] up to (not "
                "including) limits[i] by deltas[i]; scalar operands broadcast.")
    .input("starts", RANGE_TYPES).input("limits", RANGE_TYPES).input("deltas", RANGE_TYPES)
    .output("rt_nested_splits", INDEX_TYPES).output("rt_dense_values")
    .attr("Tsplits", "dtype", "int64"))


@ragged_range.infer
def _infer_ragged_range(node):
    shapes = [v.desc.shape for v in node.inputs]
    rows = None
    if all(s is not None for s in shapes):
        lengths = [s[0] for s in shapes if len(s) == 1]
        rows = 1 if not lengths else next((n for n in lengths if n is not None), None)
    return [TensorDesc(node.attrs.get("Tsplits", "int64"), (None if rows is None else rows + 1,)),
            TensorDesc(node.inputs[0].desc.dtype, (None,))]


@ragged_range.lower
def _lower_ragged_range(ctx, node):
    dtype = node.inputs[0].desc.dtype
    o, i = Emitter(ctx, dtype), Emitter(ctx, "int64")
    flat = int64_constant(ctx, [-1])
    starts, limits, deltas = (o.Reshape(ctx.input(k), flat) for k in range(3))
    diff = o.Sub(limits, starts)
    if dtype in INT_TYPES:
        step = o.Abs(deltas)
        size = o.Div(o.Sub(o.Add(o.Abs(diff), step), o.c(1)), step)
    else:
        size = o.Ceil(o.Abs(o.Div(diff, deltas)))
    size = o.Cast(size, to=ONNX_DTYPES["int64"])
    empty = o.Or(o.And(o.Greater(deltas, o.c(0)), o.Less(limits, starts)),
                 o.And(o.Less(deltas, o.c(0)), o.Greater(limits, starts)))
    size = i.Where(empty, i.c(0), size)
    splits = _splits_from_lengths(ctx, size)
    _cast(ctx, splits, node.attrs.get("Tsplits", "int64"), ctx.output(0))
    total = _last(ctx, splits)
    row = _row_ids(ctx, splits, total)
    step_in_row = i.Sub(_position(ctx)(total), i.Gather(splits, row))
    rows = i.Shape(size)
    first = o.Gather(o.Expand(starts, rows), row)
    delta = o.Gather(o.Expand(deltas, rows), row)
    o.Add(first, o.Mul(o.Cast(step_in_row, to=ONNX_DTYPES[dtype]), delta), out=ctx.output(1))


# -- RaggedTensorToTensor ------------------------------------------------------------------------
to_tensor = (
    OPS.declare("RaggedTensorToTensor", "The ragged tensor (values partitioned by "
                "row_partition_tensors) as a dense tensor of `shape`, padded with "
                "`default_value`; -1 dims fit the longest rows.")
    .input("shape", INDEX_TYPES).input("values").input("default_value")
    .dynamic_input("row_partition_tensors", INDEX_TYPES, count_attr="num_row_partition_tensors")
    .output("result").attr("row_partition_types", "strs").attr("num_row_partition_tensors", "int"))


PARTITIONS = ("ROW_SPLITS", "VALUE_ROWIDS")


def _partitions(node) -> List[str]:
    """The partition type of each ragged dimension (outermost first): ROW_SPLITS or
    VALUE_ROWIDS, the latter outermost only after FIRST_DIM_SIZE (the row count), as TF's
    kernel reads them; other types (ROW_LENGTHS...) TF's kernel does not run either."""
    types = [t.decode() if isinstance(t, bytes) else str(t)
             for t in node.attrs["row_partition_types"]]
    parts = types[1:] if types[:1] == ["FIRST_DIM_SIZE"] else types
    if (not parts or any(t not in PARTITIONS for t in parts)
            or (parts[0] == "VALUE_ROWIDS") != (types[0] == "FIRST_DIM_SIZE")):
        raise ConversionError(f"row_partition_types {types}: tf2ir converts ROW_SPLITS or "
                              "VALUE_ROWIDS for each ragged dimension, VALUE_ROWIDS outermost "
                              "after FIRST_DIM_SIZE (TF's kernel runs no other)")
    return parts


def _ragged_dims(node) -> int:
    return len(_partitions(node))


@to_tensor.infer
def _infer_to_tensor(node):
    ragged = _ragged_dims(node)
    values = node.inputs[1].desc
    if values.rank is None:
        return [TensorDesc(values.dtype, None)]
    dims = [None] * (ragged + 1) + list(values.shape[1:])
    given = node.inputs[0].const_value
    if given is not None and np.ndim(given) == 1 and len(given) == len(dims):
        dims = [d if int(g) == -1 else int(g) for d, g in zip(dims, given)]
    return [TensorDesc(values.dtype, tuple(dims))]


def _splits_of_partitions(ctx, node) -> List[str]:
    """Row splits (int64) for each ragged dimension; VALUE_ROWIDS become splits over the rows
    of their level: FIRST_DIM_SIZE outermost, the item count of the level above further in."""
    parts = _partitions(node)
    first = len(node.attrs["row_partition_types"]) - len(parts)
    splits: List[str] = []
    for k, kind in enumerate(parts):
        tensor = int64_input(ctx, 3 + first + k)
        if kind == "ROW_SPLITS":
            splits.append(tensor)
            continue
        nrows = (ctx.op.Reshape(int64_input(ctx, 3), int64_constant(ctx, [1])) if k == 0
                 else _last(ctx, splits[-1]))
        splits.append(_splits_from_row_ids(ctx, tensor, nrows))
    return splits


@to_tensor.lower
def _lower_to_tensor(ctx, node):
    _values_rank(node, 1)
    o = Emitter(ctx, "int64")
    splits = _splits_of_partitions(ctx, node)
    values = ctx.input(1)
    count = o.Slice(o.Shape(values), int64_constant(ctx, [0]), int64_constant(ctx, [1]))
    cols = _coordinates(ctx, splits, count)
    index = o.Concat(*[o.Unsqueeze(c, int64_constant(ctx, [1])) for c in cols], axis=1)
    shape = _ragged_shape(ctx, splits, values)
    given = ctx.const_input(0)
    if given is None or np.any(np.asarray(given) != -1):
        requested = int64_input(ctx, 0)
        shape = o.Where(o.Equal(requested, o.c(-1)), shape, requested)
        outer = o.Slice(shape, int64_constant(ctx, [0]), int64_constant(ctx, [len(cols)]))
        inside = o.Less(index, o.Unsqueeze(outer, int64_constant(ctx, [0])))
        keep = o.Cast(o.ReduceMin(o.Cast(inside, to=ONNX_DTYPES["int64"]),
                                  int64_constant(ctx, [1]), keepdims=0), to=ONNX_DTYPES["bool"])
        index = o.Compress(index, keep, axis=0)
        values = o.Compress(values, keep, axis=0)
    dense = o.Expand(ctx.input(2), shape)
    o.ScatterND(dense, index, values, out=ctx.output(0))


# -- RaggedGather --------------------------------------------------------------------------------
ragged_gather = (
    OPS.declare("RaggedGather", "The rows of a ragged tensor that `indices` choose, as a ragged "
                "tensor (splits and values).")
    .dynamic_input("params_nested_splits", INDEX_TYPES, count_attr="PARAMS_RAGGED_RANK")
    .input("params_dense_values").input("indices", INDEX_TYPES)
    .dynamic_output("output_nested_splits", INDEX_TYPES, count_attr="OUTPUT_RAGGED_RANK")
    .output("output_dense_values")
    .attr("PARAMS_RAGGED_RANK", "int").attr("OUTPUT_RAGGED_RANK", "int"))


def _gather_ranks(node):
    params, output = node.attrs["PARAMS_RAGGED_RANK"], node.attrs["OUTPUT_RAGGED_RANK"]
    indices = node.inputs[params + 1].desc.rank
    if indices is None or output != params + indices - 1 or output < 1:
        raise ConversionError(f"RaggedGather: indices of rank {indices} with PARAMS_RAGGED_RANK "
                              f"{params} and OUTPUT_RAGGED_RANK {output} do not fit")
    return params, output, indices


@ragged_gather.infer
def _infer_ragged_gather(node):
    params, output, _ = _gather_ranks(node)
    splits = node.inputs[0].desc.dtype
    values = node.inputs[params].desc
    inner = None if values.shape is None else (None,) + tuple(values.shape[1:])
    return [TensorDesc(splits, (None,)) for _ in range(output)] + [TensorDesc(values.dtype, inner)]


@ragged_gather.lower
def _lower_ragged_gather(ctx, node):
    params, output, rank = _gather_ranks(node)
    o = Emitter(ctx, "int64")
    indices = int64_input(ctx, params + 1)
    out_splits = []
    if rank >= 2:     # dense indices: uniform splits for their inner dims
        dims = o.Shape(indices)
        for d in range(1, rank):
            rows = o.ReduceProd(o.Slice(dims, int64_constant(ctx, [0]), int64_constant(ctx, [d])),
                                keepdims=1)
            width = o.Slice(dims, int64_constant(ctx, [d]), int64_constant(ctx, [d + 1]))
            out_splits.append(o.Mul(_position(ctx)(o.Add(rows, int64_constant(ctx, [1]))), width))
    chosen = o.Reshape(indices, int64_constant(ctx, [-1]))
    for k in range(params):
        level = int64_input(ctx, k)
        starts = o.Gather(level, chosen)
        lengths = o.Sub(o.Gather(level, o.Add(chosen, o.c(1))), starts)
        splits = _splits_from_lengths(ctx, lengths)
        total = _last(ctx, splits)
        row = _row_ids(ctx, splits, total)
        chosen = o.Add(o.Gather(starts, row), o.Sub(_position(ctx)(total), o.Gather(splits, row)))
        out_splits.append(splits)
    out_splits = out_splits[len(out_splits) - output:]     # a scalar index drops the outer level
    dtype = node.inputs[0].desc.dtype
    for k, splits in enumerate(out_splits):
        _cast(ctx, splits, dtype, ctx.output(k))
    o.Gather(ctx.input(params), chosen, axis=0, out=ctx.output(output))


# -- RaggedTensorToSparse ------------------------------------------------------------------------
to_sparse = (
    OPS.declare("RaggedTensorToSparse", "The ragged tensor as a SparseTensor: an index per "
                "element, the flattened values, the dense shape fitting the longest rows.")
    .dynamic_input("rt_nested_splits", INDEX_TYPES, count_attr="RAGGED_RANK")
    .input("rt_dense_values").output("sparse_indices", ("int64",)).output("sparse_values")
    .output("sparse_dense_shape", ("int64",)).attr("RAGGED_RANK", "int"))


@to_sparse.infer
def _infer_to_sparse(node):
    ragged = node.attrs["RAGGED_RANK"]
    values = node.inputs[ragged].desc
    rank = None if values.rank is None else ragged + values.rank
    return [TensorDesc("int64", (None, rank)), TensorDesc(values.dtype, (None,)),
            TensorDesc("int64", (rank,))]


@to_sparse.lower
def _lower_to_sparse(ctx, node):
    ragged = node.attrs["RAGGED_RANK"]
    rank = _values_rank(node, ragged)
    o = Emitter(ctx, "int64")
    splits = [int64_input(ctx, k) for k in range(ragged)]
    values = ctx.input(ragged)
    dims = o.Shape(values)
    count = o.Slice(dims, int64_constant(ctx, [0]), int64_constant(ctx, [1]))
    cols = _coordinates(ctx, splits, count)
    outer = o.Concat(*[o.Unsqueeze(c, int64_constant(ctx, [1])) for c in cols], axis=1)  # [N, k+1]
    if rank == 1:
        o.Identity(outer, out=ctx.output(0))
    elif rank is None:
        o.Identity(_inner_product(ctx, outer, count, o.Slice(
            dims, int64_constant(ctx, [1]), int64_constant(ctx, [INT64_MAX])), len(cols)),
            out=ctx.output(0))
    else:   # each outer index once per inner element, with the inner coordinates
        inner_dims = o.Slice(dims, int64_constant(ctx, [1]), int64_constant(ctx, [INT64_MAX]))
        size = o.ReduceProd(inner_dims, keepdims=1)
        element = _position(ctx)(size)
        coords = []
        for d in range(rank - 1):
            stride = o.ReduceProd(o.Concat(int64_constant(ctx, [1]), o.Slice(
                inner_dims, int64_constant(ctx, [d + 1]), int64_constant(ctx, [INT64_MAX])),
                axis=0), keepdims=1)
            width = o.Slice(inner_dims, int64_constant(ctx, [d]), int64_constant(ctx, [d + 1]))
            coords.append(o.Unsqueeze(o.Mod(o.Div(element, stride), width),
                                      int64_constant(ctx, [1])))
        inner = o.Concat(*coords, axis=1) if len(coords) > 1 else coords[0]   # [S, r-1]
        width = int64_constant(ctx, [len(cols) + rank - 1])
        grid = o.Concat(count, size, axis=0)
        wide_outer = o.Expand(o.Unsqueeze(outer, int64_constant(ctx, [1])), o.Concat(
            grid, int64_constant(ctx, [len(cols)]), axis=0))
        wide_inner = o.Expand(o.Unsqueeze(inner, int64_constant(ctx, [0])), o.Concat(
            grid, int64_constant(ctx, [rank - 1]), axis=0))
        o.Reshape(o.Concat(wide_outer, wide_inner, axis=2),
                  o.Concat(int64_constant(ctx, [-1]), width, axis=0), out=ctx.output(0))
    o.Reshape(values, int64_constant(ctx, [-1]), out=ctx.output(1))
    o.Identity(_ragged_shape(ctx, splits, values), out=ctx.output(2))


def emit_strides(ctx, dims: str) -> str:
    """The row-major strides of 1-D int64 `dims` (of run-time length m): stride d is the
    product of the dims after d (a masked [m, m] product)."""
    o = Emitter(ctx, "int64")
    steps = _position(ctx)(o.Shape(dims))
    after = o.Greater(o.Unsqueeze(steps, int64_constant(ctx, [0])),
                      o.Unsqueeze(steps, int64_constant(ctx, [1])))
    return o.ReduceProd(o.Where(after, o.Unsqueeze(dims, int64_constant(ctx, [0])), o.c(1)),
                        int64_constant(ctx, [1]), keepdims=0)


def emit_coordinates(ctx, dims: str, strides: str) -> str:
    """[S, m] int64: the coordinates of every element (row-major) of a tensor of 1-D `dims`
    (a 0 dim leaves no element: the divisors are at least 1, as onnxruntime checks them all)."""
    o = Emitter(ctx, "int64")
    element = o.Unsqueeze(_position(ctx)(o.ReduceProd(dims, keepdims=1)), int64_constant(ctx, [1]))
    row = int64_constant(ctx, [0])
    return o.Mod(o.Div(element, o.Unsqueeze(o.Max(strides, o.c(1)), row)),
                 o.Unsqueeze(o.Max(dims, o.c(1)), row))


def _inner_product(ctx, outer: str, count: str, inner_dims: str, width: int) -> str:
    """The [N*S, width+m] indices of `outer` ([N, width]) each followed by the coordinates of
    every element of the m inner dims `inner_dims` (S of them, m known at run time only)."""
    o = Emitter(ctx, "int64")
    size, m = o.ReduceProd(inner_dims, keepdims=1), o.Shape(inner_dims)
    inner = emit_coordinates(ctx, inner_dims, emit_strides(ctx, inner_dims))      # [S, m]
    grid = o.Concat(count, size, axis=0)
    wide_outer = o.Expand(o.Unsqueeze(outer, int64_constant(ctx, [1])),
                          o.Concat(grid, int64_constant(ctx, [width]), axis=0))
    wide_inner = o.Expand(o.Unsqueeze(inner, int64_constant(ctx, [0])), o.Concat(grid, m, axis=0))
    return o.Reshape(o.Concat(wide_outer, wide_inner, axis=2),
                     o.Concat(int64_constant(ctx, [-1]), o.Add(m, o.c([width])), axis=0))


# -- refused: variant encodings ------------------------------------------------------------------
VARIANT_REASON = ("it packs ragged tensors into TF variant tensors (tf.map_fn over ragged rows), "
                  "which ONNX has no type for")
OPS.declare("RaggedTensorToVariant", "A ragged tensor encoded as variant scalars "
            "(refused).").dynamic_input("inputs").output("encoded_ragged").refuse(VARIANT_REASON)
OPS.declare("RaggedTensorFromVariant", "Ragged tensors decoded from variant scalars "
            "(refused).").input("encoded_ragged").dynamic_output("outputs").refuse(VARIANT_REASON)
