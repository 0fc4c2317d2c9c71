"""Indexing ops: gathering (GatherV2, GatherNd) and scattering (ScatterNd, TensorScatterUpdate,
TensorScatterAdd) by index, and the ops that compute indices: Where (the coordinates of the true
entries), OneHot, Unique and InvertPermutation."""

from __future__ import annotations

import numpy as np

from tf2ir.ir import ConversionError, TensorDesc, OpSet
from tf2ir.ir.tensor import INDEX_TYPES, numpy_dtype
from tf2ir.opp.emitting import (
    cast_from_int64, emit_cast, emit_where, int64_constant, int64_input, scalar_int64_input,
)
from tf2ir.opp.shapes import (
    const_ints, infer_from_shape_input, normalize_axis, onnx_axis, same_as_input, scalar_int,
)

OPS = OpSet("tf2ir.opp.indexing")

# -- gather ----------------------------------------------------------------------------------
gather_v2 = OPS.declare("GatherV2", "Slices of x at `indices` along the dim given by input `axis`.") \
    .input("x").input("indices", INDEX_TYPES).input("axis", INDEX_TYPES).output("y") \
    .attr("batch_dims", "int", 0)


def _batch_dims(node, indices_rank):
    """batch_dims made non-negative; TF requires 0 <= batch_dims <= the indices rank."""
    batch = node.attrs["batch_dims"]
    if batch < 0:
        if indices_rank is None:
            raise ConversionError("a negative batch_dims needs the indices rank")
        batch += indices_rank
    params_rank = node.inputs[0].desc.rank
    if batch < 0 or (indices_rank is not None and batch > indices_rank) \
            or (params_rank is not None and batch >= max(params_rank, 1)):
        raise ConversionError(f"batch_dims {node.attrs['batch_dims']} is out of range for "
                              f"indices of rank {indices_rank} and params of rank {params_rank}")
    return batch


@gather_v2.infer
def _infer_gather_v2(node):
    x, indices, axis = node.inputs[0].desc, node.inputs[1].desc, const_ints(node, 2)
    batch = _batch_dims(node, indices.rank)
    if x.shape is None or indices.shape is None or axis is None:
        rank = None if x.rank is None or indices.rank is None else x.rank + indices.rank - 1 - batch
        return [TensorDesc(x.dtype, None if rank is None else (None,) * rank)]
    a = normalize_axis(axis[0], len(x.shape))
    if batch and not batch <= a:
        raise ConversionError(f"batch_dims {batch} must not exceed the axis {a}")
    return [TensorDesc(x.dtype, x.shape[:a] + indices.shape[batch:] + x.shape[a + 1:])]


@gather_v2.lower
def _lower_gather_v2(ctx, node):
    axis = const_ints(node, 2)
    batch = _batch_dims(node, node.inputs[1].desc.rank)
    if axis is None and batch == 0:
        _lower_runtime_axis_gather(ctx)
        return
    if axis is None:
        raise ConversionError("a gather with batch_dims needs a constant axis")
    if batch == 0:      # ONNX Gather counts a negative axis from the end itself
        a = onnx_axis(axis[0], node.inputs[0].desc.rank)
        ctx.op.Gather(ctx.input(0), ctx.input(1), out=ctx.output(0), axis=a)
        return
    a = normalize_axis(axis[0], node.inputs[0].desc.rank)
    if batch > a:
        raise ConversionError(f"batch_dims {batch} must not exceed the axis {a}")
    _lower_batched_gather(ctx, node, a, batch)


def _lower_runtime_axis_gather(ctx):
    """An axis known at run time (tf.signal.frame on a signal of unknown rank): x as
    [outer, dim, inner] around the axis, gathered along dim 1 and given back its dims."""
    i64 = lambda v: int64_constant(ctx, v)
    shape = ctx.op.Shape(ctx.input(0))
    axis = ctx.op.Reshape(scalar_int64_input(ctx, 2), i64([1]))
    negative = ctx.op.Less(axis, i64(0))
    axis = ctx.op.Where(negative, ctx.op.Add(axis, ctx.op.Shape(shape)), axis)
    after = ctx.op.Add(axis, i64([1]))
    outer = ctx.op.Slice(shape, i64([0]), axis)
    inner = ctx.op.Slice(shape, after, i64([2 ** 62]))
    size = lambda dims: ctx.op.ReduceProd(dims, keepdims=1)
    flat = ctx.op.Reshape(ctx.input(0), ctx.op.Concat(size(outer), ctx.op.Slice(shape, axis, after),
                                                      size(inner), axis=0))
    gathered = ctx.op.Gather(flat, ctx.input(1), axis=1)
    dims = ctx.op.Concat(outer, ctx.op.Shape(ctx.input(1)), inner, axis=0)
    ctx.op.Reshape(gathered, dims, out=ctx.output(0))


