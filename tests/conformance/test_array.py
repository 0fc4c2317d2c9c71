"""Conformance of the array ops (opp/array.py) against TensorFlow: padding, reshaping,
squeezing, expanding, transposing, casts, identities and the shape queries."""

import numpy as np
import pytest

from tests.conformance.harness import check_op, converted_op_types, rand, spec

tf = pytest.importorskip("tensorflow")
raw = tf.raw_ops

TESTED_DTYPES = {
    "Pad": ("float32", "int32", "int64", "bool"),
    "PadV2": ("float32", "int32"),
    "MirrorPad": ("float32", "int32", "int64"),
    "Transpose": ("float32", "int32", "int64", "bool"),
    "Reshape": ("float32", "int32", "int64", "bool"),
    "Squeeze": ("float32", "int32", "bool"),
    "ExpandDims": ("float32", "int64", "bool"),
    "Cast": ("float32", "float64", "int32", "int64", "bool"),
    "Shape": ("float32", "int32"),
    "IdentityN": ("float32", "int32"),
    "Size": ("float32", "int32"),
    "Rank": ("float32", "bool"),
    "ShapeN": ("float32", "int32"),
    "PlaceholderWithDefault": ("float32",),
    "EnsureShape": ("float32",),
    "CheckNumerics": ("float32",),
}

DTYPES = ["float32", "int32", "int64", "bool"]


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


# -- padding -----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_pad_constant(dtype):
    check_op(lambda x: tf.pad(x, [[1, 2], [0, 3]]), [rand(3, 4, dtype=dtype)])


def test_pad_symbolic_dims():
    check_op(lambda x: tf.pad(x, [[0, 0], [2, 1], [1, 1]]), [rand(2, 3, 4)],
             specs=[spec((None, 3, None))], extra_inputs=[[rand(1, 3, 2)]])


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_pad_v2_constant_values(dtype):
    value = 7 if dtype == "int32" else -1.5
    check_op(lambda x: tf.pad(x, [[1, 0], [2, 2]], constant_values=value), [rand(3, 4, dtype=dtype)])


def test_pad_dynamic_paddings():
    check_op(lambda x, p: tf.pad(x, p), [rand(3, 4), np.array([[1, 0], [2, 1]], np.int32)])


@pytest.mark.parametrize("mode", ["REFLECT", "SYMMETRIC"])
@pytest.mark.parametrize("dtype", ["float32", "int32", "int64"])
def test_mirror_pad(mode, dtype):
    check_op(lambda x: tf.pad(x, [[1, 2], [3, 2]], mode=mode), [rand(4, 5, dtype=dtype)])


@pytest.mark.parametrize("mode", ["REFLECT", "SYMMETRIC"])
def test_mirror_pad_symbolic_batch(mode):
    check_op(lambda x: tf.pad(x, [[0, 0], [2, 2], [1, 0]], mode=mode), [rand(2, 4, 3)],
             specs=[spec((None, 4, 3))], extra_inputs=[[rand(3, 4, 3)]])


# name: (mode, feeds of paddings); every feed runs through the same model
RUNTIME_PADS = {
    "CONSTANT": [[[1, 0], [2, 1]], [[0, 3], [0, 0]]],
    "REFLECT": [[[1, 2], [3, 0]], [[0, 0], [4, 4]], [[3, 3], [0, 1]]],
    "SYMMETRIC": [[[1, 2], [3, 0]], [[0, 0], [5, 5]], [[4, 4], [0, 1]], [[0, 0], [0, 0]]],
}


@pytest.mark.parametrize("mode", sorted(RUNTIME_PADS))
@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_pad_runtime_paddings(mode, dtype):
    """Paddings fed at run time: MirrorPad REFLECT is ONNX Pad's reflect; SYMMETRIC, which
    ONNX has not, gathers mirrored indices per axis."""
    fn = lambda x, p: tf.pad(x, p, mode=mode)  # noqa: E731
    feeds = [[rand(4, 5, dtype=dtype), np.array(p, np.int32)] for p in RUNTIME_PADS[mode]]
    check_op(fn, feeds[0], specs=[spec((4, 5), dtype), spec((2, 2), "int32", "x1")],
             extra_inputs=feeds[1:])


