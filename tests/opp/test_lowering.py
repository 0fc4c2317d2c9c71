"""Each op prototype's ONNX lowering, run by onnxruntime against TensorFlow eager ops.

Every case builds a one-op IR graph by hand, verifies it (which infers the output
descs), compiles it to ONNX, runs it, and checks the result against TensorFlow and the
inferred shape against the actual one.
"""

from __future__ import annotations

import os

import numpy as np
import onnx
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")
ort = pytest.importorskip("onnxruntime")

from tf2ir.ir import ConversionError, Graph, TensorDesc  # noqa: E402
from tf2ir.ir.onnx.compile import compile_to_model  # noqa: E402
from tf2ir.ir.tensor import dtype_of_numpy  # noqa: E402
from tf2ir.ir.infer import infer_graph  # noqa: E402

RNG = np.random.default_rng(1234)


def rand(*shape, dtype=np.float32, low=-2.0, high=2.0):
    if np.issubdtype(dtype, np.integer):
        return RNG.integers(int(low) - 3, int(high) + 4, size=shape).astype(dtype)
    return RNG.uniform(low, high, size=shape).astype(dtype)


class Feed:
    """A graph input fed at run time (plain arrays become Const nodes); `shape` may hold
    None dims or be None for an unknown rank; `fmt` is its format (its layout, for the ops
    that read one)."""

    def __init__(self, array, shape="actual", fmt="ND"):
        self.array = np.asarray(array)
        self.shape = tuple(self.array.shape) if shape == "actual" else shape
        self.fmt = fmt


def run_op(op_type, inputs, attrs=None, num_outputs=1):
    """Build, verify, compile and run a graph holding one `op_type` node.

    Returns (outputs, inferred output shapes). Each output's inferred dtype must equal the
    actual one, and every dim inference claims to know must equal the actual dim."""
    g = Graph("test")
    values, feeds = [], {}
    for i, item in enumerate(inputs):
        if item is None:
            values.append(None)
        elif isinstance(item, Feed):
            value = g.add_input(f"in{i}", TensorDesc(dtype_of_numpy(item.array.dtype), item.shape,
                                                     item.fmt, item.fmt))
            feeds[value.name] = item.array
            values.append(value)
        else:
            values.append(g.add_const(np.asarray(item), f"const{i}"))
    node = g.add_node(op_type, values, attrs or {}, name="op", num_outputs=num_outputs)
    g.outputs.extend(node.outputs)
    infer_graph(g)
    model = compile_to_model(g)
    onnx.checker.check_model(model, full_check=True)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    results = session.run(None, feeds)
    shapes = []
    for value, result in zip(node.outputs, results):
        assert value.desc.dtype == dtype_of_numpy(result.dtype), (value.desc, result.dtype)
        inferred = value.desc.shape
        if inferred is not None:
            assert len(inferred) == result.ndim and all(
                d is None or d == r for d, r in zip(inferred, result.shape)), \
                f"inferred {inferred}, ran {result.shape}"
        shapes.append(inferred)
    return results, shapes


def run_one(op_type, inputs, attrs=None):
    return run_op(op_type, inputs, attrs)[0][0]


def assert_matches(got, ref, rtol=1e-5, atol=1e-5):
    ref = np.asarray(ref)
    assert got.shape == ref.shape, f"shape {got.shape} != TF {ref.shape}"
    assert got.dtype == ref.dtype, f"dtype {got.dtype} != TF {ref.dtype}"
    if np.issubdtype(ref.dtype, np.floating):
        np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol)
    else:
        np.testing.assert_array_equal(got, ref)


def check(op_type, inputs, attrs, reference, rtol=1e-5, atol=1e-5):
    """Run the op, compare with `reference` (a TF result); return (output, inferred shape)."""
    (got, *_), (inferred, *_) = run_op(op_type, inputs, attrs)
    assert_matches(got, reference, rtol, atol)
    return got, inferred


