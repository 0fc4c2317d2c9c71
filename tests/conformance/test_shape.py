"""Conformance of the shape, indexing and tensor-creation ops (opp/shape.py) against TensorFlow."""

import numpy as np
import pytest

from tests.conformance.harness import check_op, convert_function, rand

tf = pytest.importorskip("tensorflow")
raw = tf.raw_ops

TESTED_DTYPES = {
    "Slice": ("float32", "int32", "int64", "bool"),
    "Tile": ("float32", "int32", "int64", "bool"),
    "Fill": ("float32", "int32", "int64", "bool"),
    "Range": ("float32", "float64", "int32", "int64"),
    "LinSpace": ("float32", "float64"),
    "Size": ("float32", "int32"),
    "Rank": ("float32", "bool"),
    "ShapeN": ("float32", "int32"),
    "Where": ("float32", "float64", "int32", "int64", "bool"),
    "OneHot": ("float32", "int32", "int64", "bool"),
    "Unique": ("float32", "float64", "int32", "int64"),
    "InvertPermutation": ("int32", "int64"),
    "ReverseV2": ("float32", "int32", "int64", "bool"),
    "ReverseSequence": ("float32", "int32"),
    "BroadcastTo": ("float32", "int32", "bool"),
    "GatherNd": ("float32", "int32", "int64", "bool"),
    "ScatterNd": ("float32", "int32", "int64"),
    "TensorScatterUpdate": ("float32", "int32", "bool"),
    "TensorScatterAdd": ("float32", "int32", "int64"),
    "Concat": ("float32", "int32"),
    "SpaceToBatchND": ("float32", "int32"),
    "BatchToSpaceND": ("float32", "int32"),
    "DepthToSpace": ("float32", "int32", "bool"),
    "SpaceToDepth": ("float32", "int32", "bool"),
    "MatrixBandPart": ("float32", "int32", "bool"),
    "PlaceholderWithDefault": ("float32",),
    "EnsureShape": ("float32",),
    "CheckNumerics": ("float32",),
}

DTYPES = ["float32", "int32", "int64", "bool"]


def cases_and_dtypes(cases, dtypes=DTYPES):
    """Every case in the first dtype, then the first case in each other dtype (keeps the file fast)."""
    return [(case, dtypes[0]) for case in cases] + [(cases[0], d) for d in dtypes[1:]]


def spec(shape, dtype="float32", name="x0"):
    return tf.TensorSpec(shape, tf.as_dtype(dtype), name=name)


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


def converted_op_types(fn, specs):
    """The IR op types left after converting and compiling `fn` (constants folded)."""
    import tempfile
    with tempfile.TemporaryDirectory() as directory:
        _, graph, _, _ = convert_function(fn, specs, directory)
        return {node.op_type for node in graph.nodes}


# -- slicing ---------------------------------------------------------------------------------
@pytest.mark.parametrize("bounds,dtype", cases_and_dtypes(
    [([1, 0, 2], [2, -1, 3]), ([0, 2, 0], [-1, 1, -1]), ([2, 3, 5], [0, 1, 1])]))
def test_slice(bounds, dtype):
    begin, size = bounds
    check_op(lambda x: tf.slice(x, begin, size), [rand(3, 4, 6, dtype=dtype)])


def test_slice_symbolic_and_dynamic_bounds():
    fn = lambda x, b, s: tf.slice(x, b, s)
    check_op(fn, [rand(4, 5), np.array([1, 2], np.int64), np.array([-1, 2], np.int64)],
             specs=[spec((None, 5)), spec((2,), "int64", "x1"), spec((2,), "int64", "x2")],
             extra_inputs=[[rand(6, 5), np.array([3, 0], np.int64), np.array([2, -1], np.int64)]])


@pytest.mark.parametrize("axis,dtype", cases_and_dtypes([[0, 2], [0], [-1], []]))
def test_reverse_v2(axis, dtype):
    check_op(lambda x: tf.reverse(x, axis), [rand(2, 3, 4, dtype=dtype)])


def test_reverse_v2_symbolic():
    check_op(lambda x: tf.reverse(x, [0, 1]), [rand(3, 4)], specs=[spec((None, None))],
             extra_inputs=[[rand(1, 2)]])


@pytest.mark.parametrize("seq_axis,batch_axis,dtype", [(1, 0, "float32"), (0, 1, "int32"),
                                                      (2, 0, "float32"), (2, 1, "int32")])