@pytest.mark.parametrize("mode", ["REFLECT", "SYMMETRIC"])
def test_mirror_pad_runtime_paddings_symbolic_dims(mode):
    fn = lambda x, p: tf.pad(x, p, mode=mode)  # noqa: E731
    check_op(fn, [rand(2, 3, 4), np.array([[1, 1], [0, 2], [3, 1]], np.int64)],
             specs=[spec((None, None, 4)), spec((3, 2), "int64", "x1")],
             extra_inputs=[[rand(3, 4, 4), np.array([[0, 2], [3, 1], [0, 0]], np.int64)]])


def test_pad_v2_runtime_paddings_and_value():
    fn = lambda x, p, v: tf.pad(x, p, constant_values=v)  # noqa: E731
    check_op(fn, [rand(3, 4, dtype="int32"), np.array([[2, 0], [1, 1]], np.int64), np.int32(-7)],
             specs=[spec((3, 4), "int32"), spec((2, 2), "int64", "x1"), spec((), "int32", "x2")],
             extra_inputs=[[rand(3, 4, dtype="int32"), np.array([[0, 1], [0, 3]], np.int64),
                            np.int32(5)]])


# -- shapes --------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_transpose(dtype):
    check_op(lambda x: tf.transpose(x, [2, 0, 1]), [rand(2, 3, 4, dtype=dtype)])


def test_transpose_symbolic():
    check_op(lambda x: tf.transpose(x), [rand(2, 3, 4)], specs=[spec((None, 3, None))],
             extra_inputs=[[rand(5, 3, 1)]])


@pytest.mark.parametrize("dtype", DTYPES)
def test_reshape_minus_one(dtype):
    check_op(lambda x: tf.reshape(x, [-1, 6]), [rand(4, 3, 2, dtype=dtype)])


def test_reshape_symbolic_batch():
    check_op(lambda x: tf.reshape(x, [-1, 2, 6]), [rand(2, 3, 4)], specs=[spec((None, 3, 4))],
             extra_inputs=[[rand(5, 3, 4)]])


def test_reshape_from_dynamic_shape():
    fn = lambda x: tf.reshape(x, tf.stack([tf.shape(x)[0], -1]))
    check_op(fn, [rand(2, 3, 4)], specs=[spec((None, 3, 4))], extra_inputs=[[rand(5, 3, 4)]])


@pytest.mark.parametrize("axis", [None, [1], [-1], [1, 3]])
@pytest.mark.parametrize("dtype", ["float32", "int32", "bool"])
def test_squeeze(axis, dtype):
    check_op(lambda x: tf.squeeze(x, axis), [rand(2, 1, 3, 1, dtype=dtype)])


def test_squeeze_symbolic():
    check_op(lambda x: tf.squeeze(x, [-1]), [rand(2, 3, 1)], specs=[spec((None, 3, 1))],
             extra_inputs=[[rand(4, 3, 1)]])


@pytest.mark.parametrize("axis", [0, 2, -1, -3])
@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_expand_dims(axis, dtype):
    check_op(lambda x: tf.expand_dims(x, axis), [rand(2, 3, dtype=dtype)])


def test_expand_dims_symbolic():
    check_op(lambda x: tf.expand_dims(x, -1), [rand(2, 3)], specs=[spec((None, 3))],
             extra_inputs=[[rand(4, 3)]])


def test_squeeze_all_unknown_rank():
    """squeeze without axes on an input whose dims are unknown: ONNX Squeeze without axes
    drops the dims that are 1 at run time, as TF does."""
    fn = lambda x, shape: tf.reshape(tf.squeeze(tf.reshape(x, shape)), [-1, 2])  # noqa: E731
    check_op(fn, [rand(2, 1, 3), np.array([1, 6, 1], np.int32)],
             specs=[spec((2, 1, 3)), spec((None,), "int32", "x1")],
             extra_inputs=[[rand(2, 1, 3), np.array([3, 1, 2], np.int32)]])
    check_op(lambda x: tf.squeeze(x) * 2.0, [rand(1, 3, 1)], specs=[spec((None, 3, None))],
             extra_inputs=[[rand(2, 3, 1)], [rand(1, 3, 4)]])


@pytest.mark.parametrize("dtype", ["float32", "bool"])
def test_expand_dims_runtime_axis(dtype):
    fn = lambda x, a: tf.expand_dims(x, a)  # noqa: E731
    feeds = [[rand(2, 3, dtype=dtype), np.int32(a)] for a in (0, 2, -1, -3, 1)]
    check_op(fn, feeds[0], specs=[spec((2, 3), dtype), spec((), "int32", "x1")],
             extra_inputs=feeds[1:])


