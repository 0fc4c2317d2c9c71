"""Conformance of the concatenation ops and their inverses (opp/concat.py) against TensorFlow:
ConcatV2 and Concat (v1), Pack, Unpack, Split and SplitV."""

import numpy as np
import pytest

from tests.conformance.harness import check_op, rand, spec

tf = pytest.importorskip("tensorflow")
raw = tf.raw_ops

TESTED_DTYPES = {
    "ConcatV2": ("float32", "int32", "int64", "bool"),
    "Pack": ("float32", "int32", "bool"),
    "Unpack": ("float32", "int64", "bool"),
    "Split": ("float32", "int32"),
    "SplitV": ("float32", "int64", "bool"),
    "Concat": ("float32", "int32"),
}

DTYPES = ["float32", "int32", "int64", "bool"]


@pytest.mark.parametrize("axis", [0, 1, -1, -2])
@pytest.mark.parametrize("dtype", DTYPES)
def test_concat_v2(axis, dtype):
    check_op(lambda a, b: tf.concat([a, b, a], axis), [rand(2, 3, dtype=dtype), rand(2, 3, dtype=dtype)])


def test_concat_v2_symbolic():
    check_op(lambda a, b: tf.concat([a, b], -1), [rand(2, 3), rand(2, 4)],
             specs=[spec((None, 3)), spec((None, None), name="x1")],
             extra_inputs=[[rand(5, 3), rand(5, 1)]])


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("dtype", ["float32", "int32", "bool"])
def test_pack(axis, dtype):
    check_op(lambda a, b: tf.stack([a, b], axis), [rand(2, 3, dtype=dtype), rand(2, 3, dtype=dtype)])


def test_pack_symbolic():
    check_op(lambda a, b: tf.stack([a, b], -1), [rand(2, 3), rand(2, 3)],
             specs=[spec((None, 3)), spec((None, 3), name="x1")], extra_inputs=[[rand(4, 3), rand(4, 3)]])


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_unpack(axis, dtype):
    check_op(lambda x: tf.unstack(x, axis=axis), [rand(3, 3, 3, dtype=dtype)])


def test_unpack_symbolic():
    check_op(lambda x: tf.unstack(x, axis=1), [rand(2, 3)], specs=[spec((None, 3))],
             extra_inputs=[[rand(5, 3)]])


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_split(axis, dtype):
    check_op(lambda x: tf.split(x, 3, axis=axis), [rand(3, 6, 9, dtype=dtype)])


def test_split_symbolic():
    check_op(lambda x: tf.split(x, 2, axis=-1), [rand(2, 4)], specs=[spec((None, 4))],
             extra_inputs=[[rand(3, 4)]])


@pytest.mark.parametrize("sizes,axis", [([2, -1, 1], 1), ([1, 3], -1), ([-1, 2], 0)])
@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_split_v(sizes, axis, dtype):
    check_op(lambda x: tf.split(x, sizes, axis=axis), [rand(5, 6, 4, dtype=dtype)])


def test_split_v_symbolic_other_dim():
    check_op(lambda x: tf.split(x, [1, -1], axis=1), [rand(2, 4)], specs=[spec((None, 4))],
             extra_inputs=[[rand(3, 4)]])


@pytest.mark.parametrize("axis", [1, -1])
@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_split_v_runtime_sizes(axis, dtype):
    """size_splits fed at run time, a -1 entry (the rest of the dim) included."""
    fn = lambda x, s: raw.SplitV(value=x, size_splits=s, axis=axis, num_split=3)  # noqa: E731
    feeds = [[rand(2, 6, 6, dtype=dtype), np.array(s, np.int32)]
             for s in ([1, -1, 2], [0, 6, 0], [-1, 3, 3], [2, 2, -1])]
    check_op(fn, feeds[0], specs=[spec((2, 6, 6), dtype), spec((3,), "int32", "x1")],
             extra_inputs=feeds[1:])


def test_split_v_runtime_sizes_symbolic_dim():
    fn = lambda x, s: raw.SplitV(value=x, size_splits=s, axis=0, num_split=2)  # noqa: E731
    check_op(fn, [rand(5, 3), np.array([2, -1], np.int64)],
             specs=[spec((None, 3)), spec((2,), "int64", "x1")],
             extra_inputs=[[rand(7, 3), np.array([-1, 7], np.int64)]])


def test_split_v_constant_minus_one_over_symbolic_dim():
    check_op(lambda x: tf.split(x, [2, -1], axis=0), [rand(5, 3)], specs=[spec((None, 3))],
             extra_inputs=[[rand(3, 3)]])


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_concat_v1(axis, dtype):
    fn = lambda a, b: raw.Concat(concat_dim=axis, values=[a, b, a])
    check_op(fn, [rand(2, 3, dtype=dtype), rand(2, 3, dtype=dtype)])


def test_concat_v1_symbolic():
    fn = lambda a, b: raw.Concat(concat_dim=0, values=[a, b])
    check_op(fn, [rand(2, 3), rand(1, 3)], specs=[spec((None, 3)), spec((None, 3), name="x1")],
             extra_inputs=[[rand(4, 3), rand(2, 3)]])
