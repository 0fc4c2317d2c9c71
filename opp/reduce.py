"""Reductions and scans along axes: sums, means, extrema and products (ReduceSum, ...),
arg-max/min, the boolean All/Any, EuclideanNorm, L2Loss, TopK, cumulative sums and products, and
BoostedTreesBucketize (per value, how many bucket boundaries lie at or below it)."""

from __future__ import annotations

from typing import List, Optional

import numpy as np
from onnx import helper

from tf2ir.ir import ConversionError, TensorDesc, OpSet
from tf2ir.ir.onnx.kernels import via
from tf2ir.ir.onnx.writer import ONNX_DTYPES
from tf2ir.ir.tensor import FLOAT_TYPES, INDEX_TYPES, NUMBER_TYPES, numpy_dtype
from tf2ir.opp.carriers import ARITHMETIC_VIA, MINMAX_VIA
from tf2ir.opp.emitting import cast_from_int64, emit_cast, emit_via, int64_constant, int64_input
from tf2ir.opp.shapes import INT64_MAX, const_ints, normalize_axis, onnx_axis

OPS = OpSet("tf2ir.opp.reduce")


def _reduced_desc(x: TensorDesc, axes: Optional[List[int]], keep_dims: bool, dtype: str) -> TensorDesc:
    """The shape of `x` reduced over `axes` (None: not known at conversion time)."""
    if x.shape is None or axes is None:
        rank = x.rank if keep_dims else None
        return TensorDesc(dtype, None if rank is None else (None,) * rank)
    axes = {normalize_axis(a, len(x.shape)) for a in axes}
    if keep_dims:
        return TensorDesc(dtype, tuple(1 if i in axes else d for i, d in enumerate(x.shape)))
    return TensorDesc(dtype, tuple(d for i, d in enumerate(x.shape) if i not in axes))


def axes_input(ctx, index):
    """The node's input `index` (TF reduction axes: a scalar or a vector) as the 1-D int64
    tensor ONNX reductions require."""
    value = ctx.const_input(index)
    if value is not None:
        return ctx.constant(np.asarray(value, dtype=np.int64).reshape(-1), "axes")
    axes = int64_input(ctx, index)
    if ctx.input_desc(index).rank == 1:
        return axes
    return ctx.op.Reshape(axes, ctx.constant(np.array([-1], np.int64)))


# -- sums, means, extrema, products ---------------------------------------------------------
def _reduction(op_type, onnx_op, doc, dtypes=NUMBER_TYPES, via=None):
    proto = (OPS.declare(op_type, doc).input("x", dtypes).input("axes", INDEX_TYPES).output("y")
             .attr("keep_dims", "bool", False))

    @proto.infer
    def infer(node):
        x = node.inputs[0].desc
        axes = const_ints(node, 1)
        if x.shape is None or axes is None:
            rank = None if x.rank is None or not node.attrs["keep_dims"] else x.rank
            return [TensorDesc(x.dtype, None if rank is None else (None,) * rank)]
        axes = {normalize_axis(a, len(x.shape)) for a in axes}
        if node.attrs["keep_dims"]:
            shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
        else:
            shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
        return [TensorDesc(x.dtype, shape)]

    @proto.lower
    def lower(ctx, node):
        emit_via(ctx, onnx_op, [ctx.input(0), axes_input(ctx, 1)], ctx.output(0),
                 node.inputs[0].desc.dtype, via or {}, cast_count=1,
                 keepdims=int(node.attrs["keep_dims"]), noop_with_empty_axes=1)
    return proto


def _fold_reduction(numpy_fn):
    def fold(node, values):
        axes = tuple(int(a) for a in np.asarray(values[1]).reshape(-1))
        return [numpy_fn(values[0], axis=axes, keepdims=node.attrs["keep_dims"])]
    return fold


_reduction("ReduceMean", "ReduceMean", "mean over `axes`", via=ARITHMETIC_VIA)

_reduction("ReduceSum", "ReduceSum", "sum over `axes`", via=ARITHMETIC_VIA).fold(_fold_reduction(np.sum))
_reduction("ReduceMax", "ReduceMax", "maximum over `axes`", via=MINMAX_VIA).fold(_fold_reduction(np.max))
_reduction("ReduceMin", "ReduceMin", "minimum over `axes`", via=MINMAX_VIA).fold(_fold_reduction(np.min))
_reduction("ReduceProd", "ReduceProd", "product over `axes`", via=ARITHMETIC_VIA) \
    .fold(_fold_reduction(np.prod))

