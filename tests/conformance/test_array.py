"""Conformance of the array ops (opp/array.py) against TensorFlow: slicing with every
mask, padding, reshaping, casts, packing, splitting, gathering."""

import numpy as np
import pytest

from tests.conformance.harness import check_op, rand

tf = pytest.importorskip("tensorflow")

TESTED_DTYPES = {
    "StridedSlice": ("float32", "int32", "int64", "bool"),
    "Pad": ("float32", "int32", "int64", "bool"),
    "PadV2": ("float32", "int32"),
    "MirrorPad": ("float32", "int32", "int64"),
    "Transpose": ("float32", "int32", "int64", "bool"),
    "Reshape": ("float32", "int32", "int64", "bool"),
    "Squeeze": ("float32", "int32", "bool"),
    "ExpandDims": ("float32", "int64", "bool"),
    "Cast": ("float32", "float64", "int32", "int64", "bool"),
    "Shape": ("float32", "int32"),
    "ConcatV2": ("float32", "int32", "int64", "bool"),
    "Pack": ("float32", "int32", "bool"),
    "Unpack": ("float32", "int64", "bool"),
    "Split": ("float32", "int32"),
    "SplitV": ("float32", "int64"),
    "GatherV2": ("float32", "int32", "int64", "bool"),
    "IdentityN": ("float32", "int32"),
}

DTYPES = ["float32", "int32", "int64", "bool"]


def spec(shape, dtype="float32", name="x0"):
    return tf.TensorSpec(shape, tf.as_dtype(dtype), name=name)


# -- StridedSlice -------------------------------------------------------------------------
SLICES = {
    "basic": lambda x: x[1:3, 0:4:2],
    "begin_end_mask": lambda x: x[:, ::2, 1:],
    "negative_stride": lambda x: x[::-1, 3:0:-2],
    "negative_begin": lambda x: x[-2:, -3::-1],
    "out_of_range": lambda x: x[1:100, -100:2],
    "ellipsis_shrink": lambda x: x[..., 1],
    "ellipsis_middle": lambda x: x[1:, ..., ::-1],
    "shrink_last": lambda x: x[-1, :, -1],
    "new_axis": lambda x: x[:, tf.newaxis, 1:],
    "new_axis_edges": lambda x: x[tf.newaxis, ..., tf.newaxis],
    "shrink_then_new": lambda x: x[1, tf.newaxis, ::-1],
    "all_masks": lambda x: x[tf.newaxis, -1, ..., 1:3, tf.newaxis],
}


@pytest.mark.parametrize("case", sorted(SLICES))
def test_strided_slice_masks(case):
    check_op(SLICES[case], [rand(4, 5, 6)])


@pytest.mark.parametrize("dtype", ["int32", "int64", "bool"])
def test_strided_slice_dtypes(dtype):
    check_op(lambda x: x[::-1, 1, tf.newaxis], [rand(3, 4, dtype=dtype)])


def test_strided_slice_explicit_masks():
    fn = lambda x: tf.strided_slice(x, [1, 0, 2], [3, 0, 5], [1, 1, -1], begin_mask=0b100,
                                    end_mask=0b110, shrink_axis_mask=0b010)
    check_op(fn, [rand(4, 5, 6)])


def test_strided_slice_symbolic_dims():
    check_op(lambda x: x[1:, ::-2, tf.newaxis, -1], [rand(4, 5, 6)],
             specs=[spec((None, None, 6))], extra_inputs=[[rand(7, 3, 6)]])


def test_strided_slice_dynamic_begin():
    fn = lambda x, b: tf.strided_slice(x, tf.stack([b, 0]), tf.stack([b + 2, 3]), [1, 1])
    check_op(fn, [rand(5, 4), np.int32(1)], specs=[spec((None, 4)), spec((), "int32", "x1")],
             extra_inputs=[[rand(6, 4), np.int32(3)]])


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


# -- concat, pack, split -------------------------------------------------------------------------
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


# -- gather, identity ------------------------------------------------------------------------
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


def test_identity_n():
    check_op(lambda a, b: tf.identity_n([a * 2, b + 1]), [rand(2, 3), rand(4, dtype="int32")])


def test_constant_strided_slice_and_shape_fold():
    import tempfile
    from tests.conformance.harness import convert_function
    table = tf.constant(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    fn = lambda x: x + table[-1, ::-2, tf.newaxis, 1:3] + tf.cast(tf.shape(table)[2], tf.float32)
    with tempfile.TemporaryDirectory() as directory:
        _, graph, _, _ = convert_function(fn, [spec((2, 1, 2))], directory)
    assert not {n.op_type for n in graph.nodes} & {"StridedSlice", "Shape"}
    check_op(fn, [rand(2, 1, 2)])