def check_exact(op_type, inputs, attrs, reference, rtol=1e-5, atol=1e-5):
    """`check`, and the inferred shape must be exactly the actual one."""
    got, inferred = check(op_type, inputs, attrs, reference, rtol, atol)
    assert inferred == got.shape, f"inferred {inferred}, ran {got.shape}"
    return got


def to_nchw(x):
    return np.transpose(np.asarray(x), (0, 3, 1, 2))


def in_format(values_hw, fmt, fill=1):
    """A 4-element TF attribute for spatial (h, w) values laid out in `fmt`."""
    h, w = values_hw
    return [fill, h, w, fill] if fmt == "NHWC" else [fill, fill, h, w]


# -- convolution ----------------------------------------------------------------------------
CONV_CASES = [
    # fmt, padding, strides, dilations, explicit pads ((top, bottom), (left, right)), groups
    ("NHWC", "SAME", (1, 1), (1, 1), None, 1),
    ("NHWC", "SAME", (2, 2), (1, 1), None, 1),
    ("NHWC", "VALID", (2, 1), (1, 1), None, 1),
    ("NHWC", "EXPLICIT", (1, 2), (1, 1), ((1, 2), (0, 1)), 1),
    ("NHWC", "SAME", (1, 1), (2, 2), None, 1),
    ("NHWC", "VALID", (1, 1), (2, 1), None, 1),
    ("NHWC", "SAME", (1, 1), (1, 1), None, 2),
    ("NHWC", "VALID", (2, 2), (1, 1), None, 4),
    ("NCHW", "SAME", (2, 2), (1, 1), None, 1),
    ("NCHW", "VALID", (1, 2), (1, 1), None, 1),
    ("NCHW", "EXPLICIT", (2, 1), (1, 1), ((2, 0), (1, 1)), 1),
    ("NCHW", "SAME", (1, 1), (2, 2), None, 1),
    ("NCHW", "VALID", (1, 1), (1, 1), None, 2),
]


def conv_attrs(fmt, padding, strides, dilations, pads):
    attrs = {"strides": in_format(strides, fmt), "padding": padding,
             "dilations": in_format(dilations, fmt)}
    if pads is not None:
        flat = [0, 0, *pads[0], *pads[1], 0, 0] if fmt == "NHWC" else [0, 0, 0, 0, *pads[0], *pads[1]]
        attrs["explicit_paddings"] = flat
    return attrs


def tf_conv(x_nhwc, w, padding, strides, dilations, pads):
    tf_padding = padding if pads is None else [[0, 0], list(pads[0]), list(pads[1]), [0, 0]]
    return tf.nn.conv2d(x_nhwc, w, strides=[1, *strides, 1], padding=tf_padding,
                        dilations=[1, *dilations, 1]).numpy()