# -- arg max / arg min ------------------------------------------------------------------------
# onnxruntime's ArgMax/ArgMin kernels: float16/32/64, int8, uint8, int32, int64
ARG_VIA = via("ArgMax", {"bool": "int32", "int16": "int32", "uint16": "int32", "uint32": "int64"})
ARG_OUTPUT_TYPES = ("int16", "uint16", "int32", "int64")


def _arg_reduction(op_type: str, onnx_op: str, doc: str):
    proto = (OPS.declare(op_type, doc)
             .input("x", NUMBER_TYPES + ("bool",)).input("dimension", INDEX_TYPES)
             .output("y", ARG_OUTPUT_TYPES)
             .attr("output_type", "dtype", "int64"))

    @proto.infer
    def infer(node):
        if node.attrs["output_type"] not in ARG_OUTPUT_TYPES:
            raise ConversionError(f"output_type {node.attrs['output_type']} is not one of "
                                  f"{', '.join(ARG_OUTPUT_TYPES)}")
        axis = const_ints(node, 1)
        return [_reduced_desc(node.inputs[0].desc, axis, False, node.attrs["output_type"])]

    @proto.lower
    def lower(ctx, node):
        axis = const_ints(node, 1)
        if axis is None or len(axis) != 1:
            raise ConversionError(f"{op_type} needs a constant scalar dimension")
        x = node.inputs[0].desc
        a = onnx_axis(axis[0], x.rank)      # ONNX counts a negative axis from the end too
        source = ctx.input(0)
        if x.dtype in ARG_VIA:
            source = emit_cast(ctx, source, ARG_VIA[x.dtype])
        # TF returns the first index among equal values: select_last_index=0
        index = getattr(ctx.op, onnx_op)(source, axis=a, keepdims=0, select_last_index=0)
        cast_from_int64(ctx, index, node.attrs["output_type"], ctx.output(0))

    @proto.fold
    def fold(node, values):
        numpy_fn = np.argmax if op_type == "ArgMax" else np.argmin
        axis = int(np.asarray(values[1]).reshape(-1)[0])
        return [numpy_fn(values[0], axis=axis).astype(numpy_dtype(node.attrs["output_type"]))]
    return proto


_arg_reduction("ArgMax", "ArgMax", "Index of the largest entry along `dimension` (the first one on ties).")
_arg_reduction("ArgMin", "ArgMin", "Index of the smallest entry along `dimension` (the first one on ties).")


# -- boolean reductions ---------------------------------------------------------------------
def _bool_reduction(op_type: str, doc: str, is_all: bool):
    proto = (OPS.declare(op_type, doc).input("x", ("bool",)).input("axes", INDEX_TYPES)
             .output("y", ("bool",)).attr("keep_dims", "bool", False))
    @proto.infer
    def infer(node):
        return [_reduced_desc(node.inputs[0].desc, const_ints(node, 1), node.attrs["keep_dims"], "bool")]

    @proto.lower
    def lower(ctx, node):
        # all(x) = min(x); any(x) = not all(not x), which keeps any() of an empty set False
        source = ctx.input(0) if is_all else ctx.op.Not(ctx.input(0))
        numbers = ctx.op.Cast(source, to=ONNX_DTYPES["int32"])
        least = ctx.op.ReduceMin(numbers, axes_input(ctx, 1),
                                 keepdims=int(node.attrs["keep_dims"]), noop_with_empty_axes=1)
        if is_all:
            ctx.op.Cast(least, out=ctx.output(0), to=ONNX_DTYPES["bool"])
        else:
            ctx.op.Not(emit_cast(ctx, least, "bool"), out=ctx.output(0))

    @proto.fold
    def fold(node, values):
        axes = tuple(int(a) for a in np.asarray(values[1]).reshape(-1))
        numpy_fn = np.all if is_all else np.any
        return [np.asarray(numpy_fn(values[0], axis=axes, keepdims=node.attrs["keep_dims"]))]
    return proto


_bool_reduction("ReduceAll", "Logical and over `axes` (True over an empty set).", True)
_bool_reduction("ReduceAny", "Logical or over `axes` (False over an empty set).", False)

euclidean_norm = (OPS.declare("EuclideanNorm", "sqrt(sum(x ** 2)) over `axes`.")
                  .input("x", NUMBER_TYPES).input("axes", INDEX_TYPES).output("y")
                  .attr("keep_dims", "bool", False))


@euclidean_norm.infer
def _infer_euclidean_norm(node):
    return [_reduced_desc(node.inputs[0].desc, const_ints(node, 1), node.attrs["keep_dims"],
                          node.inputs[0].desc.dtype)]