@gather_v2.fold
def _fold_gather_v2(node, values):
    if node.attrs.get("batch_dims", 0):
        raise ValueError("batch_dims is not folded")
    return [np.take(values[0], values[1], axis=scalar_int(values[2]))]


def _lower_batched_gather(ctx, node, axis, batch):
    """batch_dims > 0: GatherND with batch_dims over indices[..., None], after moving the
    gathered axis right behind the batch dims (and the gathered dims back after)."""
    rank, index_rank = node.inputs[0].desc.rank, node.inputs[1].desc.rank
    if index_rank is None:
        raise ConversionError("batch_dims needs the indices rank")
    x = ctx.input(0)
    middle = axis - batch                      # x dims between the batch dims and the axis
    if middle and rank is None:
        raise ConversionError(f"batch_dims {batch} below the axis {axis} needs the params rank "
                              f"(to move the axis), and it is unknown")
    if middle:
        perm = list(range(batch)) + [axis] + list(range(batch, axis)) + list(range(axis + 1, rank))
        x = ctx.op.Transpose(x, perm=perm)
    indices = ctx.op.Unsqueeze(int64_input(ctx, 1), ctx.constant(np.array([-1], np.int64)))
    if not middle:
        ctx.op.GatherND(x, indices, out=ctx.output(0), batch_dims=batch)
        return
    gathered = ctx.op.GatherND(x, indices, batch_dims=batch)
    k = index_rank - batch                     # the gathered dims, now right after the batch
    out_rank = rank - 1 + k
    perm = (list(range(batch)) + list(range(batch + k, batch + k + middle))
            + list(range(batch, batch + k)) + list(range(batch + k + middle, out_rank)))
    ctx.op.Transpose(gathered, out=ctx.output(0), perm=perm)


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


@gather_nd.lower
def _lower_gather_nd(ctx, node):
    ctx.op.GatherND(ctx.input(0), int64_input(ctx, 1), out=ctx.output(0))


# -- scatter ---------------------------------------------------------------------------------
def _scatter(ctx, data: str, indices: str, updates: str, dtype: str, reduction: str) -> None:
    """ONNX ScatterND (float16 'add' runs in float32, onnxruntime has no kernel for it)."""
    if dtype in ("float16", "bfloat16") and reduction == "add":
        result = ctx.op.ScatterND(emit_cast(ctx, data, "float32"), indices,
                                  emit_cast(ctx, updates, "float32"), reduction=reduction)
        emit_cast(ctx, result, dtype, ctx.output(0))
        return
    ctx.op.ScatterND(data, indices, updates, out=ctx.output(0), reduction=reduction)


scatter_nd = OPS.declare("ScatterNd", "Zeros of `shape` with updates summed in at indices.") \
    .input("indices", INDEX_TYPES).input("updates").input("shape", INDEX_TYPES).output("y")


@scatter_nd.infer
def _infer_scatter_nd(node):
    return infer_from_shape_input(node, 2, node.inputs[1].desc.dtype)


@scatter_nd.lower
def _lower_scatter_nd(ctx, node):
    dtype = node.inputs[1].desc.dtype
    zero = np.zeros(1, numpy_dtype(dtype))
    from onnx import numpy_helper
    zeros = ctx.op.ConstantOfShape(int64_input(ctx, 2), value=numpy_helper.from_array(zero))
    _scatter(ctx, zeros, int64_input(ctx, 0), ctx.input(1), dtype, "add")


