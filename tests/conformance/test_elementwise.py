"""Conformance of the elementwise family (opp/elementwise.py) against TensorFlow: unary math,
division and remainders, comparisons, logical and bitwise ops, selection, clipping, fills."""

import numpy as np
import pytest

from tests.conformance.harness import check_op, rand

tf = pytest.importorskip("tensorflow")
R = tf.raw_ops

TESTED_DTYPES = {
    "Tan": ("float32", "float64", "float16", "bfloat16"),
    "Asin": ("float32", "float64", "float16"),
    "Acos": ("float32", "float64", "float16"),
    "Atan": ("float32", "float64", "float16"),
    "Sinh": ("float32", "float64", "float16"),
    "Cosh": ("float32", "float64", "float16"),
    "Asinh": ("float32", "float64", "float16"),
    "Acosh": ("float32", "float64", "float16"),
    "Atanh": ("float32", "float64", "float16"),
    "Log1p": ("float32", "float64", "float16"),
    "Expm1": ("float32", "float64", "float16"),
    "Sign": ("float32", "float64", "float16", "int32", "int64", "int8"),
    "Round": ("float32", "float64", "float16"),
    "Rint": ("float32", "float64"),
    "IsNan": ("float32", "float64", "float16"),
    "IsInf": ("float32", "float64", "float16"),
    "IsFinite": ("float32", "float64", "float16"),
    "Div": ("float32", "float64", "int32", "int64", "uint8"),
    "FloorDiv": ("float32", "float64", "int32", "int64", "int8", "float16"),
    "FloorMod": ("float32", "float64", "int32", "int64", "int16", "float16"),
    "Mod": ("float32", "float64", "int32", "int64"),
    "TruncateDiv": ("float32", "float64", "int32", "int64"),
    "TruncateMod": ("float32", "float64", "int32", "int64"),
    "DivNoNan": ("float32", "float64"),
    "MulNoNan": ("float32", "float64"),
    "Xlogy": ("float32", "float64"),
    "Xdivy": ("float32", "float64"),
    "Atan2": ("float32", "float64", "float16"),
    "Equal": ("float32", "int32", "bool", "int16"),
    "NotEqual": ("float32", "int32", "bool"),
    "Less": ("float32", "int32", "int64"),
    "LessEqual": ("float32", "int32", "float64"),
    "Greater": ("float32", "int32", "uint8"),
    "GreaterEqual": ("float32", "int32", "float16"),
    "ApproximateEqual": ("float32", "float64"),
    "LogicalAnd": ("bool",),
    "LogicalOr": ("bool",),
    "LogicalNot": ("bool",),
    "Select": ("float32", "int32", "bool", "int16", "uint64"),
    "SelectV2": ("float32", "bool", "int16", "int64", "uint8", "float16"),
    "ClipByValue": ("float32", "int32", "int16", "float16", "uint8"),
    "BitwiseAnd": ("int32", "uint8"),
    "BitwiseOr": ("int64", "int16"),
    "BitwiseXor": ("int8", "uint32"),
    "Invert": ("int8", "int32", "uint16", "uint64"),
    "LeftShift": ("int8", "int32", "int64", "uint8", "uint16"),
    "RightShift": ("int8", "int32", "int64", "uint8", "uint16"),
    "ZerosLike": ("float32", "int32", "bool", "float16"),
    "OnesLike": ("float32", "int64", "bool", "bfloat16"),
}

INF, NAN = np.inf, np.nan
SPECIALS = [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 1e-4, -1e-4, INF, -INF, NAN]


def spec(shape, dtype, i):
    return tf.TensorSpec(shape, dtype, name=f"x{i}")


def with_specials(dtype, low, high, n=13):
    return np.concatenate([rand(n, dtype=dtype, low=low, high=high),
                           np.array(SPECIALS, dtype)])


def nonzero_ints(*shape, dtype, high=6):
    values = rand(*shape, dtype="int64", low=1, high=high - 3)   # 1-3 .. high
    values[values == 0] = 1
    return values.astype(dtype)