@euclidean_norm.lower
def _lower_euclidean_norm(ctx, node):
    # Abs first: over an empty axes list the norm of each entry is |x|, and ReduceL2's
    # noop_with_empty_axes returns its input unchanged
    dtype = node.inputs[0].desc.dtype
    magnitude = ctx.op.Abs(ctx.input(0))
    emit_via(ctx, "ReduceL2", [magnitude, axes_input(ctx, 1)], ctx.output(0), dtype, ARITHMETIC_VIA,
             cast_count=1, keepdims=int(node.attrs["keep_dims"]), noop_with_empty_axes=1)


l2_loss = (OPS.declare("L2Loss", "sum(x ** 2) / 2 over all of x, a scalar.")
           .input("x", FLOAT_TYPES).output("y"))


@l2_loss.infer
def _infer_l2_loss(node):
    return [TensorDesc(node.inputs[0].desc.dtype, ())]


@l2_loss.lower
def _lower_l2_loss(ctx, node):
    dtype = node.inputs[0].desc.dtype
    total = ctx.op.ReduceSumSquare(ctx.input(0), keepdims=0)
    two = ctx.constant(np.array(2, numpy_dtype(dtype)))
    ctx.op.Div(total, two, out=ctx.output(0))


# -- top k ---------------------------------------------------------------------------------
top_k = (OPS.declare("TopK", "The k largest (or smallest) entries along `dim`, with their indices.")
         .input("x", NUMBER_TYPES).input("k", INDEX_TYPES).output("values").output("indices", INDEX_TYPES)
         .attr("sorted", "bool", True).attr("dim", "int", -1).attr("largest", "bool", True)
         .attr("index_type", "dtype", "int32"))


@top_k.infer
def _infer_top_k(node):
    x, k = node.inputs[0].desc, const_ints(node, 1)
    shape = None
    if x.shape is not None:
        dim = normalize_axis(node.attrs["dim"], len(x.shape))
        shape = tuple((k[0] if k else None) if i == dim else d for i, d in enumerate(x.shape))
    return [TensorDesc(x.dtype, shape), TensorDesc(node.attrs["index_type"], shape)]


@top_k.lower
def _lower_top_k(ctx, node):
    from tf2ir.opp.emitting import cast_from_int64
    k = ctx.op.Reshape(int64_input(ctx, 1), ctx.constant(np.array([1], np.int64)))
    indices = ctx.fresh("indices")
    ctx.op.TopK(ctx.input(0), k, outputs=[ctx.output(0), indices], axis=node.attrs["dim"],
                largest=int(node.attrs["largest"]), sorted=int(node.attrs["sorted"]))
    cast_from_int64(ctx, indices, node.attrs["index_type"], ctx.output(1))


# -- cumulative sum and product ---------------------------------------------------------------
def _infer_same_shape(node):
    x = node.inputs[0].desc
    return [x.copy()]


def _fold_cumulative(numpy_fn, identity):
    def fold(node, values):
        x = np.asarray(values[0])
        axis = normalize_axis(int(np.asarray(values[1]).reshape(-1)[0]), x.ndim)
        if node.attrs["reverse"]:
            x = np.flip(x, axis)
        y = numpy_fn(x, axis=axis, dtype=x.dtype)
        if node.attrs["exclusive"]:
            pad = np.full_like(np.take(x, [0], axis=axis), identity)
            y = np.concatenate([pad, np.delete(y, -1, axis=axis)], axis=axis)
        return [np.flip(y, axis) if node.attrs["reverse"] else y]
    return fold


def _cumulative(op_type: str, doc: str):
    return (OPS.declare(op_type, doc).input("x", NUMBER_TYPES).input("axis", INDEX_TYPES).output("y")
            .attr("exclusive", "bool", False).attr("reverse", "bool", False))


cumsum = _cumulative("Cumsum", "Running sum along `axis` (exclusive: without the entry itself; "
                               "reverse: from the end).")
cumsum.infer(_infer_same_shape)
cumsum.fold(_fold_cumulative(np.cumsum, 0))


@cumsum.lower
def _lower_cumsum(ctx, node):
    axis = ctx.input(1)
    value = ctx.const_input(1)
    if value is not None:
        axis = ctx.constant(np.asarray(value, np.int64).reshape(()), "axis")
    emit_via(ctx, "CumSum", [ctx.input(0), axis], ctx.output(0), node.inputs[0].desc.dtype,
             ARITHMETIC_VIA, cast_count=1, exclusive=int(node.attrs["exclusive"]),
             reverse=int(node.attrs["reverse"]))


cumprod = _cumulative("Cumprod", "Running product along `axis` (exclusive: without the entry "
                                 "itself; reverse: from the end).")
cumprod.infer(_infer_same_shape)
cumprod.fold(_fold_cumulative(np.cumprod, 1))