def test_expand_dims_runtime_axis_int64_symbolic():
    fn = lambda x, a: tf.expand_dims(x, a) + 1  # noqa: E731
    check_op(fn, [rand(2, 3, 4, dtype="int64"), np.array([-2], np.int64)],
             specs=[spec((None, 3, None), "int64"), spec((1,), "int64", "x1")],
             extra_inputs=[[rand(1, 3, 2, dtype="int64"), np.array([3], np.int64)]])


CASTS = [("float32", "int32"), ("float32", "int64"), ("float64", "int32"), ("float32", "bool"),
         ("int32", "float32"), ("int64", "int32"), ("int32", "bool"), ("bool", "float32"),
         ("bool", "int32"), ("int64", "float64"), ("float32", "float64")]


@pytest.mark.parametrize("src,dst", CASTS)
def test_cast(src, dst):
    x = rand(3, 5, dtype=src, low=-5, high=5)
    if src.startswith("float"):
        x.flat[:6] = [-2.7, -0.5, 0.0, 0.5, 2.7, -1.0]   # truncation toward zero
    check_op(lambda v: tf.cast(v, dst), [x])


@pytest.mark.parametrize("out_type", ["int32", "int64"])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_shape(out_type, dtype):
    check_op(lambda x: tf.shape(x, out_type=out_type), [rand(2, 3, 4, dtype=dtype)],
             specs=[spec((None, 3, None), dtype)], extra_inputs=[[rand(5, 3, 1, dtype=dtype)]])


def test_identity_n():
    check_op(lambda a, b: tf.identity_n([a * 2, b + 1]), [rand(2, 3), rand(4, dtype="int32")])


# -- shape queries -------------------------------------------------------------------------
@pytest.mark.parametrize("out_type", ["int32", "int64"])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_size(out_type, dtype):
    fn = lambda x: raw.Size(input=x, out_type=out_type)   # tf.size folds known shapes
    check_op(fn, [rand(2, 3, dtype=dtype)], specs=[spec((None, 3), dtype)],
             extra_inputs=[[rand(5, 3, dtype=dtype)]])
    check_op(fn, [rand(2, 3, dtype=dtype)])


@pytest.mark.parametrize("dtype", ["float32", "bool"])
def test_rank(dtype):
    check_op(lambda x: raw.Rank(input=x), [rand(2, 3, 1, dtype=dtype)], specs=[spec((None, 3, None), dtype)],
             extra_inputs=[[rand(4, 3, 2, dtype=dtype)]])


@pytest.mark.parametrize("out_type", ["int32", "int64"])
def test_shape_n(out_type):
    fn = lambda a, b: raw.ShapeN(input=[a, b], out_type=out_type)
    check_op(fn, [rand(2, 3), rand(4)], specs=[spec((None, 3)), spec((4,), name="x1")],
             extra_inputs=[[rand(1, 3), rand(4)]])


# -- placeholders and passthroughs ----------------------------------------------------------
def test_placeholder_with_default_uses_the_default():
    fn = lambda x: x + tf.compat.v1.placeholder_with_default(tf.constant([1.0, 2.0, 3.0]), [None])
    assert "PlaceholderWithDefault" in frozen_op_types(fn, [spec((2, 3))])
    check_op(fn, [rand(2, 3)])


def test_ensure_shape_and_check_numerics_pass_through():
    fn = lambda x: tf.debugging.check_numerics(tf.ensure_shape(x, [None, 3]), "bad") * 2.0
    check_op(fn, [rand(2, 3)], specs=[spec((None, 3))], extra_inputs=[[rand(4, 3)]])


FOLDED = {"Size", "Rank", "ShapeN"}


def constant_shape_queries(x):
    return x + tf.cast(raw.Size(input=tf.zeros([2, 3])) + raw.Rank(input=tf.zeros([2, 3])), tf.float32) \
        + tf.cast(raw.ShapeN(input=[tf.zeros([5])])[0][0], tf.float32)


def test_constant_shape_queries_fold():
    ops = converted_op_types(constant_shape_queries, [spec((5,))])
    assert not ops & FOLDED, f"not folded: {ops & FOLDED}"
    check_op(constant_shape_queries, [rand(5)])