@pytest.mark.parametrize("fmt, padding, strides, dilations, pads, groups", CONV_CASES)
def test_conv2d(fmt, padding, strides, dilations, pads, groups):
    x_nhwc = rand(2, 9, 8, 4)
    w = rand(3, 3, 4 // groups, 8)
    ref = tf_conv(x_nhwc, w, padding, strides, dilations, pads)
    x = x_nhwc if fmt == "NHWC" else to_nchw(x_nhwc)
    ref = ref if fmt == "NHWC" else to_nchw(ref)
    attrs = conv_attrs(fmt, padding, strides, dilations, pads)
    check_exact("Conv2D", [Feed(x, fmt=fmt), w, None], attrs, ref, atol=1e-4)


@pytest.mark.parametrize("fmt", ["NHWC", "NCHW"])
def test_conv2d_with_bias_fed_filter_and_unknown_batch(fmt):
    x_nhwc, w, b = rand(3, 6, 6, 2), rand(2, 3, 2, 5), rand(5)
    ref = tf.nn.bias_add(tf_conv(x_nhwc, w, "SAME", (1, 1), (1, 1), None), b).numpy()
    x = x_nhwc if fmt == "NHWC" else to_nchw(x_nhwc)
    ref = ref if fmt == "NHWC" else to_nchw(ref)
    shape = (None,) + x.shape[1:]
    attrs = conv_attrs(fmt, "SAME", (1, 1), (1, 1), None)
    _, inferred = check("Conv2D", [Feed(x, shape, fmt), Feed(w, fmt="HWCN"), b], attrs, ref, atol=1e-4)
    assert inferred == (None,) + ref.shape[1:]


DEPTHWISE_CASES = [
    ("NHWC", "SAME", (1, 1), (1, 1), 1),
    ("NHWC", "VALID", (2, 2), (1, 1), 2),
    ("NHWC", "SAME", (1, 1), (2, 2), 3),
    ("NCHW", "SAME", (2, 2), (1, 1), 2),
    ("NCHW", "VALID", (1, 1), (1, 1), 1),
]


@pytest.mark.parametrize("fmt, padding, strides, dilations, multiplier", DEPTHWISE_CASES)
@pytest.mark.parametrize("fed_filter", [False, True], ids=["const-filter", "fed-filter"])
def test_depthwise_conv2d(fmt, padding, strides, dilations, multiplier, fed_filter):
    x_nhwc, w = rand(1, 7, 8, 3), rand(3, 3, 3, multiplier)
    ref = tf.nn.depthwise_conv2d(x_nhwc, w, strides=[1, *strides, 1], padding=padding,
                                 dilations=list(dilations)).numpy()
    x = x_nhwc if fmt == "NHWC" else to_nchw(x_nhwc)
    ref = ref if fmt == "NHWC" else to_nchw(ref)
    attrs = conv_attrs(fmt, padding, strides, dilations, None)
    check_exact("DepthwiseConv2D", [Feed(x, fmt=fmt), Feed(w) if fed_filter else w, None], attrs, ref,
                atol=1e-4)


# -- pooling ----------------------------------------------------------------------------------
@pytest.mark.parametrize("op_type, tf_pool", [("MaxPool", tf.nn.max_pool2d),
                                              ("AvgPool", tf.nn.avg_pool2d)])
@pytest.mark.parametrize("fmt", ["NHWC", "NCHW"])
@pytest.mark.parametrize("padding, ksize, strides", [
    ("SAME", (3, 3), (2, 2)), ("VALID", (3, 2), (2, 1)), ("SAME", (2, 2), (1, 1)),
    ("VALID", (2, 2), (2, 2)),
])
def test_pooling(op_type, tf_pool, fmt, padding, ksize, strides):
    x_nhwc = rand(2, 7, 6, 3)
    ref = tf_pool(x_nhwc, ksize=list(ksize), strides=list(strides), padding=padding).numpy()
    x = x_nhwc if fmt == "NHWC" else to_nchw(x_nhwc)
    ref = ref if fmt == "NHWC" else to_nchw(ref)
    attrs = {"ksize": in_format(ksize, fmt), "strides": in_format(strides, fmt), "padding": padding}
    check_exact(op_type, [Feed(x, fmt=fmt)], attrs, ref)


# -- bias, softmax, activations ---------------------------------------------------------------
@pytest.mark.parametrize("fmt, shape", [("NHWC", (2, 3, 4, 5)), ("NCHW", (2, 5, 3, 4)),
                                        ("NHWC", (3, 5)), ("NCHW", (3, 5))])
@pytest.mark.parametrize("fed_bias", [False, True], ids=["const-bias", "fed-bias"])
def test_bias_add(fmt, shape, fed_bias):
    x, b = rand(*shape), rand(5)
    ref = tf.nn.bias_add(x, b, data_format=fmt if len(shape) == 4 else None).numpy()
    layout = fmt if len(shape) == 4 else "ND"        # 2-D data has no layout: channels last
    check_exact("BiasAdd", [Feed(x, fmt=layout), Feed(b) if fed_bias else b], {}, ref)


@pytest.mark.parametrize("op_type, tf_fn", [("Softmax", tf.nn.softmax),
                                            ("LogSoftmax", tf.nn.log_softmax)])
@pytest.mark.parametrize("axis", [-1, 1, 0])
def test_softmax(op_type, tf_fn, axis):
    x = rand(3, 4, 5)
    check_exact(op_type, [Feed(x)], {"axis": axis}, tf_fn(x, axis=axis).numpy())


def test_softmax_default_axis_is_last():
    x = rand(2, 6)
    check_exact("Softmax", [Feed(x)], {}, tf.nn.softmax(x).numpy())


ACTIVATIONS = [
    ("Relu", {}, tf.nn.relu),
    ("Relu6", {}, tf.nn.relu6),
    ("Sigmoid", {}, tf.math.sigmoid),
    ("Tanh", {}, tf.math.tanh),
    ("Elu", {}, tf.nn.elu),
    ("Selu", {}, tf.nn.selu),
    ("Softplus", {}, tf.math.softplus),
    ("Softsign", {}, tf.nn.softsign),
    ("LeakyRelu", {}, tf.nn.leaky_relu),
    ("LeakyRelu", {"alpha": 0.01}, lambda x: tf.nn.leaky_relu(x, alpha=0.01)),
]


@pytest.mark.parametrize("op_type, attrs, tf_fn", ACTIVATIONS,
                         ids=[f"{a[0]}{'-' + str(a[1]) if a[1] else ''}" for a in ACTIVATIONS])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_activations(op_type, attrs, tf_fn, dtype):
    x = rand(3, 4, low=-8, high=8, dtype=dtype)
    check_exact(op_type, [Feed(x)], attrs, tf_fn(x).numpy(), rtol=1e-5, atol=1e-6)


# -- elementwise math --------------------------------------------------------------------------
BINARY = [
    ("Add", tf.math.add), ("Sub", tf.math.subtract), ("Mul", tf.math.multiply),
    ("RealDiv", tf.math.truediv), ("Maximum", tf.math.maximum), ("Minimum", tf.math.minimum),
    ("Pow", tf.math.pow), ("SquaredDifference", tf.math.squared_difference),
]


@pytest.mark.parametrize("op_type, tf_fn", BINARY, ids=[b[0] for b in BINARY])
@pytest.mark.parametrize("shapes", [((2, 3), (2, 3)), ((2, 1, 3), (4, 3)), ((), (3, 2))],
                         ids=["same", "broadcast", "scalar"])
def test_binary_float(op_type, tf_fn, shapes):
    low = 0.5 if op_type == "Pow" else -2.0
    a, b = rand(*shapes[0], low=low), rand(*shapes[1], low=low)
    check_exact(op_type, [Feed(a), Feed(b)], {}, tf_fn(a, b).numpy(), rtol=1e-5)


@pytest.mark.parametrize("op_type, tf_fn", [b for b in BINARY if b[0] not in ("RealDiv", "Pow")],
                         ids=[b[0] for b in BINARY if b[0] not in ("RealDiv", "Pow")])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_binary_int(op_type, tf_fn, dtype):
    a, b = rand(3, 4, dtype=dtype), rand(4, dtype=dtype)
    check_exact(op_type, [Feed(a), b], {}, tf_fn(a, b).numpy())


def test_binary_with_unknown_dims():
    a, b = rand(2, 5), rand(5)
    _, inferred = check("Add", [Feed(a, (None, 5)), Feed(b)], {}, tf.math.add(a, b).numpy())
    assert inferred == (None, 5)


UNARY = [
    ("Rsqrt", tf.math.rsqrt, True), ("Sqrt", tf.math.sqrt, True), ("Exp", tf.math.exp, False),
    ("Log", tf.math.log, True), ("Reciprocal", tf.math.reciprocal, True),
    ("Erf", tf.math.erf, False), ("Floor", tf.math.floor, False), ("Ceil", tf.math.ceil, False),
    ("Sin", tf.math.sin, False), ("Cos", tf.math.cos, False), ("Neg", tf.math.negative, False),
    ("Abs", tf.math.abs, False), ("Square", tf.math.square, False),
]


@pytest.mark.parametrize("op_type, tf_fn, positive", UNARY, ids=[u[0] for u in UNARY])
def test_unary_float(op_type, tf_fn, positive):
    x = rand(3, 5, low=0.1 if positive else -3.0, high=3.0)
    check_exact(op_type, [Feed(x)], {}, tf_fn(x).numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op_type, tf_fn", [("Neg", tf.math.negative), ("Abs", tf.math.abs),
                                            ("Square", tf.math.square)])
