"""Conformance of the comparisons (opp/compare.py) against TensorFlow: Less, LessEqual, Greater,
GreaterEqual, Equal, NotEqual and ApproximateEqual."""

import numpy as np
import pytest

from tests.conformance.harness import check_op, rand, single_op_graph

tf = pytest.importorskip("tensorflow")
R = tf.raw_ops

TESTED_DTYPES = {
    "Equal": ("float32", "int32", "bool", "int16"),
    "NotEqual": ("float32", "int32", "bool"),
    "Less": ("float32", "int32", "int64"),
    "LessEqual": ("float32", "int32", "float64"),
    "Greater": ("float32", "int32", "uint8"),
    "GreaterEqual": ("float32", "int32", "float16"),
    "ApproximateEqual": ("float32", "float64"),
}

INF, NAN = np.inf, np.nan


def spec(shape, dtype, i):
    return tf.TensorSpec(shape, dtype, name=f"x{i}")


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


# -- without TensorFlow: inference, errors, folding -----------------------------------------
@pytest.mark.parametrize("op_type,operands,message", [
    ("ApproximateEqual", [((2, 3), "float32"), ((3, 2), "float32")], "equal shapes"),
    ("Less", [((2,), "bool"), ((2,), "bool")], "dtype bool"),
])
def test_user_errors_are_conversion_errors(op_type, operands, message):
    from tf2ir.ir import ConversionError, TensorDesc
    with pytest.raises(ConversionError, match=message):
        single_op_graph(op_type, [TensorDesc(dtype, shape) for shape, dtype in operands])


def test_incompatible_shapes_give_a_scalar():
    from tf2ir.ir import TensorDesc
    _, node = single_op_graph("Equal", [TensorDesc("float32", (2,)), TensorDesc("float32", (3,))],
                              {"incompatible_shape_error": False})
    assert node.outputs[0].desc.shape == ()


def test_constant_operands_fold():
    from tf2ir.ir.passes import fold_constants
    g, _ = single_op_graph("Less", [np.int32([1, 5]), np.int32([3, 3])])
    assert fold_constants(g) == 1
    folded = g.outputs[0].producer.inputs[0].const_value
    assert folded.dtype == np.bool_
    np.testing.assert_array_equal(folded, np.array([True, False]))