# -- unary float math ---------------------------------------------------------------------
UNARY_FLOAT = {
    "Tan": (tf.math.tan, -1.5, 1.5), "Asin": (tf.math.asin, -1, 1),
    "Acos": (tf.math.acos, -1, 1), "Atan": (tf.math.atan, -20, 20),
    "Sinh": (tf.math.sinh, -5, 5), "Cosh": (tf.math.cosh, -5, 5),
    "Asinh": (tf.math.asinh, -50, 50), "Acosh": (tf.math.acosh, 1, 50),
    "Atanh": (tf.math.atanh, -1, 1), "Log1p": (tf.math.log1p, -0.99, 5),
    "Expm1": (tf.math.expm1, -5, 5),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", sorted(UNARY_FLOAT))
def test_unary_float(op, dtype):
    fn, low, high = UNARY_FLOAT[op]
    check_op(fn, [with_specials(dtype, low, high)])


def test_unary_float16():
    """All of them in one graph, each on its own domain."""
    ops = sorted(UNARY_FLOAT)
    check_op(lambda *xs: [UNARY_FLOAT[op][0](x) for op, x in zip(ops, xs)],
             [with_specials("float16", *UNARY_FLOAT[op][1:]) for op in ops])


# float64 lowerings are composed from double kernels: they must keep double precision at
# the hard ends (tiny arguments, near the poles, huge arguments), relative error 1e-12.
PRECISION_F64 = {
    "Tan": [1e-13, 1.57, -1.2, 40.0],   # nearer the poles ORT's double Cos limits it
    "Atan": [1e-300, -1e300, 0.99999999999, 1.00000000001, 3.0, -0.3],
    "Asin": [1e-13, 0.9999999999, -0.9999999999, -1.0, 0.5],
    "Acos": [0.9999999999, -0.9999999999, 1e-13, 1.0, -0.5],
    "Sinh": [1e-12, -3e-9, 700.0, -709.0, 0.5],
    "Cosh": [700.0, -710.0, 1e-8, 2.0],
    "Asinh": [1e-12, -1e200, 1e300, 3.0, -0.1],
    "Acosh": [1.0 + 1e-12, 1e200, 1.5, 1e9],
    "Atanh": [1e-12, 0.999999999, -0.5, -1e-9],
    "Log1p": [1e-15, -1e-15, 1e300, -0.999999, 3.0],
    "Expm1": [1e-15, -1e-15, 700.0, -800.0, 1e-5],
}


@pytest.mark.parametrize("op", sorted(PRECISION_F64))
def test_unary_float64_precision(op):
    check_op(UNARY_FLOAT[op][0], [np.array(PRECISION_F64[op], np.float64)], atol=0.0, rtol=1e-12)


@pytest.mark.parametrize("fn", [tf.math.log1p, tf.math.expm1], ids=["Log1p", "Expm1"])
def test_log1p_expm1_float32_precision_near_zero(fn):
    check_op(fn, [np.float32([1e-10, -3e-9, 1e-7, 2e-6, -1e-12])], atol=0.0, rtol=1e-6)


def test_atan_symbolic_and_bfloat16_tan():
    check_op(tf.math.atan, [rand(2, 3)], specs=[spec((None, 3), tf.float32, 0)],
             extra_inputs=[[rand(5, 3, low=-30, high=30)]])
    # onnxruntime cannot hand bfloat16 outputs to numpy: cast the result back to float32
    check_op(lambda x: tf.cast(tf.math.tan(tf.cast(x, tf.bfloat16)), tf.float32),
             [rand(6, low=-1, high=1)])


# -- sign, rounding, float classes ---------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32", "int64", "int8"])
def test_sign(dtype):
    x = (with_specials(dtype, -3, 3) if dtype.startswith("float")
         else np.append(rand(12, dtype=dtype), 0))
    check_op(tf.math.sign, [x])


HALVES = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, 2.4999, -3.5000002, 100.5, NAN, INF]


