"""Conformance of the tensor-creation ops (opp/creation.py) against TensorFlow: Fill, ZerosLike,
OnesLike, Range, LinSpace, Tile and BroadcastTo."""

import numpy as np
import pytest

from tests.conformance.harness import check_op, converted_op_types, rand, single_op_graph, spec

tf = pytest.importorskip("tensorflow")
raw = tf.raw_ops

TESTED_DTYPES = {
    "Fill": ("float32", "int32", "int64", "bool"),
    "Range": ("float32", "float64", "int32", "int64"),
    "LinSpace": ("float32", "float64"),
    "Tile": ("float32", "int32", "int64", "bool"),
    "BroadcastTo": ("float32", "int32", "bool"),
    "ZerosLike": ("float32", "int32", "bool", "float16"),
    "OnesLike": ("float32", "int64", "bool", "bfloat16"),
}

DTYPES = ["float32", "int32", "int64", "bool"]


def cases_and_dtypes(cases, dtypes=DTYPES):
    """Every case in the first dtype, then the first case in each other dtype (keeps the file fast)."""
    return [(case, dtypes[0]) for case in cases] + [(cases[0], d) for d in dtypes[1:]]


def frozen_op_types(fn, specs):
    """The TF op types of `fn`'s frozen graph (to be sure the op under test is in it)."""
    import os
    import tempfile
    from tensorboard.compat.proto import graph_pb2
    from tf2ir.tools.models import freeze_function
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "op.pb")
        freeze_function(fn, specs, path)
        graph_def = graph_pb2.GraphDef()
        with open(path, "rb") as f:
            graph_def.ParseFromString(f.read())
    return {node.op for node in graph_def.node}


# -- Fill, ZerosLike, OnesLike --------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_fill(dtype):
    value = rand(dtype=dtype)
    check_op(lambda v: tf.fill([2, 3, 1], v), [value])


def test_fill_symbolic_dims():
    check_op(lambda x: tf.fill(tf.shape(x), 2.5), [rand(2, 3)], specs=[spec((None, 3))],
             extra_inputs=[[rand(5, 3)]])


@pytest.mark.parametrize("op,dtype", [("ZerosLike", "float32"), ("ZerosLike", "int32"),
                                      ("ZerosLike", "bool"), ("ZerosLike", "float16"),
                                      ("OnesLike", "float32"), ("OnesLike", "int64"),
                                      ("OnesLike", "bool"), ("OnesLike", "bfloat16")])
def test_fill_like(op, dtype):
    fn = tf.zeros_like if op == "ZerosLike" else tf.ones_like
    if dtype == "bfloat16":   # a None dim keeps TF from making the fill a constant
        check_op(lambda x: tf.cast(fn(tf.cast(x, tf.bfloat16)), tf.float32), [rand(2, 3)],
                 specs=[spec([None, 3], "float32")])
        return
    check_op(fn, [rand(2, 3, dtype=dtype)], specs=[spec([None, 3], dtype)],
             extra_inputs=[[rand(4, 3, dtype=dtype)]])


def test_fill_like_static_shape():
    """tf.zeros_like folds a static shape into a constant itself; the raw ops do not."""
    check_op(lambda x: [raw.ZerosLike(x=x) + x, raw.OnesLike(x=x)], [rand(2, 3, 4)])


# -- Range, LinSpace --------------------------------------------------------------------------
@pytest.mark.parametrize("bounds,dtype", cases_and_dtypes(
    [(0, 10, 3), (5, -3, -2), (3, 3, 1), (7, 1, -3)], ["int32", "int64", "float32", "float64"])
    + [((5, -3, -2), "float32"), ((3, 3, 1), "float64")])
def test_range(bounds, dtype):
    start, limit, delta = bounds
    inputs = [np.array(v, dtype) for v in (start, limit, delta)]
    fn = lambda a, b, c: tf.range(a, b, c)
    specs = [spec((), dtype, f"x{i}") for i in range(3)]
    if (start, limit, delta) == (0, 10, 3):
        assert "Range" in frozen_op_types(fn, specs)
    check_op(fn, inputs, extra_inputs=[[np.array(v, dtype) for v in (1, 8, 2)]])


def test_range_float_steps():
    check_op(lambda a: tf.range(a, 2.0, 0.3), [np.float32(-1.1)])


def test_range_from_shape_folds():
    # A range over a known dim is all constants; folding must keep it right.
    check_op(lambda x: x + tf.cast(tf.range(tf.shape(x)[1]), tf.float32), [rand(2, 5)])


@pytest.mark.parametrize("num", [1, 2, 7])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_linspace(num, dtype):
    check_op(lambda a, b: raw.LinSpace(start=a, stop=b, num=num),
             [np.array(-1.5, dtype), np.array(4.0, dtype)])


def test_linspace_dynamic_num():
    check_op(lambda a, n: raw.LinSpace(start=a, stop=tf.constant(3.0), num=n),
             [np.float32(0.5), np.int32(5)],
             extra_inputs=[[np.float32(-2.0), np.int32(1)]])


# -- Tile, BroadcastTo ------------------------------------------------------------------------
@pytest.mark.parametrize("multiples,dtype", cases_and_dtypes([[2, 3], [1, 1], [0, 2]]))
def test_tile(multiples, dtype):
    check_op(lambda x: tf.tile(x, multiples), [rand(2, 3, dtype=dtype)])


def test_tile_symbolic():
    check_op(lambda x: tf.tile(x, [3, 1, 2]), [rand(1, 2, 3)], specs=[spec((None, 2, None))],
             extra_inputs=[[rand(2, 2, 1)]])


@pytest.mark.parametrize("dtype", ["float32", "int32", "bool"])
def test_broadcast_to(dtype):
    check_op(lambda x: tf.broadcast_to(x, [2, 3, 4]), [rand(3, 1, dtype=dtype)])


def test_broadcast_to_symbolic():
    fn = lambda x, y: tf.broadcast_to(x, tf.shape(y))
    check_op(fn, [rand(1, 3), rand(2, 3)], specs=[spec((1, 3)), spec((None, 3), name="x1")],
             extra_inputs=[[rand(1, 3), rand(4, 3)]])


# -- folding ---------------------------------------------------------------------------------
FOLDED = {"Range", "Fill", "BroadcastTo", "Tile", "LinSpace"}


def constant_creations(x):
    five = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0])
    parts = [tf.cast(tf.range(1, 6), tf.float32), tf.fill([5], 2.0),
             tf.broadcast_to(tf.constant([0.5]), [5]), tf.tile(five[:1], [5]),
             raw.LinSpace(start=tf.constant(0.0), stop=tf.constant(1.0), num=5)]
    return x + sum(parts[1:], parts[0])


def test_constant_creations_fold():
    ops = converted_op_types(constant_creations, [spec((5,))])
    assert not ops & FOLDED, f"not folded: {ops & FOLDED}"
    check_op(constant_creations, [rand(5)])


def test_ones_like_of_a_constant_folds():
    from tf2ir.ir.passes import fold_constants
    g, _ = single_op_graph("OnesLike", [np.zeros((2, 1), np.int64)])
    assert fold_constants(g) == 1
    folded = g.outputs[0].producer.inputs[0].const_value
    assert folded.dtype == np.int64
    np.testing.assert_array_equal(folded, np.ones((2, 1), np.int64))
