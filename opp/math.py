"""Math ops: elementwise unary and binary arithmetic, matrix products, reductions."""

from __future__ import annotations

import numpy as np

from tf2ir.ir import ConversionError, TensorDesc, OpSet
from tf2ir.ir.tensor import FLOAT_TYPES, INDEX_TYPES, NUMBER_TYPES, numpy_dtype
from tf2ir.opp.common import broadcast_shapes, const_ints, int64_input, normalize_axis, same_as_input

OPS = OpSet("tf2ir.opp.math")

# onnxruntime's CPU kernels lack some dtypes; an op that meets one computes in a wider dtype
# (exact for integers: results wrap the same way after the cast back) and casts back.
SMALL_INTS_VIA_INT32 = {"int8": "int32", "int16": "int32", "uint8": "int32", "uint16": "int32"}
ARITHMETIC_VIA = {**SMALL_INTS_VIA_INT32, "uint32": "int64"}
MINMAX_VIA = {"int16": "int32", "uint16": "int32"}
# no float64 Erf kernel: float32 is the nearest there is (about 1e-7 absolute error)
ERF_VIA = {"float64": "float32"}


def emit_via(ctx, onnx_op, inputs, output, dtype, via, cast_count=None, **attrs):
    """Emit `onnx_op` writing `output`; when `dtype` is a key of `via`, the inputs (the first
    `cast_count` of them, when given) are cast to via[dtype] first and the result cast back."""
    from tf2ir.ir.onnx.writer import ONNX_DTYPES
    wide = via.get(dtype)
    if wide is None:
        return ctx.emit(onnx_op, inputs, [output], **attrs)[0]
    count = len(inputs) if cast_count is None else cast_count
    cast_inputs = [ctx.emit("Cast", [name], to=ONNX_DTYPES[wide])[0] if name and i < count else name
                   for i, name in enumerate(inputs)]
    result = ctx.emit(onnx_op, cast_inputs, **attrs)[0]
    return ctx.emit("Cast", [result], [output], to=ONNX_DTYPES[dtype])[0]


def axes_input(ctx, index):
    """The node's input `index` (TF reduction axes: a scalar or a vector) as the 1-D int64
    tensor ONNX reductions require."""
    value = ctx.const_input(index)
    if value is not None:
        return ctx.constant(np.asarray(value, dtype=np.int64).reshape(-1), "axes")
    axes = int64_input(ctx, index)
    if ctx.input_desc(index).rank == 1:
        return axes
    return ctx.emit("Reshape", [axes, ctx.constant(np.array([-1], np.int64))])[0]


def _infer_binary(node):
    a, b = node.inputs[0].desc, node.inputs[1].desc
    if a.dtype != b.dtype:
        raise ConversionError(f"operand dtypes differ: {a.dtype} and {b.dtype}")
    fmt = a.format if a.rank == broadcast_rank(a, b) else b.format
    return [TensorDesc(a.dtype, broadcast_shapes(a.shape, b.shape), fmt, fmt)]


def broadcast_rank(a, b):
    return None if a.rank is None or b.rank is None else max(a.rank, b.rank)


def _binary(op_type, onnx_op, doc, dtypes=NUMBER_TYPES, via=None, numpy_fn=None):
    proto = OPS.declare(op_type, doc).input("x1", dtypes).input("x2", dtypes).output("y")
    proto.infer(_infer_binary)
    if numpy_fn is not None:   # shape arithmetic (dims times dims, ...) folds to constants
        proto.fold(lambda node, values: [np.asarray(numpy_fn(values[0], values[1]), values[0].dtype)])
    proto.lower(lambda ctx, node: emit_via(ctx, onnx_op, [ctx.input(0), ctx.input(1)], ctx.output(0),
                                           node.inputs[0].desc.dtype, via or {}))
    return proto


_binary("Add", "Add", "x1 + x2 (numpy broadcasting)", numpy_fn=np.add)
_binary("Sub", "Sub", "x1 - x2", numpy_fn=np.subtract)
_binary("Mul", "Mul", "x1 * x2", numpy_fn=np.multiply)
_binary("RealDiv", "Div", "x1 / x2 for floating point", FLOAT_TYPES)
_binary("Maximum", "Max", "elementwise maximum", via=MINMAX_VIA, numpy_fn=np.maximum)
_binary("Minimum", "Min", "elementwise minimum", via=MINMAX_VIA, numpy_fn=np.minimum)
_binary("Pow", "Pow", "x1 ** x2", via=ARITHMETIC_VIA)

squared_difference = _binary("SquaredDifference", "Sub", "(x1 - x2) ** 2")


@squared_difference.lower
def _lower_squared_difference(ctx, node):
    diff = ctx.emit("Sub", [ctx.input(0), ctx.input(1)])[0]
    ctx.emit("Mul", [diff, diff], [ctx.output(0)])


def _unary(op_type, doc, emit, dtypes=FLOAT_TYPES):
    proto = OPS.declare(op_type, doc).input("x", dtypes).output("y")
    proto.infer(same_as_input)
    proto.lower(emit)
    return proto


def _direct(onnx_op):
    return lambda ctx, node: ctx.emit(onnx_op, [ctx.input(0)], [ctx.output(0)])