def halves(dtype):
    return np.concatenate([np.array(HALVES, dtype), rand(8, dtype=dtype, low=-9, high=9)])


# Integer Round is lowered as identity (what tf.math.round does for integers without emitting
# the op); TF 2.21's own Round kernel returns zeros for int32/int64, so it is not compared.
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_round_half_to_even(dtype):
    check_op(tf.math.round, [halves(dtype)])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_rint(dtype):
    check_op(tf.math.rint, [halves(dtype)])


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_float_classes(dtype):
    check_op(lambda x: [tf.math.is_nan(x), tf.math.is_inf(x), tf.math.is_finite(x)],
             [with_specials(dtype, -3, 3).reshape(4, 6)])


# -- division and remainders ----------------------------------------------------------------
DIVISIONS = {"Div": lambda x, y: R.Div(x=x, y=y), "FloorDiv": tf.math.floordiv,
             "FloorMod": tf.math.floormod, "Mod": lambda x, y: R.Mod(x=x, y=y),
             "TruncateDiv": tf.truncatediv, "TruncateMod": tf.truncatemod}
DIVISION_CASES = [(op, dtype) for op in DIVISIONS
                  for dtype in ("int32", "int64", "float32", "float64")] + [
    ("Div", "uint8"), ("FloorDiv", "int8"), ("FloorDiv", "float16"), ("FloorMod", "int16"),
    ("FloorMod", "float16")]


@pytest.mark.parametrize("op,dtype", DIVISION_CASES)
def test_division(op, dtype):
    """x [3, 4] by a broadcast y [4] of both signs (never 0 for integers)."""
    if dtype.startswith("float"):
        x = rand(3, 4, dtype=dtype, low=-10, high=10)
        y = rand(4, dtype=dtype, low=0.5, high=3) * np.array([1, -1, 1, -1], dtype)
    elif dtype.startswith("u"):
        x, y = rand(3, 4, dtype="int64", low=3, high=60).astype(dtype), nonzero_ints(4, dtype=dtype) + 3
    else:
        x = rand(3, 4, dtype=dtype, low=-20, high=20)
        y = nonzero_ints(4, dtype=dtype) * np.array([1, -1, 1, -1], dtype)
    check_op(DIVISIONS[op], [x, y])


@pytest.mark.parametrize("op", ["FloorDiv", "FloorMod", "TruncateDiv", "TruncateMod"])
def test_division_float_specials_symbolic(op):
    x = np.float32([-3, 3, -7.5, 0, -0.0, 7, 1, -1, INF, 5])
    y = np.float32([INF, INF, 2.5, -2, 3, 0, 0, 0, 2, NAN])
    check_op(DIVISIONS[op], [x, y], specs=[spec([None], tf.float32, 0), spec([None], tf.float32, 1)],
             extra_inputs=[[rand(3, low=-5, high=5), rand(3, low=1, high=3)]])


@pytest.mark.parametrize("op", ["FloorDiv", "FloorMod"])
def test_integer_floor_ops_symbolic(op):
    specs = [spec([None, 4], tf.int32, 0), spec([4], tf.int32, 1)]
    y = np.int32([3, -3, 7, -1])
    check_op(DIVISIONS[op], [rand(2, 4, dtype="int32", low=-20, high=20), y], specs=specs,
             extra_inputs=[[np.int32([[-7, 7, -7, 0], [6, -6, -2147483647, 5]] * 3), y]])


NO_NAN = {"DivNoNan": tf.math.divide_no_nan, "MulNoNan": tf.math.multiply_no_nan,
          "Xlogy": tf.math.xlogy, "Xdivy": tf.math.xdivy}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", sorted(NO_NAN))
