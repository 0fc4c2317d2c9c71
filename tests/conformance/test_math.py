"""Conformance of the basic math ops (elementwise arithmetic, unary math, reductions,
MatMul, TopKV2, AddN) against TensorFlow."""

import numpy as np
import pytest

from tests.conformance.harness import check_op, rand

tf = pytest.importorskip("tensorflow")

TESTED_DTYPES = {
    "Add": ("float32", "int32"),
    "AddV2": ("float32", "float64", "int8", "int16", "int32", "int64", "uint8"),
    "Sub": ("float32", "float64", "int8", "int16", "int32", "int64", "uint8"),
    "Mul": ("float32", "float64", "int8", "int16", "int32", "int64", "uint8"),
    "RealDiv": ("float32", "float64"),
    "Maximum": ("float32", "float64", "int8", "int16", "int32", "int64", "uint8"),
    "Minimum": ("float32", "float64", "int8", "int16", "int32", "int64", "uint8"),
    "Pow": ("float32", "float64", "int8", "int16", "int32", "int64"),
    "SquaredDifference": ("float32", "float64", "int32", "int64"),
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
    "Mean": ("float32", "float64", "int32"),
    "Sum": ("float32", "float64", "int8", "int16", "int32", "int64", "uint8"),
    "Max": ("float32", "float64", "int8", "int16", "int32", "int64", "uint8"),
    "Min": ("float32", "float64", "int32", "int64"),
    "Prod": ("float32", "float64", "int8", "int16", "int32", "int64", "uint8"),
    "MatMul": ("float32", "float64", "int32"),
    "TopKV2": ("float32", "float64", "int32", "int64"),
    "AddN": ("float32", "float64", "int32"),
}

BINARY = {
    "AddV2": tf.math.add, "Sub": tf.math.subtract, "Mul": tf.math.multiply,
    "Maximum": tf.math.maximum, "Minimum": tf.math.minimum,
    "SquaredDifference": tf.math.squared_difference,
}
# (shape of x1, shape of x2): equal, trailing, middle-1 and scalar broadcasting
SHAPES = [((2, 3), (2, 3)), ((2, 3, 4), (4,)), ((2, 1, 4), (3, 1)), ((), (2, 3))]


@pytest.mark.parametrize("op", sorted(BINARY))
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_binary(op, dtype):
    fn = BINARY[op]
    for a, b in SHAPES[1:3] if dtype != "float32" else SHAPES:
        check_op(fn, [rand(*a, dtype=dtype), rand(*b, dtype=dtype)])


def test_add_v1_and_symbolic_batch():
    spec = [tf.TensorSpec((None, 3), tf.float32, name="x0"), tf.TensorSpec((3,), tf.float32, name="x1")]
    check_op(lambda a, b: tf.raw_ops.Add(x=a, y=b), [rand(2, 3), rand(3)], specs=spec,
             extra_inputs=[[rand(5, 3), rand(3)]])
    check_op(lambda a, b: tf.raw_ops.Add(x=a, y=b), [rand(2, 3, dtype="int32"), rand(3, dtype="int32")])


def test_binary_symbolic_dims_broadcast():
    spec = [tf.TensorSpec((None, 1, 4), tf.float32, name="x0"),
            tf.TensorSpec((None, 1), tf.float32, name="x1")]
    check_op(tf.math.squared_difference, [rand(2, 1, 4), rand(3, 1)], specs=spec,
             extra_inputs=[[rand(1, 1, 4), rand(5, 1)]])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_real_div(dtype):
    for a, b in SHAPES:
        divisor = rand(*b, dtype=dtype, low=0.5, high=2.0)
        check_op(tf.math.truediv, [rand(*a, dtype=dtype), divisor])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_pow_float(dtype):
    base = rand(2, 3, dtype=dtype, low=0.1, high=3.0)
    check_op(tf.math.pow, [base, rand(3, dtype=dtype)])


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_pow_int(dtype):
    base = rand(2, 3, dtype=dtype)
    exponent = np.array([0, 1, 3], dtype)
    check_op(tf.math.pow, [base, exponent])


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


REDUCTIONS = {"Mean": tf.math.reduce_mean, "Sum": tf.math.reduce_sum, "Max": tf.math.reduce_max,
              "Min": tf.math.reduce_min, "Prod": tf.math.reduce_prod}
# axis argument, keepdims
REDUCE_AXES = [(1, False), (-1, True), ([0, 2], False), ([-3, -1], True), ([], False), (None, False),
               (None, True)]


@pytest.mark.parametrize("op", sorted(REDUCTIONS))
@pytest.mark.parametrize("axis,keepdims", REDUCE_AXES)
def test_reduce_float32(op, axis, keepdims):
    fn = REDUCTIONS[op]
    check_op(lambda x: fn(x, axis=axis, keepdims=keepdims), [rand(2, 3, 4)])


@pytest.mark.parametrize("op,dtype", [(op, dtype) for op in sorted(REDUCTIONS)
                                      for dtype in ("float64", "int32", "int64")
                                      if (op, dtype) != ("Mean", "int64")])
def test_reduce_dtypes(op, dtype):
    fn = REDUCTIONS[op]
    # integer means truncate toward zero in TF: negative sums must be covered
    x = rand(2, 3, 4, dtype=dtype, low=-6, high=6) if op != "Prod" else rand(2, 3, 4, dtype=dtype)
    check_op(lambda x: fn(x, axis=[0, -1], keepdims=False), [x])
    check_op(lambda x: fn(x, axis=1, keepdims=True), [x])


