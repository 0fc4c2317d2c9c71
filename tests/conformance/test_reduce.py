"""Conformance of the reductions and scans (opp/reduce.py) against TensorFlow: Sum, Mean, Max,
Min, Prod, arg-max/min, All/Any, EuclideanNorm, L2Loss, TopKV2, Cumsum and Cumprod."""

import numpy as np
import pytest

from tests.conformance.harness import check_op, rand
from tf2ir.ir import ConversionError

tf = pytest.importorskip("tensorflow")

TESTED_DTYPES = {
    "Mean": ("float32", "float64", "int32"),
    "Sum": ("float32", "float64", "int8", "int16", "int32", "int64", "uint8"),
    "Max": ("float32", "float64", "int8", "int16", "int32", "int64", "uint8"),
    "Min": ("float32", "float64", "int32", "int64"),
    "Prod": ("float32", "float64", "int8", "int16", "int32", "int64", "uint8"),
    "TopKV2": ("float32", "float64", "int32", "int64"),
    "ArgMax": ("float32", "float64", "int16", "int32", "int64", "uint8", "bool"),
    "ArgMin": ("float32", "float64", "int32", "int64"),
    "All": ("bool",),
    "Any": ("bool",),
    "EuclideanNorm": ("float32", "float64", "int32"),
    "L2Loss": ("float32", "float64"),
    "Cumsum": ("float32", "float64", "int8", "int32", "int64"),
    "Cumprod": ("float32", "float64", "int16", "int32", "int64"),
}


def spec(shape, dtype="float32", index=0):
    return tf.TensorSpec(shape, tf.as_dtype(dtype), name=f"x{index}")


def ties(*shape, dtype="float32"):
    """Few distinct values, so rows hold ties."""
    return np.random.default_rng(3).integers(0, 3, size=shape).astype(dtype)


# -- Sum, Mean, Max, Min, Prod ---------------------------------------------------------------
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
    x = rand(2, 3, dtype=dtype, low=3, high=9)
    check_op(lambda x: (tf.reduce_sum(x, axis=0), tf.reduce_max(x, axis=1),
                        tf.reduce_prod(x, axis=-1, keepdims=True)), [x])


# -- ArgMax / ArgMin --------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64", "int16", "int32", "int64", "uint8", "bool"])
def test_arg_max_dtypes_with_ties(dtype):
    x = ties(3, 4, 5, dtype=dtype)
    check_op(lambda x: (tf.math.argmax(x, axis=1), tf.math.argmax(x, axis=-1, output_type=tf.int32)),
             [x])


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_arg_min_dtypes_with_ties(dtype):
    x = ties(3, 4, 5, dtype=dtype)
    check_op(lambda x: (tf.math.argmin(x, axis=0), tf.math.argmin(x, axis=-2, output_type=tf.int32)),
             [x])


def test_arg_max_int16_output_type():
    check_op(lambda x: tf.math.argmax(x, axis=0, output_type=tf.int16), [ties(5, 3)])


def test_constant_inputs_fold():
    """Shape-like uses (arg-max, All, Cumsum, Cumprod over constants) fold to constants."""
    import tempfile
    from tests.conformance.harness import convert_function
    table = rand(3, 4)

    def fn(x):
        index = tf.math.argmax(tf.constant(table), axis=1, output_type=tf.int32)
        sizes = tf.math.cumprod(tf.math.cumsum(index + 1, exclusive=True) + 1, reverse=True)
        flag = tf.cast(tf.math.reduce_all(tf.constant([True, False])), tf.int32)
        return x + sizes + flag
    check_op(fn, [rand(3, dtype="int32")])
    with tempfile.TemporaryDirectory() as directory:
        _, graph, _, _ = convert_function(fn, [spec((3,), "int32")], directory)
    assert not {"ArgMax", "Cumsum", "Cumprod", "ReduceAll"} & {n.op_type for n in graph.nodes}


def test_arg_max_symbolic_dims():
    specs = [spec((None, 6, None))]
    check_op(lambda x: (tf.math.argmax(x, axis=1), tf.math.argmin(x, axis=2)), [rand(2, 6, 3)],
             specs=specs, extra_inputs=[[rand(1, 6, 7)]])


def test_arg_max_dimension_must_be_constant():
    specs = [spec((2, 3)), spec((), "int32", 1)]
    with pytest.raises(ConversionError, match="constant scalar dimension"):
        check_op(lambda x, axis: tf.math.argmax(x, axis=axis), [rand(2, 3), np.int32(1)], specs=specs)