def _lower_rsqrt(ctx, node):
    root = ctx.emit("Sqrt", [ctx.input(0)])[0]
    ctx.emit("Reciprocal", [root], [ctx.output(0)])


_unary("Rsqrt", "1 / sqrt(x)", _lower_rsqrt)
_unary("Sqrt", "square root", _direct("Sqrt"))
_unary("Exp", "e ** x", _direct("Exp"))
_unary("Log", "natural logarithm", _direct("Log"))
_unary("Reciprocal", "1 / x", _direct("Reciprocal"))


def _lower_erf(ctx, node):
    emit_via(ctx, "Erf", [ctx.input(0)], ctx.output(0), node.inputs[0].desc.dtype, ERF_VIA)


_unary("Erf", "error function", _lower_erf)


def _lower_erfc(ctx, node):
    dtype = node.inputs[0].desc.dtype
    one = ctx.constant(np.array(1, numpy_dtype(dtype)))
    erf = emit_via(ctx, "Erf", [ctx.input(0)], ctx.fresh("erf"), dtype, ERF_VIA)
    ctx.emit("Sub", [one, erf], [ctx.output(0)])


_unary("Erfc", "1 - erf(x) (complementary error function)", _lower_erfc)
_unary("Floor", "round down", _direct("Floor"))
_unary("Ceil", "round up", _direct("Ceil"))
_unary("Sin", "sine", _direct("Sin"))
_unary("Cos", "cosine", _direct("Cos"))
_unary("Neg", "-x", _direct("Neg"), NUMBER_TYPES).fold(lambda node, values: [np.negative(values[0])])
_unary("Abs", "|x|", _direct("Abs"), NUMBER_TYPES)
_unary("Square", "x * x", lambda ctx, node: ctx.emit("Mul", [ctx.input(0), ctx.input(0)],
                                                     [ctx.output(0)]), NUMBER_TYPES)

matmul = (OPS.declare("MatMul", "2-D matrix product with optional transposes.")
          .input("x1", NUMBER_TYPES).input("x2", NUMBER_TYPES).optional_input("bias")
          .output("y").attr("transpose_x1", "bool", False).attr("transpose_x2", "bool", False))


@matmul.infer
def _infer_matmul(node):
    a, b = node.inputs[0].desc, node.inputs[1].desc
    if a.rank not in (None, 2) or b.rank not in (None, 2):
        raise ConversionError("MatMul takes rank-2 operands")
    rows = None if a.shape is None else a.shape[1 if node.attrs["transpose_x1"] else 0]
    cols = None if b.shape is None else b.shape[0 if node.attrs["transpose_x2"] else 1]
    return [TensorDesc(a.dtype, (rows, cols))]


@matmul.lower
def _lower_matmul(ctx, node):
    inputs = [ctx.input(0), ctx.input(1)] + ([ctx.input(2)] if ctx.input(2) else [])
    if node.inputs[0].desc.dtype in ("float32", "float64", "float16", "bfloat16"):
        ctx.emit("Gemm", inputs, [ctx.output(0)], transA=int(node.attrs["transpose_x1"]),
                 transB=int(node.attrs["transpose_x2"]))
        return
    a, b = inputs[:2]
    if node.attrs["transpose_x1"]:
        a = ctx.emit("Transpose", [a], perm=[1, 0])[0]
    if node.attrs["transpose_x2"]:
        b = ctx.emit("Transpose", [b], perm=[1, 0])[0]
    dtype = node.inputs[0].desc.dtype
    if len(inputs) == 3:
        product = emit_via(ctx, "MatMul", [a, b], ctx.fresh("product"), dtype, ARITHMETIC_VIA)
        ctx.emit("Add", [product, inputs[2]], [ctx.output(0)])
    else:
        emit_via(ctx, "MatMul", [a, b], ctx.output(0), dtype, ARITHMETIC_VIA)


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


_reduction("ReduceMean", "ReduceMean", "mean over `axes`", via=ARITHMETIC_VIA)
_reduction("ReduceSum", "ReduceSum", "sum over `axes`", via=ARITHMETIC_VIA)
_reduction("ReduceMax", "ReduceMax", "maximum over `axes`", via=MINMAX_VIA)
_reduction("ReduceMin", "ReduceMin", "minimum over `axes`", via=MINMAX_VIA)
_reduction("ReduceProd", "ReduceProd", "product over `axes`", via=ARITHMETIC_VIA)

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
        values = ctx.emit("Unsqueeze", [ctx.input(i), axis])[0]          # [batch, 1]
        above = ctx.emit("GreaterOrEqual", [values, ctx.input(n + i)])[0]  # [batch, k]
        counts = ctx.emit("Cast", [above], to=6)[0]                       # int32
        ctx.emit("ReduceSum", [counts, axis], [ctx.output(i)], keepdims=0)

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
    from tf2ir.opp.common import cast_from_int64
    k = ctx.emit("Reshape", [int64_input(ctx, 1), ctx.constant(np.array([1], np.int64))])[0]
    indices = ctx.fresh("indices")
    ctx.emit("TopK", [ctx.input(0), k], [ctx.output(0), indices], axis=node.attrs["dim"],
             largest=int(node.attrs["largest"]), sorted=int(node.attrs["sorted"]))
    cast_from_int64(ctx, indices, node.attrs["index_type"], ctx.output(1))