def _tensor_scatter(op_type, reduction, doc):
    proto = OPS.declare(op_type, doc).input("tensor").input("indices", INDEX_TYPES).input("updates") \
        .output("y")
    proto.infer(same_as_input)

    @proto.lower
    def lower(ctx, node):
        _scatter(ctx, ctx.input(0), int64_input(ctx, 1), ctx.input(2), node.inputs[0].desc.dtype,
                 reduction)
    return proto


_tensor_scatter("TensorScatterUpdate", "none", "tensor with the slices at indices replaced by updates")
_tensor_scatter("TensorScatterAdd", "add", "tensor with updates added at indices")

# -- indices: where, one-hot, unique, invert permutation ------------------------------------------
NONZERO_TYPES = ("float16", "float32", "uint8", "int32", "int64", "bool")
where = OPS.declare("Where", "The coordinates of the true (non-zero) entries of x, int64 [n, rank].") \
    .input("x").output("index", ("int64",))


@where.infer
def _infer_where(node):
    return [TensorDesc("int64", (None, node.inputs[0].desc.rank))]


@where.lower
def _lower_where(ctx, node):
    x = ctx.input(0)
    if node.inputs[0].desc.dtype not in NONZERO_TYPES:
        x = emit_cast(ctx, x, "bool")
    coords = ctx.op.NonZero(x)
    ctx.op.Transpose(coords, out=ctx.output(0), perm=[1, 0])


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
    rank, a = node.inputs[0].desc.rank, node.attrs["axis"]
    if rank is not None:
        a = _one_hot_axis(node, rank)
    elif a < -1:
        raise ConversionError(f"axis {a} is out of range")
    indices = ctx.op.Unsqueeze(int64_input(ctx, 0), int64_constant(ctx, [a]))
    positions = ctx.op.Range(ctx.constant(np.array(0, np.int64)), scalar_int64_input(ctx, 1),
                             ctx.constant(np.array(1, np.int64)))
    if rank is not None:
        target = int64_constant(ctx, [-1] + [1] * (rank - a))
    elif a == -1:       # the last axis: the positions broadcast as they are
        target = int64_constant(ctx, [-1])
    else:               # the indices rank at run time: [-1, 1, ..., 1] (rank - axis ones)
        ones = ctx.op.Sub(ctx.op.Size(ctx.op.Shape(ctx.input(0))), int64_constant(ctx, a))
        ones = ctx.op.Expand(int64_constant(ctx, [1]),
                             ctx.op.Reshape(ones, int64_constant(ctx, [1])))
        target = ctx.op.Concat(int64_constant(ctx, [-1]), ones, axis=0)
    positions = ctx.op.Reshape(positions, target)
    hit = ctx.op.Equal(indices, positions)
    emit_where(ctx, hit, ctx.input(2), ctx.input(3), node.inputs[2].desc.dtype, ctx.output(0))


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
        x = emit_cast(ctx, x, wide)
    values, inverse = ctx.fresh("unique_values"), ctx.fresh("unique_inverse")
    ctx.op.Unique(x, outputs=[values, ctx.fresh("first"), inverse, ctx.fresh("counts")], sorted=0)
    if wide:
        emit_cast(ctx, values, dtype, ctx.output(0))
    else:
        ctx.op.Identity(values, out=ctx.output(0))
    cast_from_int64(ctx, inverse, node.attrs["out_idx"], ctx.output(1))


invert_permutation = OPS.declare("InvertPermutation", "y[x[i]] = i for a permutation x of 0..n-1.") \
    .input("x", INDEX_TYPES).output("y")
invert_permutation.infer(same_as_input)


@invert_permutation.lower
def _lower_invert_permutation(ctx, node):
    dtype = node.inputs[0].desc.dtype
    positions = ctx.op.Range(ctx.constant(np.array(0, np.int64)), ctx.op.Size(ctx.input(0)),
                             ctx.constant(np.array(1, np.int64)))
    if dtype != "int64":
        positions = emit_cast(ctx, positions, dtype)
    ctx.op.ScatterElements(ctx.input(0), ctx.input(0), positions, out=ctx.output(0), axis=0)


@invert_permutation.fold
def _fold_invert_permutation(node, values):
    return [np.argsort(values[0]).astype(values[0].dtype)]