# -- All / Any --------------------------------------------------------------------------------
@pytest.mark.parametrize("op", [tf.math.reduce_all, tf.math.reduce_any])
@pytest.mark.parametrize("axis,keepdims", [(1, False), (-1, True), ([0, 2], False), ([], True),
                                           (None, False)])
def test_all_any(op, axis, keepdims):
    # rows of all-True and all-False must occur too
    x = rand(3, 4, 2, dtype="bool")
    x[0, :, :] = True
    x[1, :, :] = False
    check_op(lambda x: op(x, axis=axis, keepdims=keepdims), [x])


def test_all_any_symbolic_and_empty_dims():
    """A zero-length axis: all() is True and any() is False, as in TF."""
    specs = [spec((None, 3), "bool")]
    check_op(lambda x: (tf.math.reduce_all(x, axis=0), tf.math.reduce_any(x, axis=0)),
             [rand(4, 3, dtype="bool")], specs=specs, extra_inputs=[[np.zeros((0, 3), bool)]])


# -- EuclideanNorm / L2Loss -------------------------------------------------------------------
@pytest.mark.parametrize("axis,keepdims", [(1, False), (-1, True), ([0, 2], False), ([], False)])
def test_euclidean_norm(axis, keepdims):
    check_op(lambda x: tf.math.reduce_euclidean_norm(x, axis=axis, keepdims=keepdims), [rand(2, 3, 4)])


@pytest.mark.parametrize("dtype", ["float64", "int32"])
def test_euclidean_norm_dtypes(dtype):
    x = rand(3, 4, dtype=dtype, low=-9, high=9)
    check_op(lambda x: tf.math.reduce_euclidean_norm(x, axis=1), [x])


def test_euclidean_norm_symbolic():
    check_op(lambda x: tf.math.reduce_euclidean_norm(x, axis=-1, keepdims=True), [rand(2, 5)],
             specs=[spec((None, None))], extra_inputs=[[rand(3, 1)]])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_l2_loss(dtype):
    check_op(tf.nn.l2_loss, [rand(3, 4, 2, dtype=dtype)])
    check_op(tf.nn.l2_loss, [rand(3, 4, dtype=dtype)], specs=[spec((None, 4), dtype)],
             extra_inputs=[[rand(1, 4, dtype=dtype)]])


# -- Cumsum / Cumprod -------------------------------------------------------------------------
@pytest.mark.parametrize("op", [tf.math.cumsum, tf.math.cumprod])
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("exclusive,reverse", [(False, False), (True, False), (False, True), (True, True)])
def test_cumulative(op, axis, exclusive, reverse):
    x = rand(3, 4, 2, low=-1.5, high=1.5)
    x[0, 1, :] = 0.0   # zeros and negatives: a cumulative product must stay exact
    check_op(lambda x: op(x, axis=axis, exclusive=exclusive, reverse=reverse), [x])


@pytest.mark.parametrize("op,dtype", [
    (tf.math.cumsum, "float64"), (tf.math.cumsum, "int8"), (tf.math.cumsum, "int32"),
    (tf.math.cumsum, "int64"),
    (tf.math.cumprod, "float64"), (tf.math.cumprod, "int16"), (tf.math.cumprod, "int32"),
    (tf.math.cumprod, "int64"),
])
def test_cumulative_dtypes(op, dtype):
    x = rand(3, 5, dtype=dtype)
    check_op(lambda x: (op(x, axis=1), op(x, axis=0, exclusive=True, reverse=True)), [x])


@pytest.mark.parametrize("op", [tf.math.cumsum, tf.math.cumprod])
def test_cumulative_symbolic(op):
    check_op(lambda x: op(x, axis=1, reverse=True), [rand(2, 3)], specs=[spec((None, None))],
             extra_inputs=[[rand(4, 1)], [rand(1, 6)]])


def test_cumsum_axis_fed_at_run_time():
    specs = [spec((2, 3)), spec((), "int32", 1)]
    check_op(lambda x, axis: tf.math.cumsum(x, axis=axis, exclusive=True), [rand(2, 3), np.int32(1)],
             specs=specs, extra_inputs=[[rand(2, 3), np.int32(-2)]])


def test_cumprod_axis_must_be_constant():
    specs = [spec((2, 3)), spec((), "int32", 1)]
    with pytest.raises(ConversionError, match="constant axis"):
        check_op(lambda x, axis: tf.math.cumprod(x, axis=axis), [rand(2, 3), np.int32(1)], specs=specs)


# -- TopKV2 --------------------------------------------------------------------------------
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
