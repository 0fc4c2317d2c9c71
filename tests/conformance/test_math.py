"""Conformance of the math functions (opp/math.py) against TensorFlow: roots, exp and log (Log1p,
Expm1), Erf/Erfc, trigonometric and hyperbolic functions (Atan2 too), rounding, sign, Abs, Neg,
Square, Reciprocal/Inv and the float classes."""

import numpy as np
import pytest

from tests.conformance.harness import check_op, rand, single_op_graph

tf = pytest.importorskip("tensorflow")

TESTED_DTYPES = {
    "Rsqrt": ("float32", "float64"),
    "Sqrt": ("float32", "float64"),
    "Exp": ("float32", "float64"),
    "Log": ("float32", "float64"),
    "Reciprocal": ("float32", "float64"),
    "Inv": ("float32",),
    "Erf": ("float32", "float64"),
    "Erfc": ("float32", "float64"),
    "Floor": ("float32", "float64"),
    "Ceil": ("float32", "float64"),
    "Sin": ("float32", "float64"),
    "Cos": ("float32", "float64"),
    "Neg": ("float32", "float64", "int32", "int64"),
    "Abs": ("float32", "float64", "int32", "int64"),
    "Square": ("float32", "float64", "int32", "int64"),
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
    "Atan2": ("float32", "float64", "float16"),
}

INF, NAN = np.inf, np.nan
SPECIALS = [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 1e-4, -1e-4, INF, -INF, NAN]


def spec(shape, dtype, i):
    return tf.TensorSpec(shape, dtype, name=f"x{i}")


def with_specials(dtype, low, high, n=13):
    return np.concatenate([rand(n, dtype=dtype, low=low, high=high),
                           np.array(SPECIALS, dtype)])


# -- roots, exp and log, erf, rounding, sine and cosine, Abs, Neg, Square ---------------------
# unary op → (TF function, the dtypes, input range)
UNARY = {
    "Rsqrt": (tf.math.rsqrt, (0.1, 4.0)), "Sqrt": (tf.math.sqrt, (0.0, 4.0)),
    "Exp": (tf.math.exp, (-3.0, 3.0)), "Log": (tf.math.log, (0.1, 4.0)),
    "Reciprocal": (tf.math.reciprocal, (0.5, 3.0)),
    "Inv": (lambda x: tf.raw_ops.Inv(x=x), (-3.0, -0.5)),
    "Erf": (tf.math.erf, (-3.0, 3.0)), "Erfc": (tf.math.erfc, (-3.0, 3.0)),
    "Floor": (tf.math.floor, (-3.0, 3.0)), "Ceil": (tf.math.ceil, (-3.0, 3.0)),
    "Sin": (tf.math.sin, (-4.0, 4.0)), "Cos": (tf.math.cos, (-4.0, 4.0)),
    "Neg": (tf.math.negative, (-3.0, 3.0)), "Abs": (tf.math.abs, (-3.0, 3.0)),
    "Square": (tf.math.square, (-3.0, 3.0)),
}
INTEGER_UNARY = ("Neg", "Abs", "Square")


def _unary_cases():
    for op in sorted(UNARY):
        dtypes = ["float32", "float64"] if op != "Inv" else ["float32"]
        dtypes += ["int32", "int64"] if op in INTEGER_UNARY else []
        for dtype in dtypes:
            yield op, dtype


@pytest.mark.parametrize("op,dtype", list(_unary_cases()))
def test_unary(op, dtype):
    fn, (low, high) = UNARY[op]
    # onnxruntime has no float64 Erf: it runs in float32
    atol = 1e-6 if op in ("Erf", "Erfc") and dtype == "float64" else None
    check_op(fn, [rand(2, 3, 4, dtype=dtype, low=low, high=high)], atol=atol)


def test_unary_symbolic_dims():
    spec = [tf.TensorSpec((None, None), tf.float32, name="x0")]
    check_op(lambda x: tf.math.rsqrt(tf.math.abs(x) + 1.0), [rand(2, 3)], specs=spec,
             extra_inputs=[[rand(4, 1)]])


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


# -- atan2 ---------------------------------------------------------------------------------
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


# -- without TensorFlow: inference ----------------------------------------------------------
def test_float_class_shapes_are_inferred():
    from tf2ir.ir import TensorDesc
    _, node = single_op_graph("IsNan", [TensorDesc("float16", (None, 4))])
    assert (node.outputs[0].desc.dtype, node.outputs[0].desc.shape) == ("bool", (None, 4))
