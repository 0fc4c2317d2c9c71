"""Conformance of the sparse and partition ops (opp/sparse.py) against TensorFlow, with the
operands TF allows at run time as graph inputs."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conformance.harness import check_op, rand, spec

tf = pytest.importorskip("tensorflow")
raw = tf.raw_ops

TESTED_DTYPES = {
    "SparseToDense": ("float32", "int32", "int64", "bool"),
    "SparseReshape": ("int64",),
    "SparseFillEmptyRows": ("float32", "int64", "int32"),
    "DynamicPartition": ("float32", "int32", "int64", "bool"),
    "DynamicStitch": ("float32", "int32", "int64"),
    "ParallelDynamicStitch": ("float32",),
}


@pytest.mark.parametrize("dtype", TESTED_DTYPES["SparseToDense"])
def test_sparse_to_dense_with_run_time_operands(dtype):
    indices = np.array([[0, 1], [2, 0], [3, 3]], np.int64)
    values = rand(3, dtype=dtype)
    default = np.array(True if dtype == "bool" else 7, dtype)

    def fn(i, shape, v, d):
        return raw.SparseToDense(sparse_indices=i, output_shape=shape, sparse_values=v,
                                 default_value=d)
    specs = [spec((None, 2), "int64"), spec((2,), "int64", "x1"), spec((None,), dtype, "x2"),
             spec((), dtype, "x3")]
    check_op(fn, [indices, np.array([4, 5], np.int64), values, default], specs=specs,
             extra_inputs=[[indices[:1], np.array([1, 2], np.int64), values[:1], default]])


def test_sparse_to_dense_scalar_value_and_vector_indices():
    fn = lambda i: raw.SparseToDense(sparse_indices=i, output_shape=[6],   # noqa: E731
                                     sparse_values=2.5, default_value=0.0)
    check_op(fn, [np.array([1, 4], np.int32)], specs=[spec((None,), "int32")],
             extra_inputs=[[np.zeros((0,), np.int32)]])


@pytest.mark.parametrize("new_shape", [[2, -1], [-1, 3, 2], [24], [4, 6]])
def test_sparse_reshape(new_shape):
    indices = np.array([[0, 0, 1], [0, 2, 3], [1, 1, 0], [1, 2, 2]], np.int64)
    shape = np.array([2, 3, 4], np.int64)

    def fn(i, s, n):
        out = raw.SparseReshape(input_indices=i, input_shape=s, new_shape=n)
        return out.output_indices, out.output_shape
    specs = [spec((None, 3), "int64"), spec((3,), "int64", "x1"),
             spec((len(new_shape),), "int64", "x2")]
    check_op(fn, [indices, shape, np.array(new_shape, np.int64)], specs=specs,
             extra_inputs=[[indices[:0], shape, np.array(new_shape, np.int64)]])


@pytest.mark.parametrize("dtype", TESTED_DTYPES["SparseFillEmptyRows"])
@pytest.mark.parametrize("rank", [2, 3])
def test_sparse_fill_empty_rows(dtype, rank):
    indices = np.array([[0, 1, 0], [3, 0, 1], [0, 0, 2], [5, 2, 0], [3, 2, 2]],
                       np.int64)[:, :rank]          # rows 1, 2, 4 empty; row 0 out of order
    values = rand(5, dtype=dtype)

    def fn(i, v, shape, d):
        out = raw.SparseFillEmptyRows(indices=i, values=v, dense_shape=shape, default_value=d)
        return (out.output_indices, out.output_values, out.empty_row_indicator,
                out.reverse_index_map)
    specs = [spec((None, rank), "int64"), spec((None,), dtype, "x1"),
             spec((rank,), "int64", "x2"), spec((), dtype, "x3")]
    shape = np.array([7, 3, 3][:rank], np.int64)
    default = np.array(-1, dtype)
    check_op(fn, [indices, values, shape, default], specs=specs,
             extra_inputs=[[indices[:0], values[:0], shape, default],          # all empty
                           [indices[:2], values[:2], np.array([4, 3, 3][:rank], np.int64),
                            default]])


@pytest.mark.parametrize("dtype", TESTED_DTYPES["DynamicPartition"])
@pytest.mark.parametrize("parts_shape", [(6,), (2, 3)])
def test_dynamic_partition(dtype, parts_shape):
    data = rand(*parts_shape, 4, dtype=dtype)
    partitions = np.array([0, 2, 1, 0, 2, 2], np.int32).reshape(parts_shape)

    def fn(d, p):
        return tf.dynamic_partition(d, p, 3)
    specs = [spec((None,) * len(parts_shape) + (4,), dtype), spec((None,) * len(parts_shape),
                                                                   "int32", "x1")]
    check_op(fn, [data, partitions], specs=specs,
             extra_inputs=[[data, np.zeros(parts_shape, np.int32)]])   # empty partitions


@pytest.mark.parametrize("dtype", TESTED_DTYPES["DynamicStitch"])
def test_dynamic_stitch_with_repeated_indices(dtype):
    a, b = rand(3, 2, dtype=dtype), rand(2, 2, 2, dtype=dtype)

    def fn(i0, i1, d0, d1):
        return tf.dynamic_stitch([i0, i1], [d0, d1])
    specs = [spec((None,), "int32"), spec((None, 2), "int32", "x1"), spec((None, 2), dtype, "x2"),
             spec((None, 2, 2), dtype, "x3")]
    i0, i1 = np.array([0, 4, 2], np.int32), np.array([[1, 5], [4, 3]], np.int32)   # 4 twice
    check_op(fn, [i0, i1, a, b], specs=specs)


def test_parallel_dynamic_stitch_without_repeats():
    def fn(i0, i1, d0, d1):
        return raw.ParallelDynamicStitch(indices=[i0, i1], data=[d0, d1])
    check_op(fn, [np.array([0, 3], np.int32), np.array([2, 1], np.int32), rand(2, 3), rand(2, 3)])