def test_no_nan_ops(op, dtype):
    x = np.array([[1, 0, INF, NAN, 2, -3, 0, 5], [0, 0, 1, -1, 2, 3, NAN, INF]], dtype)
    y = np.array([0, 0, 0, 0, 2, NAN, NAN, 0.5], dtype)
    check_op(NO_NAN[op], [x, y])


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_atan2(dtype):
    y = np.array([0, -0.0, 0, -0.0, 1, -1, INF, -INF, INF, NAN, 0, 3, -3, 2, -0.0], dtype)
    x = np.array([0, 0, -0.0, -0.0, 0, -0.0, INF, -INF, -INF, 1, NAN, -2, -2, -INF, 5], dtype)
    y = np.concatenate([y, rand(20, dtype=dtype, low=-5, high=5)])
    x = np.concatenate([x, rand(20, dtype=dtype, low=-5, high=5)])
    check_op(tf.math.atan2, [y, x])


def test_atan2_signed_zeros_exact():
    """atan2(+-0, -0) is +-pi and atan2(-0, +0) is -0: checked by sign, not only value."""
    y, x = np.float32([0, -0.0, -0.0, 0]), np.float32([-0.0, -0.0, 0, 0])
    got = check_op(tf.math.atan2, [y, x])[0]
    assert list(np.signbit(got)) == [False, True, True, False]


# -- comparisons and logical ops ------------------------------------------------------------
COMPARISONS = {"Equal": tf.math.equal, "NotEqual": tf.math.not_equal, "Less": tf.math.less,
               "LessEqual": tf.math.less_equal, "Greater": tf.math.greater,
               "GreaterEqual": tf.math.greater_equal}
COMPARISON_CASES = [(op, dtype) for op in COMPARISONS for dtype in ("float32", "int32")] + [
    ("Equal", "bool"), ("NotEqual", "bool"), ("Equal", "int16"), ("Less", "int64"),
    ("LessEqual", "float64"), ("Greater", "uint8"), ("GreaterEqual", "float16")]


@pytest.mark.parametrize("op,dtype", COMPARISON_CASES)
def test_comparison(op, dtype):
    """Few distinct values, so that ties occur; y broadcasts over x's rows."""
    if dtype == "bool" or dtype.startswith("u"):
        x, y = rand(3, 4, dtype=dtype, low=3, high=3), rand(4, dtype=dtype, low=3, high=3)
    else:
        x, y = rand(3, 4, dtype=dtype, low=-1, high=1), rand(4, dtype=dtype, low=-1, high=1)
        if dtype.startswith("float"):
            x, y = np.round(x * 2).astype(dtype) / 2, np.round(y * 2).astype(dtype) / 2
    check_op(COMPARISONS[op], [x, y])


def test_comparison_symbolic_and_nan():
    x = np.float32([[NAN, 1, INF], [0, -0.0, NAN]])
    y = np.float32([NAN, 1, INF])
    specs = [spec([None, 3], tf.float32, 0), spec([3], tf.float32, 1)]
    check_op(lambda a, b: [tf.math.equal(a, b), tf.math.not_equal(a, b), tf.math.less_equal(a, b)],
             [x, y], specs=specs, extra_inputs=[[rand(4, 3), y]])


@pytest.mark.parametrize("flag", [False, True])
def test_equal_incompatible_shapes(flag):
    """incompatible_shape_error=False: shapes that do not broadcast give a scalar."""
    fn = lambda a, b: [R.Equal(x=a, y=b, incompatible_shape_error=False),  # noqa: E731
                       R.NotEqual(x=a, y=b, incompatible_shape_error=False)]
    b = np.int32([1, 2, 3]) if flag else np.int32([1, 2])
    check_op(fn, [np.int32([1, 2]), b])


@pytest.mark.parametrize("dtype,tolerance", [("float32", 1e-5), ("float32", 0.3), ("float64", 1e-5)])
def test_approximate_equal(dtype, tolerance):
    x = rand(3, 4, dtype=dtype)
    y = x + np.array([0, 1e-6, 0.2, 0.5], dtype)
    check_op(lambda a, b: R.ApproximateEqual(x=a, y=b, tolerance=tolerance), [x, y])