def test_reverse_sequence(seq_axis, batch_axis, dtype):
    x = rand(3, 4, 5, dtype=dtype)
    lengths = np.array([0, 1, 3, 4, 5][:x.shape[batch_axis]], np.int64)
    lengths = np.minimum(lengths, x.shape[seq_axis])
    check_op(lambda v: tf.reverse_sequence(v, lengths, seq_axis=seq_axis, batch_axis=batch_axis), [x])


def test_reverse_sequence_symbolic():
    fn = lambda x, n: tf.reverse_sequence(x, n, seq_axis=1, batch_axis=0)
    check_op(fn, [rand(2, 5, 3), np.array([5, 2], np.int32)],
             specs=[spec((None, None, 3)), spec((None,), "int32", "x1")],
             extra_inputs=[[rand(3, 4, 3), np.array([1, 4, 3], np.int32)]])


# -- creation ----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_fill(dtype):
    value = rand(dtype=dtype)
    check_op(lambda v: tf.fill([2, 3, 1], v), [value])


def test_fill_symbolic_dims():
    check_op(lambda x: tf.fill(tf.shape(x), 2.5), [rand(2, 3)], specs=[spec((None, 3))],
             extra_inputs=[[rand(5, 3)]])


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


# -- sizes -----------------------------------------------------------------------------------
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


# -- indices -------------------------------------------------------------------------------------
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


# -- gather and scatter ---------------------------------------------------------------------------
@pytest.mark.parametrize("indices,dtype", cases_and_dtypes(
    [[[1, 0], [2, 3]], [[2], [0]], [[[1, 2, 0]], [[0, 0, 1]]]]))
def test_gather_nd(indices, dtype):
    check_op(lambda x, i: tf.gather_nd(x, i), [rand(3, 4, 2, dtype=dtype), np.array(indices, np.int32)])


def test_gather_nd_symbolic():
    check_op(lambda x, i: tf.gather_nd(x, i), [rand(3, 4), np.array([[2, 1], [0, 3]], np.int64)],
             specs=[spec((None, 4)), spec((None, 2), "int64", "x1")],
             extra_inputs=[[rand(5, 4), np.array([[4, 0]], np.int64)]])


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


# -- concat v1, band part, placeholders ---------------------------------------------------------
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_concat_v1(axis, dtype):
    fn = lambda a, b: raw.Concat(concat_dim=axis, values=[a, b, a])
    check_op(fn, [rand(2, 3, dtype=dtype), rand(2, 3, dtype=dtype)])


def test_concat_v1_symbolic():
    fn = lambda a, b: raw.Concat(concat_dim=0, values=[a, b])
    check_op(fn, [rand(2, 3), rand(1, 3)], specs=[spec((None, 3)), spec((None, 3), name="x1")],
             extra_inputs=[[rand(4, 3), rand(2, 3)]])


@pytest.mark.parametrize("bands,dtype", cases_and_dtypes([(1, 2), (0, -1), (-1, 0), (0, 0), (-1, -1)],
                                                        ["float32", "int32", "bool"]))
def test_matrix_band_part(bands, dtype):
    lower, upper = bands
    check_op(lambda x: tf.linalg.band_part(x, lower, upper), [rand(2, 4, 5, dtype=dtype)])


def test_matrix_band_part_symbolic_dynamic_bands():
    fn = lambda x, lo, up: tf.linalg.band_part(x, lo, up)
    check_op(fn, [rand(3, 4), np.int64(1), np.int64(-1)],
             specs=[spec((None, None)), spec((), "int64", "x1"), spec((), "int64", "x2")],
             extra_inputs=[[rand(5, 2), np.int64(0), np.int64(1)]])


def test_placeholder_with_default_uses_the_default():
    fn = lambda x: x + tf.compat.v1.placeholder_with_default(tf.constant([1.0, 2.0, 3.0]), [None])
    assert "PlaceholderWithDefault" in frozen_op_types(fn, [spec((2, 3))])
    check_op(fn, [rand(2, 3)])


def test_ensure_shape_and_check_numerics_pass_through():
    fn = lambda x: tf.debugging.check_numerics(tf.ensure_shape(x, [None, 3]), "bad") * 2.0
    check_op(fn, [rand(2, 3)], specs=[spec((None, 3))], extra_inputs=[[rand(4, 3)]])