@cumprod.lower
def _lower_cumprod(ctx, node):
    """ONNX has no cumulative product: a Scan along the axis carries the running product
    (exact, unlike exp(cumsum(log x)), which fails for zeros and negative entries)."""
    axis = const_ints(node, 1)
    x = node.inputs[0].desc
    if axis is None:
        raise ConversionError("Cumprod needs a constant axis")
    a = onnx_axis(axis[0], x.rank)
    dtype = ARITHMETIC_VIA.get(x.dtype, x.dtype)
    source = ctx.input(0) if dtype == x.dtype else emit_cast(ctx, ctx.input(0), dtype)
    shape = ctx.op.Shape(source)
    before = ctx.op.Slice(shape, int64_constant(ctx, [0]), int64_constant(ctx, [a]))
    # the dims after the axis; none after axis -1 (a + 1 == 0 would take them all)
    after = ctx.op.Slice(shape, int64_constant(ctx, [a + 1 if a != -1 else INT64_MAX]),
                         int64_constant(ctx, [INT64_MAX]))
    body_rank = None if x.rank is None else x.rank - 1
    if x.rank is None:
        # onnxruntime wants the rank of a Scan body's outputs: the input is scanned as
        # [dims before the axis, the axis, dims after it], each group's product, and reshaped back
        groups = [ctx.op.ReduceProd(ctx.op.Concat(int64_constant(ctx, [1]), dims,
                                                  axis=0), keepdims=1)
                  for dims in (before, after)]
        along = ctx.op.Gather(shape, int64_constant(ctx, [a]), axis=0)
        source = ctx.op.Reshape(source, ctx.op.Concat(groups[0], along, groups[1],
                                                      axis=0))
        before, after, a, body_rank = groups[0], groups[1], 1, 2
    # the running product starts as ones shaped like one slice along the axis
    slice_shape = ctx.op.Concat(before, after, axis=0)
    one = helper.make_tensor("one", ONNX_DTYPES[dtype], [1], [1])
    ones = ctx.op.ConstantOfShape(slice_shape, value=one)

    elem_type = ONNX_DTYPES[dtype]
    prev, item = ctx.fresh("running"), ctx.fresh("item")
    running, emitted = ctx.fresh("running_out"), ctx.fresh("scan_out")
    body_nodes = [helper.make_node("Mul", [prev, item], [running], name=ctx.fresh("Mul_node"))]
    scan_source = running
    if node.attrs["exclusive"]:
        scan_source = prev
    body_nodes.append(helper.make_node("Identity", [scan_source], [emitted], name=ctx.fresh("Identity_node")))
    dims = None if body_rank is None else [None] * body_rank
    body = helper.make_graph(
        body_nodes, ctx.fresh("cumprod_body"),
        [helper.make_tensor_value_info(name, elem_type, dims) for name in (prev, item)],
        [helper.make_tensor_value_info(name, elem_type, dims) for name in (running, emitted)])
    direction = int(node.attrs["reverse"])
    product = ctx.fresh("cumprod")
    ctx.op.Scan(ones, source, outputs=[ctx.fresh("final"), product], body=body, num_scan_inputs=1,
                scan_input_axes=[a], scan_input_directions=[direction],
                scan_output_axes=[a], scan_output_directions=[direction])
    if x.rank is None:
        product = ctx.op.Reshape(product, shape)
    if dtype != x.dtype:
        product = ctx.op.Cast(product, to=ONNX_DTYPES[x.dtype])
    ctx.op.Identity(product, out=ctx.output(0))


# -- bucketize ------------------------------------------------------------------------------
bucketize = (OPS.declare("BoostedTreesBucketize",
                          "Per feature i: y_i = how many of bucket_boundaries_i are <= float_values_i.")
             .dynamic_input("float_values", ("float32",), count_attr="num_features")
             .dynamic_input("bucket_boundaries", ("float32",), count_attr="num_features")
             .dynamic_output("y", ("int32",), count_attr="num_features")
             .attr("num_features", "int"))


@bucketize.infer
def _infer_bucketize(node):
    n = node.attrs["num_features"]
    return [TensorDesc("int32", node.inputs[i].desc.shape) for i in range(n)]


@bucketize.lower
def _lower_bucketize(ctx, node):
    n = node.attrs["num_features"]
    axis = ctx.constant(np.array([-1], np.int64))
    for i in range(n):
        values = ctx.op.Unsqueeze(ctx.input(i), axis)          # [batch, 1]
        above = ctx.op.GreaterOrEqual(values, ctx.input(n + i))  # [batch, k]
        counts = ctx.op.Cast(above, to=6)                       # int32
        ctx.op.ReduceSum(counts, axis, out=ctx.output(i), keepdims=0)
