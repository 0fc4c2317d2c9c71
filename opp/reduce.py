"""Reductions and linear algebra beyond the basics: arg-max/min, boolean reductions, cumulative sums and products, batched matrix products, einsum."""

from __future__ import annotations

import re
from typing import Dict, List, Optional

import numpy as np
from onnx import helper

from tf2ir.ir import ConversionError, TensorDesc, OpSet
from tf2ir.ir.onnx.writer import ONNX_DTYPES
from tf2ir.ir.tensor import FLOAT_TYPES, INDEX_TYPES, NUMBER_TYPES, numpy_dtype
from tf2ir.opp.common import (
    INT64_MAX, broadcast_shapes, cast_from_int64, const_ints, normalize_axis,
)
from tf2ir.opp.math import ARITHMETIC_VIA, axes_input, emit_via

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


def _cast(ctx, name: str, dtype: str) -> str:
    return ctx.emit("Cast", [name], to=ONNX_DTYPES[dtype])[0]


# -- arg max / arg min ------------------------------------------------------------------------
# onnxruntime's ArgMax/ArgMin kernels: float16/32/64, int8, uint8, int32, int64
ARG_VIA = {"bool": "int32", "int16": "int32", "uint16": "int32", "uint32": "int64"}
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
        a = normalize_axis(axis[0], x.rank)
        source = ctx.input(0)
        if x.dtype in ARG_VIA:
            source = _cast(ctx, source, ARG_VIA[x.dtype])
        # TF returns the first index among equal values: select_last_index=0
        index = ctx.emit(onnx_op, [source], axis=a, keepdims=0, select_last_index=0)[0]
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
    proto.infer(lambda node: [_reduced_desc(node.inputs[0].desc, const_ints(node, 1),
                                            node.attrs["keep_dims"], "bool")])

    @proto.lower
    def lower(ctx, node):
        # all(x) = min(x); any(x) = not all(not x), which keeps any() of an empty set False
        source = ctx.input(0) if is_all else ctx.emit("Not", [ctx.input(0)])[0]
        numbers = ctx.emit("Cast", [source], to=ONNX_DTYPES["int32"])[0]
        least = ctx.emit("ReduceMin", [numbers, axes_input(ctx, 1)],
                         keepdims=int(node.attrs["keep_dims"]), noop_with_empty_axes=1)[0]
        if is_all:
            ctx.emit("Cast", [least], [ctx.output(0)], to=ONNX_DTYPES["bool"])
        else:
            ctx.emit("Not", [_cast(ctx, least, "bool")], [ctx.output(0)])

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
euclidean_norm.infer(lambda node: [_reduced_desc(node.inputs[0].desc, const_ints(node, 1),
                                                 node.attrs["keep_dims"], node.inputs[0].desc.dtype)])


@euclidean_norm.lower
def _lower_euclidean_norm(ctx, node):
    # Abs first: over an empty axes list the norm of each entry is |x|, and ReduceL2's
    # noop_with_empty_axes returns its input unchanged
    dtype = node.inputs[0].desc.dtype
    magnitude = ctx.emit("Abs", [ctx.input(0)])[0]
    emit_via(ctx, "ReduceL2", [magnitude, axes_input(ctx, 1)], ctx.output(0), dtype, ARITHMETIC_VIA,
             cast_count=1, keepdims=int(node.attrs["keep_dims"]), noop_with_empty_axes=1)


l2_loss = (OPS.declare("L2Loss", "sum(x ** 2) / 2 over all of x, a scalar.")
           .input("x", FLOAT_TYPES).output("y"))
l2_loss.infer(lambda node: [TensorDesc(node.inputs[0].desc.dtype, ())])