def test_logical_ops():
    a, b = rand(2, 3, dtype="bool"), rand(3, dtype="bool")
    check_op(lambda p, q: [tf.math.logical_and(p, q), tf.math.logical_or(p, q), tf.math.logical_not(p)],
             [a, b], specs=[spec([None, 3], tf.bool, 0), spec([3], tf.bool, 1)],
             extra_inputs=[[rand(4, 3, dtype="bool"), b]])


# -- selection and clipping -----------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "int32", "bool", "int16", "uint64"])
def test_select_v1_row_vector_condition(dtype):
    cond = rand(4, dtype="bool")
    check_op(lambda c, x, y: R.Select(condition=c, x=x, y=y),
             [cond, rand(4, 2, 3, dtype=dtype), rand(4, 2, 3, dtype=dtype)])


@pytest.mark.parametrize("cond_shape", [(), (4, 3)], ids=["scalar", "same_shape"])
def test_select_v1_scalar_and_elementwise(cond_shape):
    check_op(lambda c, x, y: R.Select(condition=c, x=x, y=y),
             [rand(*cond_shape, dtype="bool"), rand(4, 3), rand(4, 3)])


def test_select_v1_symbolic_rows():
    specs = [spec([None], tf.bool, 0), spec([None, 3], tf.float32, 1), spec([None, 3], tf.float32, 2)]
    check_op(lambda c, x, y: R.Select(condition=c, x=x, y=y),
             [rand(2, dtype="bool"), rand(2, 3), rand(2, 3)], specs=specs,
             extra_inputs=[[rand(5, dtype="bool"), rand(5, 3), rand(5, 3)]])


@pytest.mark.parametrize("dtype", ["float32", "bool", "int16", "int64", "uint8", "float16"])
def test_select_v2_broadcasts_all(dtype):
    """condition [2, 1, 3], x [4, 3], y a scalar: output [2, 4, 3]."""
    check_op(tf.where, [rand(2, 1, 3, dtype="bool"), rand(4, 3, dtype=dtype), rand(dtype=dtype)])


def test_select_v2_symbolic():
    specs = [spec([None, 1], tf.bool, 0), spec([None, 3], tf.float32, 1), spec([3], tf.float32, 2)]
    check_op(tf.where, [rand(2, 1, dtype="bool"), rand(2, 3), rand(3)], specs=specs,
             extra_inputs=[[rand(6, 1, dtype="bool"), rand(6, 3), rand(3)]])


@pytest.mark.parametrize("dtype", ["float32", "int32", "int16", "float16", "uint8"])
def test_clip_by_value_scalar_bounds(dtype):
    low, high = (3, 9) if dtype == "uint8" else (-1, 1)
    x = rand(3, 4, dtype=dtype, low=low - 3, high=high + 3)
    check_op(lambda t: R.ClipByValue(t=t, clip_value_min=tf.constant(low, dtype),
                                     clip_value_max=tf.constant(high, dtype)), [x])


def test_clip_by_value_tensor_bounds():
    """Bounds of t's shape, some with low > high (TF gives low there), symbolic batch."""
    x, low, high = rand(3, 4), rand(3, 4, low=-1, high=0.5), rand(3, 4, low=0, high=1)
    specs = [spec([None, 4], tf.float32, i) for i in range(3)]
    check_op(lambda t, a, b: R.ClipByValue(t=t, clip_value_min=a, clip_value_max=b),
             [x, low, high], specs=specs, extra_inputs=[[rand(5, 4), rand(5, 4), rand(5, 4)]])


# -- bitwise --------------------------------------------------------------------------------
def full_range(*shape, dtype):
    info = np.iinfo(dtype)
    return np.random.default_rng(7).integers(info.min, info.max, size=shape, dtype=dtype,
                                             endpoint=True)