def test_unary_int(op_type, tf_fn):
    x = rand(4, 3, dtype=np.int32)
    check_exact(op_type, [Feed(x)], {}, tf_fn(x).numpy())


# -- MatMul ----------------------------------------------------------------------------------
@pytest.mark.parametrize("transpose_a", [False, True])
@pytest.mark.parametrize("transpose_b", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
@pytest.mark.parametrize("with_bias", [False, True], ids=["no-bias", "bias"])
def test_matmul(transpose_a, transpose_b, dtype, with_bias):
    a = rand(*((4, 3) if transpose_a else (3, 4)), dtype=dtype)
    b = rand(*((5, 4) if transpose_b else (4, 5)), dtype=dtype)
    ref = tf.linalg.matmul(a, b, transpose_a=transpose_a, transpose_b=transpose_b)
    bias = rand(5, dtype=dtype)
    if with_bias:
        ref = tf.nn.bias_add(ref, bias)
    attrs = {"transpose_x1": transpose_a, "transpose_x2": transpose_b}
    check_exact("MatMul", [Feed(a), b, bias if with_bias else None], attrs, ref.numpy(), atol=1e-5)


# -- reductions ------------------------------------------------------------------------------
REDUCTIONS = [
    ("ReduceMean", tf.math.reduce_mean), ("ReduceSum", tf.math.reduce_sum),
    ("ReduceMax", tf.math.reduce_max), ("ReduceMin", tf.math.reduce_min),
    ("ReduceProd", tf.math.reduce_prod),
]


@pytest.mark.parametrize("op_type, tf_fn", REDUCTIONS, ids=[r[0] for r in REDUCTIONS])
@pytest.mark.parametrize("keep_dims", [False, True])
@pytest.mark.parametrize("axes", [[1], [-1, 0], [0, 1, 2]], ids=["one", "negative", "all"])
def test_reductions(op_type, tf_fn, keep_dims, axes):
    x = rand(2, 3, 4, low=0.5, high=1.5)
    ref = tf_fn(x, axis=axes, keepdims=keep_dims).numpy()
    check_exact(op_type, [Feed(x), np.array(axes, np.int32)], {"keep_dims": keep_dims}, ref)


@pytest.mark.parametrize("op_type, tf_fn", REDUCTIONS, ids=[r[0] for r in REDUCTIONS])
def test_reductions_with_empty_axes_and_int64(op_type, tf_fn):
    x = rand(2, 3, dtype=np.int32)
    check_exact(op_type, [Feed(x), np.array([], np.int64)], {}, tf_fn(x, axis=[]).numpy())


def test_reduction_with_fed_axes():
    x = rand(2, 3, 4)
    axes = np.array([2], np.int32)
    _, inferred = check("ReduceSum", [Feed(x), Feed(axes)], {"keep_dims": True},
                        tf.math.reduce_sum(x, axis=axes, keepdims=True).numpy())
    assert inferred == (None,) * 3     # rank known, dims not


# -- shapes ----------------------------------------------------------------------------------
@pytest.mark.parametrize("shape, target", [
    ((2, 3, 4), [-1, 4]), ((2, 3, 4), [4, -1]), ((2, 3, 4), [24]), ((6,), [1, -1, 1, 2]),
    ((0, 3), [-1, 3]),
], ids=str)
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_reshape(shape, target, index_dtype):
    x = rand(*shape)
    target = np.array(target, index_dtype)
    check_exact("Reshape", [Feed(x), target], {}, tf.reshape(x, target).numpy())


def test_reshape_with_fed_shape():
    x, target = rand(2, 6), np.array([3, -1], np.int32)
    _, inferred = check("Reshape", [Feed(x), Feed(target)], {}, tf.reshape(x, target).numpy())
    assert inferred == (None, None)


@pytest.mark.parametrize("shape, axis", [((1, 3, 1, 2), []), ((1, 3, 1, 2), [-2]),
                                         ((1, 3, 1, 2), [0, 2]), ((1, 1), [])], ids=str)
def test_squeeze(shape, axis):
    x = rand(*shape)
    check_exact("Squeeze", [Feed(x)], {"axis": axis}, tf.squeeze(x, axis=axis or None).numpy())


@pytest.mark.parametrize("axis, dtype", [(0, np.int32), (1, np.int32), (-1, np.int64),
                                         (-3, np.int32)])
def test_expand_dims(axis, dtype):
    x = rand(2, 3)
    check_exact("ExpandDims", [Feed(x), np.array(axis, dtype)], {}, tf.expand_dims(x, axis).numpy())


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_shape(dtype):
    x = rand(2, 3, 4)
    check_exact("Shape", [Feed(x)], {"dtype": dtype}, tf.shape(x, out_type=dtype).numpy())


def test_shape_of_unknown_dims_is_known_rank():
    x = rand(2, 3, 4)
    got, inferred = check("Shape", [Feed(x, (None, 3, None))], {}, tf.shape(x).numpy())
    assert inferred == (3,) == got.shape


@pytest.mark.parametrize("perm", [[1, 0, 2], [2, 0, 1], [0, 1, 2]], ids=str)
def test_transpose(perm):
    x = rand(2, 3, 4)
    perm = np.array(perm, np.int32)
    check_exact("Transpose", [Feed(x), perm], {}, tf.transpose(x, perm).numpy())


def test_identity_and_cast():
    x = rand(3, 4, low=-3, high=3)
    check_exact("Identity", [Feed(x)], {}, tf.identity(x).numpy())
    check_exact("Cast", [Feed(x)], {"dst_type": "int32"}, tf.cast(x, tf.int32).numpy())
    check_exact("Cast", [Feed(x)], {"dst_type": "float64"}, tf.cast(x, tf.float64).numpy())


# -- padding --------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["CONSTANT", "REFLECT"])
@pytest.mark.parametrize("pads", [[[1, 2], [0, 1]], [[0, 0], [2, 2]]], ids=str)
@pytest.mark.parametrize("fed_pads", [False, True], ids=["const-pads", "fed-pads"])
def test_pad(mode, pads, fed_pads):
    x = rand(3, 4)
    paddings = np.array(pads, np.int32)
    ref = tf.pad(x, paddings, mode=mode).numpy()
    inputs = [Feed(x), Feed(paddings) if fed_pads else paddings, None]
    got, inferred = check("Pad", inputs, {"mode": mode}, ref)
    assert inferred == ((None, None) if fed_pads else got.shape)


def test_pad_with_constant_values():
    x = rand(2, 3)
    paddings = np.array([[1, 1], [2, 0]], np.int64)
    value = np.array(-7.5, np.float32)
    ref = tf.pad(x, paddings, constant_values=-7.5).numpy()
    check_exact("Pad", [Feed(x), paddings, value], {}, ref)


def test_mirror_pad_symmetric():
    x = rand(3, 4)
    paddings = np.array([[1, 2], [0, 3]], np.int32)
    check_exact("Pad", [Feed(x), paddings, None], {"mode": "SYMMETRIC"},
                tf.pad(x, paddings, mode="SYMMETRIC").numpy())


def test_mirror_pad_symmetric_with_run_time_paddings():
    x, paddings = rand(3, 4), np.array([[1, 2], [2, 1]], np.int32)
    check("Pad", [Feed(x), Feed(paddings), None], {"mode": "SYMMETRIC"},   # shape: run time
          tf.pad(x, paddings, mode="SYMMETRIC").numpy())


# -- packing --------------------------------------------------------------------------------
@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
@pytest.mark.parametrize("count", [1, 3])
def test_pack(axis, count):
    parts = [rand(2, 3) for _ in range(count)]
    check_exact("Pack", [Feed(p) for p in parts], {"axis": axis, "N": count},
                tf.stack(parts, axis=axis).numpy())


@pytest.mark.parametrize("axis, dtype", [(0, np.int32), (1, np.int32), (-1, np.int64),
                                         (-2, np.int32)])
def test_concat(axis, dtype):
    shapes = [(2, 3), (2, 3), (2, 3)]
    parts = [rand(*s) for s in shapes]
    ref = tf.concat(parts, axis=axis).numpy()
    check_exact("ConcatV2", [Feed(p) for p in parts] + [np.array(axis, dtype)], {"N": 3}, ref)


def test_concat_uneven_parts_with_a_const():
    a, b = rand(2, 1), rand(2, 4)
    ref = tf.concat([a, b, a], axis=1).numpy()
    check_exact("ConcatV2", [Feed(a), b, Feed(a), np.array(1, np.int32)], {"N": 3}, ref)


# -- strided slice ----------------------------------------------------------------------------
SLICES = [
    # begin, end, strides, masks: begin, end, ellipsis, new_axis, shrink
    ([1, 0, 2], [3, 5, 6], [1, 2, 2], {}),
    ([1, 3, 1], [0, 0, 5], [1, 1, 3], {"begin_mask": 0b000, "end_mask": 0b011}),
    ([2, 2, 4], [3, 4, 6], [1, 1, 1], {"begin_mask": 0b101}),
    ([0, 4, 0], [0, 0, 0], [-1, -2, 1], {"begin_mask": 0b101, "end_mask": 0b101}),
    ([3, 4, 5], [0, 1, 0], [-1, -1, -2], {}),
    ([3], [-5], [-1], {}),
    ([0], [0], [-2], {"begin_mask": 1, "end_mask": 1}),
    ([2], [0], [-1], {"end_mask": 1}),
    ([-3, -4], [-1, 10], [1, 1], {}),
    ([-10, 0, 0], [10, 5, 6], [1, 1, 1], {}),
    ([0, 1], [0, 3], [1, 1], {"ellipsis_mask": 0b01}),
    ([1, 0, 0], [2, 0, 0], [1, 1, -1], {"ellipsis_mask": 0b010, "begin_mask": 0b100,
                                        "end_mask": 0b100}),
    ([0, 0], [0, 0], [1, 1], {"ellipsis_mask": 0b01, "new_axis_mask": 0b10}),
    ([0, 0, 2], [0, 0, 4], [1, 1, 1], {"begin_mask": 1, "end_mask": 1, "new_axis_mask": 0b010}),
    ([2, 0, -1], [3, 0, 0], [1, 1, 1], {"begin_mask": 0b010, "end_mask": 0b010,
                                        "shrink_axis_mask": 0b101}),
    ([0, 1, 0, 0], [0, 2, 0, 0], [1, 1, 1, 1], {"new_axis_mask": 0b1001, "shrink_axis_mask": 0b0010,
                                                "ellipsis_mask": 0b0100}),
    ([2], [0], [1], {"begin_mask": 1, "shrink_axis_mask": 1}),
    ([-1], [0], [1], {"shrink_axis_mask": 1}),
    ([1, -1], [2, 0], [1, 1], {"shrink_axis_mask": 0b11}),
    ([0, 0, 0], [0, 0, 0], [1, 1, 1], {"begin_mask": 0b111, "end_mask": 0b111}),
    ([1, 0], [3, 0], [1, 1], {"new_axis_mask": 0b10, "end_mask": 0b10}),
    ([0, 2], [0, 3], [1, 1], {"new_axis_mask": 0b01, "shrink_axis_mask": 0b10}),
]


@pytest.mark.parametrize("begin, end, strides, masks", SLICES, ids=[str(i) for i in range(len(SLICES))])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_strided_slice(begin, end, strides, masks, index_dtype):
    x = rand(4, 5, 6)
    b, e, s = (np.array(v, index_dtype) for v in (begin, end, strides))
    ref = tf.strided_slice(x, b, e, s, **masks).numpy()
    check_exact("StridedSlice", [Feed(x), b, e, s], masks, ref)


def test_strided_slice_with_fed_begin_and_end():
    x = rand(4, 5, 6)
    begin, end, strides = (np.array([1, 0, 2], np.int32), np.array([3, 4, 6], np.int32),
                           np.array([1, 2, 1], np.int32))
    ref = tf.strided_slice(x, begin, end, strides).numpy()
    got, inferred = check("StridedSlice", [Feed(x), Feed(begin), Feed(end), strides], {}, ref)
    assert got.shape == (2, 2, 4) and inferred == (None, None, None)


def test_strided_slice_with_fed_begin_and_masks():
    x, begin = rand(4, 5), np.array([1, 0], np.int32)
    end, strides = np.array([3, 0], np.int32), np.array([1, 1], np.int32)
    check("StridedSlice", [Feed(x), Feed(begin), end, strides], {"end_mask": 2},
          tf.strided_slice(x, begin, end, strides, end_mask=2).numpy())


def test_transpose_by_a_fed_permutation():
    # ONNX Transpose takes a constant perm: a flat Gather at permuted coordinates instead
    x, perm = rand(2, 3, 4), np.array([2, 0, 1], np.int32)
    check("Transpose", [Feed(x), Feed(perm)], {}, np.transpose(x, perm))


@pytest.mark.parametrize("op_type, inputs", [
    ("ConcatV2", lambda: [Feed(rand(2, 3)), Feed(rand(2, 3)), Feed(np.array(0, np.int32))]),
])
def test_non_constant_operands_that_must_be_constant(op_type, inputs):
    with pytest.raises(ConversionError) as info:
        run_one(op_type, inputs(), {"N": 2} if op_type == "ConcatV2" else {})
    assert "node 'op'" in str(info.value) and f"op {op_type}" in str(info.value)


# -- multi-output ops ----------------------------------------------------------------------
def check_outputs(op_type, inputs, attrs, references, num_outputs):
    results, shapes = run_op(op_type, inputs, attrs, num_outputs=num_outputs)
    assert len(results) == len(references)
    for got, inferred, ref in zip(results, shapes, references):
        assert_matches(got, ref.numpy())
        assert inferred == got.shape


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_unpack(axis):
    x = rand(3, 2, 3)
    refs = tf.unstack(x, axis=axis)
    check_outputs("Unpack", [Feed(x)], {"num": len(refs), "axis": axis}, refs, len(refs))


@pytest.mark.parametrize("axis, parts", [(0, 2), (1, 3), (-1, 1)])
def test_split(axis, parts):
    x = rand(4, 6, 3)
    refs = tf.split(x, parts, axis=axis)
    check_outputs("Split", [np.array(axis, np.int32), Feed(x)], {"num_split": parts}, refs, parts)


@pytest.mark.parametrize("sizes, axis", [([1, 2, 3], 1), ([2, -1], 0), ([-1, 1, 1], -1)], ids=str)
def test_split_v(sizes, axis):
    x = rand(4, 6, 3)
    refs = tf.split(x, sizes, axis=axis)
    check_outputs("SplitV", [Feed(x), np.array(sizes, np.int64), np.array(axis, np.int32)],
                  {"num_split": len(sizes)}, refs, len(sizes))


def test_identity_n():
    a, b = rand(2, 3), rand(4, dtype=np.int32)
    refs = tf.identity_n([a, b])
    check_outputs("IdentityN", [Feed(a), Feed(b)], {"N": 2}, refs, 2)