@l2_loss.lower
def _lower_l2_loss(ctx, node):
    dtype = node.inputs[0].desc.dtype
    total = ctx.emit("ReduceSumSquare", [ctx.input(0)], keepdims=0)[0]
    two = ctx.constant(np.array(2, numpy_dtype(dtype)))
    ctx.emit("Div", [total, two], [ctx.output(0)])


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
    if axis is None or x.rank is None:
        raise ConversionError("Cumprod needs a constant axis and an input of known rank")
    a = normalize_axis(axis[0], x.rank)
    dtype = ARITHMETIC_VIA.get(x.dtype, x.dtype)
    source = ctx.input(0) if dtype == x.dtype else _cast(ctx, ctx.input(0), dtype)
    # the running product starts as ones shaped like one slice along the axis
    shape = ctx.emit("Shape", [source])[0]
    before = ctx.emit("Slice", [shape, ctx.constant(np.array([0], np.int64)),
                                ctx.constant(np.array([a], np.int64))])[0]
    after = ctx.emit("Slice", [shape, ctx.constant(np.array([a + 1], np.int64)),
                               ctx.constant(np.array([INT64_MAX], np.int64))])[0]
    slice_shape = ctx.emit("Concat", [before, after], axis=0)[0]
    one = helper.make_tensor("one", ONNX_DTYPES[dtype], [1], [1])
    ones = ctx.emit("ConstantOfShape", [slice_shape], value=one)[0]

    elem_type = ONNX_DTYPES[dtype]
    prev, item = ctx.fresh("running"), ctx.fresh("item")
    running, emitted = ctx.fresh("running_out"), ctx.fresh("scan_out")
    body_nodes = [helper.make_node("Mul", [prev, item], [running], name=ctx.fresh("Mul_node"))]
    scan_source = running
    if node.attrs["exclusive"]:
        scan_source = prev
    body_nodes.append(helper.make_node("Identity", [scan_source], [emitted], name=ctx.fresh("Identity_node")))
    body = helper.make_graph(
        body_nodes, ctx.fresh("cumprod_body"),
        [helper.make_tensor_value_info(prev, elem_type, None),
         helper.make_tensor_value_info(item, elem_type, None)],
        [helper.make_tensor_value_info(running, elem_type, None),
         helper.make_tensor_value_info(emitted, elem_type, None)])
    direction = int(node.attrs["reverse"])
    product = ctx.fresh("cumprod") if dtype != x.dtype else ctx.output(0)
    ctx.emit("Scan", [ones, source], [ctx.fresh("final"), product], body=body, num_scan_inputs=1,
             scan_input_axes=[a], scan_input_directions=[direction],
             scan_output_axes=[a], scan_output_directions=[direction])
    if dtype != x.dtype:
        ctx.emit("Cast", [product], [ctx.output(0)], to=ONNX_DTYPES[x.dtype])


# -- batched matrix products ------------------------------------------------------------------
batch_mat_mul = (OPS.declare("BatchMatMul", "Matrix products over the last two dims, batch dims "
                                             "broadcast; adj_x1/adj_x2 transpose them (real types).")
                 .input("x1", NUMBER_TYPES).input("x2", NUMBER_TYPES).output("y")
                 .attr("adj_x1", "bool", False).attr("adj_x2", "bool", False)
                 .attr("dst_type", "dtype", None, doc="output dtype; None: the inputs' dtype"))


@batch_mat_mul.infer
def _infer_batch_mat_mul(node):
    a, b = node.inputs[0].desc, node.inputs[1].desc
    dtype = node.attrs["dst_type"] or a.dtype
    if node.attrs["dst_type"] is None and a.dtype != b.dtype:
        raise ConversionError(f"operand dtypes differ: {a.dtype} and {b.dtype}")
    for side in (a, b):
        if side.rank is not None and side.rank < 2:
            raise ConversionError(f"BatchMatMul operands need rank >= 2, got rank {side.rank}")
    if a.shape is None or b.shape is None:
        return [TensorDesc(dtype, None)]
    rows = a.shape[-1] if node.attrs["adj_x1"] else a.shape[-2]
    inner_a = a.shape[-2] if node.attrs["adj_x1"] else a.shape[-1]
    inner_b = b.shape[-1] if node.attrs["adj_x2"] else b.shape[-2]
    cols = b.shape[-2] if node.attrs["adj_x2"] else b.shape[-1]
    if None not in (inner_a, inner_b) and inner_a != inner_b:
        raise ConversionError(f"inner dims differ: {list(a.shape)} @ {list(b.shape)}")
    return [TensorDesc(dtype, broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (rows, cols))]


@batch_mat_mul.lower
def _lower_batch_mat_mul(ctx, node):
    dtype = node.outputs[0].desc.dtype
    operands = []
    for index, adjoint in ((0, node.attrs["adj_x1"]), (1, node.attrs["adj_x2"])):
        desc, name = node.inputs[index].desc, ctx.input(index)
        if desc.dtype != dtype:
            name = _cast(ctx, name, dtype)
        if adjoint:
            if desc.rank is None:
                raise ConversionError("adj_x/adj_y need operands of known rank")
            perm = list(range(desc.rank - 2)) + [desc.rank - 1, desc.rank - 2]
            name = ctx.emit("Transpose", [name], perm=perm)[0]
        operands.append(name)
    emit_via(ctx, "MatMul", operands, ctx.output(0), dtype, ARITHMETIC_VIA)


# -- einsum -----------------------------------------------------------------------------------
einsum = (OPS.declare("Einsum", "Einstein summation over x0..xN-1 as `equation` says "
                                 "(numpy notation, '...' for broadcast dims).")
          .dynamic_input("x", NUMBER_TYPES, count_attr="N").output("y")
          .attr("N", "int").attr("equation", "str"))
_EQUATION = re.compile(r"^[a-zA-Z.,]*(->[a-zA-Z.]*)?$")


def parse_equation(equation: str, count: int):
    """(input terms, output term) with '...' as '.'; the implicit output of numpy when
    there is no '->': the ellipsis, then the labels used once, alphabetically."""
    equation = equation.replace(" ", "")
    if not _EQUATION.match(equation):
        raise ConversionError(f"einsum equation {equation!r} is not understood")
    left, arrow, right = equation.partition("->")
    terms = [t.replace("...", ".") for t in left.split(",")]
    stray_dots = (left + right).replace("...", "").count(".")
    if len(terms) != count or stray_dots or any(t.count(".") > 1 for t in terms):
        raise ConversionError(f"einsum equation {equation!r} does not fit {count} inputs")
    if arrow:
        return terms, right.replace("...", ".")
    labels = "".join(terms).replace(".", "")
    once = sorted(c for c in set(labels) if labels.count(c) == 1)
    return terms, ("." if any("." in t for t in terms) else "") + "".join(once)


