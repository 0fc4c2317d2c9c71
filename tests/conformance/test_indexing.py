"""Conformance of the indexing ops (opp/indexing.py) against TensorFlow: GatherV2, GatherNd,
ScatterNd, TensorScatterUpdate/Add, Where, OneHot, Unique and InvertPermutation."""

import numpy as np
import pytest

from tests.conformance.harness import check_op, converted_op_types, rand, spec

tf = pytest.importorskip("tensorflow")

TESTED_DTYPES = {
    "GatherV2": ("float32", "int32", "int64", "bool"),
    "GatherNd": ("float32", "int32", "int64", "bool"),
    "ScatterNd": ("float32", "int32", "int64"),
    "TensorScatterUpdate": ("float32", "int32", "bool"),
    "TensorScatterAdd": ("float32", "int32", "int64"),
    "Where": ("float32", "float64", "int32", "int64", "bool"),
    "OneHot": ("float32", "int32", "int64", "bool"),
    "Unique": ("float32", "float64", "int32", "int64"),
    "InvertPermutation": ("int32", "int64"),
}

DTYPES = ["float32", "int32", "int64", "bool"]


def cases_and_dtypes(cases, dtypes=DTYPES):
    """Every case in the first dtype, then the first case in each other dtype (keeps the file fast)."""
    return [(case, dtypes[0]) for case in cases] + [(cases[0], d) for d in dtypes[1:]]


# -- gather ----------------------------------------------------------------------------------
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("index_type", ["int32", "int64"])
def test_gather_v2(axis, index_type):
    indices = np.array([[2, 0], [1, 1]], index_type)
    check_op(lambda x, i: tf.gather(x, i, axis=axis), [rand(3, 4, 3), indices])


@pytest.mark.parametrize("dtype", ["int32", "int64", "bool"])
def test_gather_v2_dtypes(dtype):
    check_op(lambda x: tf.gather(x, [3, 0, 3], axis=-1), [rand(2, 4, dtype=dtype)])


def test_gather_v2_symbolic():
    check_op(lambda x, i: tf.gather(x, i, axis=1), [rand(2, 5), np.array([4, 0, 1], np.int64)],
             specs=[spec((None, 5)), spec((None,), "int64", "x1")],
             extra_inputs=[[rand(3, 5), np.array([2], np.int64)]])


@pytest.mark.parametrize("batch_dims,axis", [(1, 1), (1, 2), (1, -1), (2, 2), (-1, 2)])
def test_gather_v2_batch_dims(batch_dims, axis):
    indices = rand(2, 3, 4, dtype="int32", low=3, high=-1)   # values in 0..2
    check_op(lambda x, i: tf.gather(x, i, axis=axis, batch_dims=batch_dims),
             [rand(2, 3, 3, 5), indices])


def test_gather_v2_batch_dims_symbolic():
    fn = lambda x, i: tf.gather(x, i, axis=1, batch_dims=1)
    check_op(fn, [rand(2, 4, 3), np.array([[0, 3], [2, 2]], np.int64)],
             specs=[spec((None, 4, 3)), spec((None, 2), "int64", "x1")],
             extra_inputs=[[rand(3, 4, 3), np.array([[1, 0], [3, 3], [0, 2]], np.int64)]])


@pytest.mark.parametrize("indices,dtype", cases_and_dtypes(
    [[[1, 0], [2, 3]], [[2], [0]], [[[1, 2, 0]], [[0, 0, 1]]]]))
def test_gather_nd(indices, dtype):
    check_op(lambda x, i: tf.gather_nd(x, i), [rand(3, 4, 2, dtype=dtype), np.array(indices, np.int32)])


def test_gather_nd_symbolic():
    check_op(lambda x, i: tf.gather_nd(x, i), [rand(3, 4), np.array([[2, 1], [0, 3]], np.int64)],
             specs=[spec((None, 4)), spec((None, 2), "int64", "x1")],
             extra_inputs=[[rand(5, 4), np.array([[4, 0]], np.int64)]])


# -- scatter ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "int32", "int64"])
def test_scatter_nd_sums_duplicates(dtype):
    indices = np.array([[1], [3], [1]], np.int32)
    check_op(lambda u: tf.scatter_nd(indices, u, [5, 2]), [rand(3, 2, dtype=dtype)])


