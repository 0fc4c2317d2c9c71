"""Conformance of the ragged ops (opp/ragged.py) against TensorFlow: the graphs `tf.ragged`
freezes to, with the row splits and values as run-time inputs of unknown length."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conformance.harness import check_op, converted_op_types, rand, spec

tf = pytest.importorskip("tensorflow")
raw = tf.raw_ops

TESTED_DTYPES = {
    "RaggedRange": ("float32", "float64", "int32", "int64"),
    "RaggedTensorToTensor": ("float32", "int32", "int64", "bool"),
    "RaggedGather": ("float32", "int32", "int64"),
    "RaggedTensorToSparse": ("float32", "int64", "bool"),
}

SPLITS = np.array([0, 2, 2, 5, 6], np.int64)          # rows of 2, 0, 3 and 1 items
EMPTY_SPLITS = np.array([0], np.int64)                 # no rows at all


def _ragged(splits, values):
    return tf.RaggedTensor.from_row_splits(values, splits)


# -- RaggedRange ----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", TESTED_DTYPES["RaggedRange"])
def test_ragged_range_vectors(dtype):
    def fn(s, l, d):
        r = tf.ragged.range(s, l, d)
        return r.row_splits, r.flat_values
    starts = np.array([0, 5, 3, -2, 4], dtype)
    limits = np.array([4, 1, 3, 7, 4], dtype)
    deltas = np.array([1, -2, 1, 3, -1], dtype)
    if dtype.startswith("float"):
        starts, limits, deltas = starts + 0.25, limits * 1.5, deltas * 0.75
    specs = [spec((None,), dtype), spec((None,), dtype, "x1"), spec((None,), dtype, "x2")]
    check_op(fn, [starts, limits, deltas], specs=specs,
             extra_inputs=[[starts[:0], limits[:0], deltas[:0]], [starts[:2], limits[:2], deltas[:2]]])


@pytest.mark.parametrize("splits_type", ["int32", "int64"])
def test_ragged_range_broadcasts_scalars(splits_type):
    def fn(s, l, d):
        r = tf.ragged.range(s, l, d, row_splits_dtype=tf.as_dtype(splits_type))
        return r.row_splits, r.flat_values
    specs = [spec((), "int32"), spec((None,), "int32", "x1"), spec((), "int32", "x2")]
    check_op(fn, [np.array(1, np.int32), np.array([4, 0, 9, 1], np.int32), np.array(2, np.int32)],
             specs=specs)


def test_ragged_range_all_scalars():
    fn = lambda l: tf.ragged.range(l).flat_values   # noqa: E731
    check_op(fn, [np.array(5, np.int64)], specs=[spec((), "int64")],
             extra_inputs=[[np.array(0, np.int64)], [np.array(-3, np.int64)]])


# -- RaggedTensorToTensor -------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", TESTED_DTYPES["RaggedTensorToTensor"])
def test_to_tensor(dtype):
    values = rand(6, dtype=dtype)
    fn = lambda sp, v: _ragged(sp, v).to_tensor()   # noqa: E731
    specs = [spec((None,), "int64"), spec((None,), dtype, "x1")]
    check_op(fn, [SPLITS, values], specs=specs,
             extra_inputs=[[EMPTY_SPLITS, values[:0]], [np.array([0, 0, 0], np.int64), values[:0]],
                           [np.array([0, 1], np.int64), values[:1]]])


@pytest.mark.parametrize("shape", [[None, 2], [3, None], [6, 4], [2, 1]])
def test_to_tensor_with_shape_and_default(shape):
    fn = lambda sp, v: _ragged(sp, v).to_tensor(default_value=-1.0, shape=shape)  # noqa: E731
    specs = [spec((None,), "int64"), spec((None,), "float32", "x1")]
    check_op(fn, [SPLITS, rand(6)], specs=specs)


def test_to_tensor_with_inner_dims_and_int32_splits():
    fn = lambda sp, v, d: _ragged(sp, v).to_tensor(default_value=d)   # noqa: E731
    specs = [spec((None,), "int32"), spec((None, 3), "float32", "x1"), spec((3,), "float32", "x2")]
    check_op(fn, [SPLITS.astype(np.int32), rand(6, 3), rand(3)], specs=specs,
             extra_inputs=[[np.array([0], np.int32), rand(0, 3), rand(3)]])


def test_to_tensor_two_ragged_dims():
    def fn(s1, s2, v):
        return tf.RaggedTensor.from_nested_row_splits(v, [s1, s2]).to_tensor()
    specs = [spec((None,), "int64"), spec((None,), "int64", "x1"), spec((None, 2), "float32", "x2")]
    outer = np.array([0, 2, 3, 3, 4], np.int64)
    check_op(fn, [outer, SPLITS, rand(6, 2)], specs=specs,
             extra_inputs=[[np.array([0, 1], np.int64), np.array([0, 0], np.int64), rand(0, 2)]])


def test_to_tensor_from_value_rowids():
    def fn(rowids, nrows, v):
        return raw.RaggedTensorToTensor(
            shape=[-1, -1], values=v, default_value=0.0, row_partition_tensors=[nrows, rowids],
            row_partition_types=["FIRST_DIM_SIZE", "VALUE_ROWIDS"])
    specs = [spec((None,), "int64"), spec((), "int64", "x1"), spec((None,), "float32", "x2")]
    check_op(fn, [np.array([0, 0, 2, 2, 2, 5], np.int64), np.array(7, np.int64), rand(6)],
             specs=specs)


# -- RaggedGather ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", TESTED_DTYPES["RaggedGather"])
def test_gather_rows(dtype):
    def fn(sp, v, i):
        r = tf.gather(_ragged(sp, v), i)
        return r.row_splits, r.values
    specs = [spec((None,), "int64"), spec((None,), dtype, "x1"), spec((None,), "int32", "x2")]
    values = rand(6, dtype=dtype)
    check_op(fn, [SPLITS, values, np.array([2, 0, 1, 2, 3], np.int32)], specs=specs,
             extra_inputs=[[SPLITS, values, np.zeros(0, np.int32)]])


def test_gather_two_ragged_dims_and_inner_dims():
    def fn(s1, s2, v, i):
        r = tf.gather(tf.RaggedTensor.from_nested_row_splits(v, [s1, s2]), i)
        return r.nested_row_splits + (r.flat_values,)
    specs = [spec((None,), "int64"), spec((None,), "int64", "x1"), spec((None, 2), "float32", "x2"),
             spec((None,), "int64", "x3")]
    check_op(fn, [np.array([0, 2, 3, 3, 4], np.int64), SPLITS, rand(6, 2),
                  np.array([3, 0, 2, 0], np.int64)], specs=specs)


def test_gather_with_matrix_indices():
    def fn(sp, v, i):
        r = tf.gather(_ragged(sp, v), i)
        return r.nested_row_splits + (r.flat_values,)
    specs = [spec((None,), "int32"), spec((None,), "float32", "x1"), spec((None, 2), "int32", "x2")]
    check_op(fn, [SPLITS.astype(np.int32), rand(6), np.array([[3, 0], [2, 2], [1, 0]], np.int32)],
             specs=specs)


# -- RaggedTensorToSparse -------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", TESTED_DTYPES["RaggedTensorToSparse"])
def test_to_sparse(dtype):
    def fn(sp, v):
        s = _ragged(sp, v).to_sparse()
        return s.indices, s.values, s.dense_shape
    specs = [spec((None,), "int64"), spec((None,), dtype, "x1")]
    values = rand(6, dtype=dtype)
    check_op(fn, [SPLITS, values], specs=specs,
             extra_inputs=[[EMPTY_SPLITS, values[:0]], [np.array([0, 0, 0], np.int64), values[:0]]])


def test_to_sparse_nested_with_inner_dims():
    def fn(s1, s2, v):
        s = tf.RaggedTensor.from_nested_row_splits(v, [s1, s2]).to_sparse()
        return s.indices, s.values, s.dense_shape
    specs = [spec((None,), "int32"), spec((None,), "int32", "x1"),
             spec((None, 2, 3), "float32", "x2")]
    check_op(fn, [np.array([0, 2, 3, 3, 4], np.int32), SPLITS.astype(np.int32), rand(6, 2, 3)],
             specs=specs)


# -- refused --------------------------------------------------------------------------------------
def test_map_fn_over_ragged_is_refused_with_the_reason():
    from tf2ir.ir import ConversionError

    def fn(sp, v):
        return tf.map_fn(tf.reduce_sum, _ragged(sp, v), fn_output_signature=tf.float32)
    specs = [spec((None,), "int64"), spec((None,), "float32", "x1")]
    with pytest.raises(ConversionError, match="RaggedTensorToVariant is refused: it packs"):
        converted_op_types(fn, specs)


def test_to_tensor_with_run_time_shape():
    def fn(sp, v, shape):
        return raw.RaggedTensorToTensor(shape=shape, values=v, default_value=0,
                                        row_partition_tensors=[sp],
                                        row_partition_types=["ROW_SPLITS"])
    specs = [spec((None,), "int64"), spec((None,), "int32", "x1"), spec((2,), "int64", "x2")]
    values = rand(6, dtype="int32")
    check_op(fn, [SPLITS, values, np.array([-1, 2], np.int64)], specs=specs,
             extra_inputs=[[SPLITS, values, np.array([2, -1], np.int64)],
                           [SPLITS, values, np.array([6, 5], np.int64)]])


def test_ragged_range_long_float_rows():
    fn = lambda s, l, d: tf.ragged.range(s, l, d).flat_values   # noqa: E731
    specs = [spec((None,), "float32"), spec((None,), "float32", "x1"), spec((), "float32", "x2")]
    check_op(fn, [np.array([0.0, -3.0], np.float32), np.array([100.0, 50.0], np.float32),
                  np.array(0.1, np.float32)], specs=specs, atol=1e-4)