@einsum.infer
def _infer_einsum(node):
    descs = [v.desc for v in node.inputs]
    terms, output = parse_equation(node.attrs["equation"], len(descs))
    dtype = descs[0].dtype
    if any(d.dtype != dtype for d in descs):
        raise ConversionError(f"einsum operand dtypes differ: {[d.dtype for d in descs]}")
    sizes: Dict[str, list] = {}
    ellipses = []
    for term, desc in zip(terms, descs):
        if desc.shape is None:
            if "." in term or "." in output:
                return [TensorDesc(dtype, None)]
            for label in term:
                sizes.setdefault(label, []).append(None)
            continue
        labels = len(term.replace(".", ""))
        if len(desc.shape) < labels or ("." not in term and len(desc.shape) != labels):
            raise ConversionError(f"einsum term {term!r} does not fit shape {list(desc.shape)}")
        if "." in term:
            start = term.index(".")
            span = len(desc.shape) - labels
            ellipses.append(desc.shape[start:start + span])
            dims = desc.shape[:start] + desc.shape[start + span:]
            term = term.replace(".", "")
        else:
            dims = desc.shape
        for label, dim in zip(term, dims):
            sizes.setdefault(label, []).append(dim)

    def size(label):
        dims = sizes.get(label)
        if dims is None:
            raise ConversionError(f"einsum output label {label!r} is in no input")
        known = {d for d in dims if d is not None and d != 1}
        if len(known) > 1:
            raise ConversionError(f"einsum label {label!r} has sizes {sorted(known)}")
        return known.pop() if known else (None if None in dims else 1)

    shape = []
    for label in output:
        shape.extend(broadcast_shapes(*ellipses) if label == "." and ellipses else
                     () if label == "." else (size(label),))
    return [TensorDesc(dtype, tuple(shape))]


@einsum.lower
def _lower_einsum(ctx, node):
    dtype = node.inputs[0].desc.dtype
    terms, _ = parse_equation(node.attrs["equation"], len(node.inputs))
    inputs = [ctx.input(i) for i in range(len(node.inputs))]
    # onnxruntime wants '...' to stand for as many dims in every input: pad the shorter
    # ones with leading size-1 dims, as broadcasting would
    spans = {i: node.inputs[i].desc.rank - len(term) + 1 for i, term in enumerate(terms)
             if "." in term and node.inputs[i].desc.rank is not None}
    if spans and len(set(spans.values())) > 1:
        widest = max(spans.values())
        for i, span in spans.items():
            if span < widest:
                start = terms[i].index(".")
                axes = ctx.constant(np.arange(start, start + widest - span, dtype=np.int64))
                inputs[i] = ctx.emit("Unsqueeze", [inputs[i], axes])[0]
    emit_via(ctx, "Einsum", inputs, ctx.output(0), dtype, ARITHMETIC_VIA,
             equation=node.attrs["equation"].replace(" ", ""))


# -- diagonal matrices ------------------------------------------------------------------------
matrix_diag = (OPS.declare("MatrixDiag", "Square matrices [..., N, N] with `diagonal` [..., N] on "
                                          "the main diagonal and padding_value (default 0) elsewhere.")
               .input("diagonal").optional_input("padding_value").output("y"))


@matrix_diag.infer
def _infer_matrix_diag(node):
    d = node.inputs[0].desc
    if d.rank == 0:
        raise ConversionError("MatrixDiag needs a diagonal of rank >= 1")
    return [TensorDesc(d.dtype, None if d.shape is None else d.shape + d.shape[-1:])]


@matrix_diag.lower
def _lower_matrix_diag(ctx, node):
    dtype = node.inputs[0].desc.dtype
    last = ctx.constant(np.array([-1], np.int64))
    size = ctx.emit("Gather", [ctx.emit("Shape", [ctx.input(0)])[0], last])[0]      # [N]
    count = ctx.emit("Squeeze", [size])[0]
    positions = ctx.emit("Range", [ctx.constant(np.array(0, np.int64)), count,
                                   ctx.constant(np.array(1, np.int64))])[0]
    rows = ctx.emit("Unsqueeze", [positions, last])[0]                                  # [N, 1]
    on_diagonal = ctx.emit("Equal", [rows, positions])[0]                              # [N, N]
    column = ctx.emit("Unsqueeze", [ctx.input(0), last])[0]                            # [..., N, 1]
    # entry (i, j) of a row takes diagonal[..., i]: the diagonal as a column broadcasts
    padding = ctx.input(1) or ctx.constant(np.zeros((), numpy_dtype(dtype)))
    ctx.emit("Where", [on_diagonal, column, padding], [ctx.output(0)])