def test_scatter_nd_symbolic():
    fn = lambda i, u: tf.scatter_nd(i, u, [4, 3])
    check_op(fn, [np.array([[0, 1], [3, 2]], np.int64), rand(2)],
             specs=[spec((None, 2), "int64", "x0"), spec((None,), name="x1")],
             extra_inputs=[[np.array([[2, 2]], np.int64), rand(1)]])


@pytest.mark.parametrize("dtype", ["float32", "int32", "bool"])
def test_tensor_scatter_update(dtype):
    indices = np.array([[2], [0]], np.int32)
    check_op(lambda t, u: tf.tensor_scatter_nd_update(t, indices, u),
             [rand(4, 3, dtype=dtype), rand(2, 3, dtype=dtype)])


@pytest.mark.parametrize("dtype", ["float32", "int32", "int64"])
def test_tensor_scatter_add(dtype):
    indices = np.array([[2, 1], [0, 0], [2, 1]], np.int64)
    check_op(lambda t, u: tf.tensor_scatter_nd_add(t, indices, u),
             [rand(4, 3, dtype=dtype), rand(3, dtype=dtype)])


def test_tensor_scatter_symbolic():
    fn = lambda t, i, u: tf.tensor_scatter_nd_update(t, i, u)
    check_op(fn, [rand(3, 2), np.array([[1]], np.int32), rand(1, 2)],
             specs=[spec((None, 2)), spec((None, 1), "int32", "x1"), spec((None, 2), name="x2")],
             extra_inputs=[[rand(5, 2), np.array([[4], [0]], np.int32), rand(2, 2)]])


# -- indices -----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "bool"])
def test_where_indices(dtype):
    x = rand(3, 4, dtype=dtype)
    if dtype != "bool":
        x = x * (rand(3, 4, dtype="bool")).astype(dtype)
    check_op(lambda v: tf.where(v), [x])


def test_where_symbolic():
    check_op(lambda v: tf.where(v), [rand(2, 3, 2, dtype="bool")], specs=[spec((None, 3, None), "bool")],
             extra_inputs=[[np.zeros((1, 3, 4), bool)], [rand(4, 3, 1, dtype="bool")]])


@pytest.mark.parametrize("axis,values", cases_and_dtypes(
    [1, 0, -1], [("float32", 1.5, -0.5), ("int32", 7, 2), ("int64", 1, 0), ("bool", True, False)]))
def test_one_hot(axis, values):
    dtype, on, off = values
    indices = np.array([[0, 3, -1], [2, 5, 1]], np.int32)   # -1 and 5 are out of range: all off
    check_op(lambda i: tf.one_hot(i, 4, on_value=tf.constant(on, dtype), off_value=tf.constant(off, dtype),
                                  axis=axis), [indices])


def test_one_hot_symbolic_int64_indices():
    check_op(lambda i: tf.one_hot(i, 3), [np.array([0, 2, 1], np.int64)], specs=[spec((None,), "int64")],
             extra_inputs=[[np.array([2, 2, 0, 7, 1], np.int64)]])


@pytest.mark.parametrize("dtype,out_idx", [("float32", "int32"), ("float64", "int64"), ("int32", "int32"),
                                           ("int32", "int64"), ("int64", "int32")])
def test_unique(dtype, out_idx):
    x = np.array([3, 1, 3, -2, 1, 0, 3], dtype)
    check_op(lambda v: tf.unique(v, out_idx=out_idx), [x], specs=[spec((None,), dtype)],
             extra_inputs=[[np.array([5, 5], dtype)]])


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_invert_permutation(dtype):
    check_op(lambda p: tf.math.invert_permutation(p), [np.array([3, 0, 4, 1, 2], dtype)],
             specs=[spec((None,), dtype)], extra_inputs=[[np.array([1, 0], dtype)]])


def test_constant_invert_permutation_folds():
    fn = lambda x: x + tf.cast(tf.math.invert_permutation([4, 0, 3, 1, 2]), tf.float32)  # noqa: E731
    ops = converted_op_types(fn, [spec((5,))])
    assert "InvertPermutation" not in ops, "not folded: InvertPermutation"
    check_op(fn, [rand(5)])