# -- space, batch and depth ---------------------------------------------------------------------
@pytest.mark.parametrize("case,dtype", cases_and_dtypes(
    [([2, 3], [[1, 1], [2, 1]]), ([2, 2], [[0, 0], [0, 0]]), ([3], [[1, 1]])], ["float32", "int32"]))
def test_space_to_batch_nd(case, dtype):
    block, pads = case
    check_op(lambda x: tf.space_to_batch_nd(x, block, pads), [rand(2, 4, 6, 3, dtype=dtype)])


def test_space_to_batch_nd_symbolic():
    fn = lambda x: tf.space_to_batch_nd(x, [2, 2], [[1, 1], [0, 2]])
    check_op(fn, [rand(1, 4, 4, 2)], specs=[spec((None, None, None, 2))],
             extra_inputs=[[rand(3, 2, 6, 2)]])


@pytest.mark.parametrize("case,dtype", cases_and_dtypes(
    [([2, 3], [[1, 0], [2, 1]]), ([2, 2], [[0, 0], [0, 0]]), ([3], [[1, 1]])], ["float32", "int32"]))
def test_batch_to_space_nd(case, dtype):
    block, crops = case
    batch = 2 * int(np.prod(block))
    check_op(lambda x: tf.batch_to_space(x, block, crops), [rand(batch, 3, 4, 2, dtype=dtype)])


def test_batch_to_space_nd_symbolic():
    fn = lambda x: tf.batch_to_space(x, [2, 2], [[0, 1], [1, 0]])
    check_op(fn, [rand(4, 3, 3, 2)], specs=[spec((None, None, None, 2))],
             extra_inputs=[[rand(8, 2, 5, 2)]])


@pytest.mark.parametrize("block,dtype", cases_and_dtypes([2, 3], ["float32", "int32", "bool"]))
def test_depth_to_space(block, dtype):
    check_op(lambda x: tf.nn.depth_to_space(x, block), [rand(2, 2, 3, 2 * block * block, dtype=dtype)])


def test_depth_to_space_symbolic():
    check_op(lambda x: tf.nn.depth_to_space(x, 2), [rand(1, 2, 3, 8)], specs=[spec((None, None, None, 8))],
             extra_inputs=[[rand(2, 1, 4, 8)]])


@pytest.mark.parametrize("block,dtype", cases_and_dtypes([2, 3], ["float32", "int32", "bool"]))
def test_space_to_depth(block, dtype):
    check_op(lambda x: tf.nn.space_to_depth(x, block), [rand(2, 2 * block, 3 * block, 3, dtype=dtype)])


def test_space_to_depth_symbolic():
    check_op(lambda x: tf.nn.space_to_depth(x, 2), [rand(1, 4, 6, 3)], specs=[spec((None, None, None, 3))],
             extra_inputs=[[rand(2, 2, 2, 3)]])


def test_depth_to_space_rejects_nchw():
    from tf2ir.ir import ConversionError
    fn = lambda x: raw.DepthToSpace(input=x, block_size=2, data_format="NCHW")
    with pytest.raises(ConversionError, match="NHWC only"):
        converted_op_types(fn, [spec((1, 8, 2, 2))])


FOLDED = {"Range", "Fill", "ReverseV2", "Slice", "BroadcastTo", "Tile", "LinSpace", "InvertPermutation",
          "Size", "Rank", "ShapeN"}


def constant_shape_ops(x):
    five = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0])
    parts = [tf.cast(tf.range(1, 6), tf.float32), tf.fill([5], 2.0), tf.reverse(five, [0]),
             tf.slice(tf.constant([9.0, 8.0, 7.0, 6.0, 5.0, 4.0, 3.0]), [1], [-1])[:5],
             tf.broadcast_to(tf.constant([0.5]), [5]), tf.tile(five[:1], [5]),
             raw.LinSpace(start=tf.constant(0.0), stop=tf.constant(1.0), num=5),
             tf.cast(tf.math.invert_permutation([4, 0, 3, 1, 2]), tf.float32),
             tf.cast(raw.Size(input=tf.zeros([2, 3])) + raw.Rank(input=tf.zeros([2, 3])), tf.float32)
             + tf.cast(raw.ShapeN(input=[tf.zeros([5])])[0][0], tf.float32)]
    return x + sum(parts[1:], parts[0])


def test_constant_shape_ops_fold():
    ops = converted_op_types(constant_shape_ops, [spec((5,))])
    assert not ops & FOLDED, f"not folded: {ops & FOLDED}"
    check_op(constant_shape_ops, [rand(5)])