@pytest.mark.parametrize("op", sorted(REDUCTIONS))
def test_reduce_symbolic_dims(op):
    fn = REDUCTIONS[op]
    spec = [tf.TensorSpec((None, 3, None), tf.float32, name="x0")]
    check_op(lambda x: fn(x, axis=[0, 2], keepdims=True), [rand(2, 3, 4)], specs=spec,
             extra_inputs=[[rand(5, 3, 1)]])


@pytest.mark.parametrize("keepdims", [False, True])
def test_reduce_axes_fed_at_run_time(keepdims):
    spec = [tf.TensorSpec((2, 3, 4), tf.float32, name="x0"), tf.TensorSpec((None,), tf.int32, name="x1")]
    check_op(lambda x, axes: tf.reduce_sum(x, axis=axes, keepdims=keepdims),
             [rand(2, 3, 4), np.array([0, -1], np.int32)], specs=spec,
             extra_inputs=[[rand(2, 3, 4), np.array([1], np.int32)]])
    spec[1] = tf.TensorSpec((), tf.int32, name="x1")
    check_op(lambda x, axis: tf.reduce_max(x, axis=axis, keepdims=keepdims),
             [rand(2, 3, 4), np.array(-2, np.int32)], specs=spec)


@pytest.mark.parametrize("dtype", ["int8", "int16", "uint8"])
def test_small_integers_compute_wider(dtype):
    """onnxruntime has no kernels for some small integer dtypes: the lowering casts around."""
    x, y = rand(2, 3, dtype=dtype, low=3, high=9), rand(3, dtype=dtype, low=3, high=9)
    check_op(lambda x, y: (tf.math.maximum(x, y), tf.math.minimum(x, y), x * y + x - y,
                           tf.reduce_sum(x, axis=0), tf.reduce_max(x, axis=1),
                           tf.reduce_prod(x, axis=-1, keepdims=True)), [x, y])
    if dtype != "uint8":   # TF has no uint8 Pow
        check_op(lambda x: tf.math.pow(x, tf.constant([2, 1, 3], dtype)), [x])


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
@pytest.mark.parametrize("transpose_a,transpose_b", [(False, False), (True, False), (False, True),
                                                     (True, True)])
def test_matmul(dtype, transpose_a, transpose_b):
    a = rand(*((4, 3) if transpose_a else (3, 4)), dtype=dtype)
    b = rand(*((5, 4) if transpose_b else (4, 5)), dtype=dtype)
    check_op(lambda a, b: tf.linalg.matmul(a, b, transpose_a=transpose_a, transpose_b=transpose_b),
             [a, b])


def test_matmul_symbolic_rows_and_const_weight():
    weight = rand(4, 5)
    spec = [tf.TensorSpec((None, 4), tf.float32, name="x0")]
    check_op(lambda a: tf.linalg.matmul(a, tf.constant(weight)), [rand(3, 4)], specs=spec,
             extra_inputs=[[rand(1, 4)]])


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
@pytest.mark.parametrize("k", [1, 3])
def test_top_k(dtype, k):
    # a permutation per row: no ties, so every dtype's indices are exact
    x = np.stack([RNG_PERM.permutation(6) for _ in range(4)]).astype(dtype)
    check_op(lambda x: tf.math.top_k(x, k=k), [x])


RNG_PERM = np.random.default_rng(7)


def test_top_k_ties_take_the_lower_index():
    x = np.array([[1, 3, 3, 2, 3], [0, 0, 0, 0, 0], [5, 1, 5, 1, 5]], np.float32)
    check_op(lambda x: tf.math.top_k(x, k=3), [x])


def test_top_k_unsorted_rank3_symbolic():
    spec = [tf.TensorSpec((None, 2, 7), tf.float32, name="x0")]
    x = np.stack([RNG_PERM.permutation(7) for _ in range(6)]).reshape(3, 2, 7).astype(np.float32)
    y = np.stack([RNG_PERM.permutation(7) for _ in range(2)]).reshape(1, 2, 7).astype(np.float32)
    # sorted=False: TF documents no order, so compare the sorted results
    check_op(lambda x: tf.sort(tf.math.top_k(x, k=2, sorted=False).values), [x], specs=spec,
             extra_inputs=[[y]])


def test_top_k_k_is_fed_at_run_time():
    spec = [tf.TensorSpec((3, 6), tf.float32, name="x0"), tf.TensorSpec((), tf.int32, name="x1")]
    x = np.stack([RNG_PERM.permutation(6) for _ in range(3)]).astype(np.float32)
    check_op(lambda x, k: tf.math.top_k(x, k=k), [x, np.array(2, np.int32)], specs=spec,
             extra_inputs=[[x, np.array(5, np.int32)]])


@pytest.mark.parametrize("count", [1, 2, 5])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_add_n(count, dtype):
    inputs = [rand(2, 3, dtype=dtype) for _ in range(count)]
    check_op(lambda *xs: tf.raw_ops.AddN(inputs=list(xs)), inputs)


def test_add_n_symbolic():
    spec = [tf.TensorSpec((None, 3), tf.float32, name=f"x{i}") for i in range(3)]
    check_op(lambda *xs: tf.math.add_n(list(xs)), [rand(2, 3) for _ in range(3)], specs=spec,
             extra_inputs=[[rand(4, 3) for _ in range(3)]])