BITWISE = {"BitwiseAnd": tf.bitwise.bitwise_and, "BitwiseOr": tf.bitwise.bitwise_or,
           "BitwiseXor": tf.bitwise.bitwise_xor}


@pytest.mark.parametrize("op,dtype", [("BitwiseAnd", "int32"), ("BitwiseAnd", "uint8"),
                                      ("BitwiseOr", "int64"), ("BitwiseOr", "int16"),
                                      ("BitwiseXor", "int8"), ("BitwiseXor", "uint32")])
def test_bitwise_binary(op, dtype):
    check_op(BITWISE[op], [full_range(3, 4, dtype=dtype), full_range(4, dtype=dtype)])


@pytest.mark.parametrize("dtype", ["int8", "int32", "uint16", "uint64"])
def test_invert(dtype):
    check_op(tf.bitwise.invert, [full_range(3, 4, dtype=dtype)])


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8", "uint16"])
def test_shifts_clamp_the_shift(dtype):
    """Shifts below 0 and at or past the bit width are clamped to [0, bits - 1] by TF."""
    bits = np.dtype(dtype).itemsize * 8
    x = full_range(3, 8, dtype=dtype)
    x[0, :4] = np.array([255, 128, 5, 1] if dtype.startswith("u") else [-1, -128, 5, 1], dtype)
    low = [0, 0] if dtype.startswith("u") else [-2, -1]
    y = np.array(low + [0, 1, bits // 2, bits - 1, bits, bits + 2], dtype)
    check_op(lambda a, b: [tf.bitwise.left_shift(a, b), tf.bitwise.right_shift(a, b)], [x, y])


def test_right_shift_symbolic():
    specs = [spec([None], tf.int32, 0), spec([None], tf.int32, 1)]
    check_op(tf.bitwise.right_shift, [np.int32([-100, 100]), np.int32([3, 33])], specs=specs,
             extra_inputs=[[np.int32([-1, -2147483648, 7]), np.int32([31, 1, -1])]])


# -- fills ----------------------------------------------------------------------------------
@pytest.mark.parametrize("op,dtype", [("ZerosLike", "float32"), ("ZerosLike", "int32"),
                                      ("ZerosLike", "bool"), ("ZerosLike", "float16"),
                                      ("OnesLike", "float32"), ("OnesLike", "int64"),
                                      ("OnesLike", "bool"), ("OnesLike", "bfloat16")])
def test_fill_like(op, dtype):
    fn = tf.zeros_like if op == "ZerosLike" else tf.ones_like
    if dtype == "bfloat16":   # a None dim keeps TF from making the fill a constant
        check_op(lambda x: tf.cast(fn(tf.cast(x, tf.bfloat16)), tf.float32), [rand(2, 3)],
                 specs=[spec([None, 3], tf.float32, 0)])
        return
    check_op(fn, [rand(2, 3, dtype=dtype)], specs=[spec([None, 3], tf.as_dtype(dtype), 0)],
             extra_inputs=[[rand(4, 3, dtype=dtype)]])


def test_fill_like_static_shape():
    """tf.zeros_like folds a static shape into a constant itself; the raw ops do not."""
    check_op(lambda x: [R.ZerosLike(x=x) + x, R.OnesLike(x=x)], [rand(2, 3, 4)])


# -- without TensorFlow: inference, errors, folding -----------------------------------------
def _graph(op_type, operands, attrs=None):
    """A graph holding one `op_type` node over `operands` (arrays become constants, descs
    inputs), verified; the node's output feeds an Identity that is the graph output."""
    from tf2ir.ir import Graph
    from tf2ir.ir.infer import infer_graph
    g = Graph("elementwise")
    inputs = [g.add_const(v, f"c{i}") if isinstance(v, np.ndarray) else g.add_input(f"in{i}", v)
              for i, v in enumerate(operands)]
    node = g.add_node(op_type, inputs, attrs or {}, "op")
    g.outputs.append(g.add_node("Identity", [node.outputs[0]], {}, "out").outputs[0])
    return infer_graph(g), node


@pytest.mark.parametrize("op_type,operands,message", [
    ("ApproximateEqual", [((2, 3), "float32"), ((3, 2), "float32")], "equal shapes"),
    ("FloorMod", [((2,), "float32"), ((2,), "int32")], "dtypes differ"),
    ("Select", [((3,), "bool"), ((4, 2), "float32"), ((4, 2), "float32")], "first dim"),
    ("SelectV2", [((2,), "bool"), ((3,), "float32"), ((3,), "float32")], "do not broadcast"),
    ("Less", [((2,), "bool"), ((2,), "bool")], "dtype bool"),
])
def test_user_errors_are_conversion_errors(op_type, operands, message):
    from tf2ir.ir import ConversionError, TensorDesc
    with pytest.raises(ConversionError, match=message):
        _graph(op_type, [TensorDesc(dtype, shape) for shape, dtype in operands])


def test_select_v1_vector_condition_needs_the_rank_of_x():
    from tf2ir.ir import ConversionError, TensorDesc
    from tf2ir.ir.onnx.compile import compile_to_model
    g, node = _graph("Select", [TensorDesc("bool", (None,)), TensorDesc("float32", None),
                                TensorDesc("float32", None)])
    with pytest.raises(ConversionError, match="ranks of condition and x"):
        compile_to_model(g)


def test_symbolic_shapes_are_inferred():
    from tf2ir.ir import TensorDesc
    _, node = _graph("SelectV2", [TensorDesc("bool", (None, 1)), TensorDesc("int16", (None, 3)),
                                  TensorDesc("int16", (3,))])
    assert (node.outputs[0].desc.dtype, node.outputs[0].desc.shape) == ("int16", (None, 3))
    _, node = _graph("Equal", [TensorDesc("float32", (2,)), TensorDesc("float32", (3,))],
                     {"incompatible_shape_error": False})
    assert node.outputs[0].desc.shape == ()
    _, node = _graph("IsNan", [TensorDesc("float16", (None, 4))])
    assert (node.outputs[0].desc.dtype, node.outputs[0].desc.shape) == ("bool", (None, 4))


@pytest.mark.parametrize("op_type,operands,expected", [
    ("FloorDiv", [np.int32([-7, 7, -8]), np.int32([2, -2, 2])], np.int32([-4, -4, -4])),
    ("FloorMod", [np.float32([-7, 7, -3]), np.float32([2, -2, np.inf])], np.float32([1, -1, np.inf])),
    ("Div", [np.int64([-7, 7]), np.int64([2, 2])], np.int64([-3, 3])),
    ("Div", [np.float32([-7, 7]), np.float32([2, 4])], np.float32([-3.5, 1.75])),
    ("TruncateDiv", [np.float64([-7, 7]), np.float64([2, 4])], np.float64([-3, 1])),
    ("Less", [np.int32([1, 5]), np.int32([3, 3])], np.array([True, False])),
    ("SelectV2", [np.array([True, False]), np.int32([1, 2]), np.array(0, np.int32)], np.int32([1, 0])),
    ("OnesLike", [np.zeros((2, 1), np.int64)], np.ones((2, 1), np.int64)),
    ("LeftShift", [np.int8([1, 1, -1]), np.int8([-1, 9, 7])], np.int8([1, -128, -128])),
])
def test_constant_operands_fold(op_type, operands, expected):
    from tf2ir.ir.passes import fold_constants
    g, _ = _graph(op_type, operands)
    assert fold_constants(g) == 1
    folded = g.outputs[0].producer.inputs[0].const_value
    assert folded.dtype == expected.dtype
    np.testing.assert_array_equal(folded, expected)


def test_integer_division_by_a_zero_constant_is_left_to_the_runtime():
    from tf2ir.ir.passes import fold_constants
    g, _ = _graph("FloorDiv", [np.int32([1]), np.int32([0])])
    assert fold_constants(g) == 0
