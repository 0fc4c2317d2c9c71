"""Conformance of the segment reductions (opp/segment.py) against TensorFlow: Segment*,
UnsortedSegment* (negative ids dropped, empty segments at the dtype's limits), SparseSegment*
(with and without num_segments), Bincount/DenseBincount and TensorScatterMax/Min/Sub."""

import numpy as np
import pytest

from tests.conformance.harness import check_op, rand, single_op_graph, spec

tf = pytest.importorskip("tensorflow")
raw = tf.raw_ops

ALL = ("float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64",
       "uint8", "uint16", "uint32", "uint64")
FLOATS = ("float16", "bfloat16", "float32", "float64")
TESTED_DTYPES = {
    "SegmentSum": ALL, "SegmentMean": ALL, "SegmentMax": ALL, "SegmentMin": ALL,
    "SegmentProd": ALL,
    "UnsortedSegmentSum": ALL, "UnsortedSegmentMax": ALL, "UnsortedSegmentMin": ALL,
    "UnsortedSegmentProd": ALL,
    "SparseSegmentSum": ALL, "SparseSegmentMean": FLOATS, "SparseSegmentSqrtN": FLOATS,
    "SparseSegmentSumWithNumSegments": ("float32", "int32"),
    "SparseSegmentMeanWithNumSegments": ("float32", "float64"),
    "SparseSegmentSqrtNWithNumSegments": ("float32", "float16"),
    "Bincount": ("int32", "int64", "float32", "float64"),
    "DenseBincount": ("int32", "int64", "float32", "float64"),
    "TensorScatterMax": ALL, "TensorScatterMin": ALL, "TensorScatterSub": ALL,
}


def data(dtype, *shape):
    """Test data of `dtype` (bfloat16 data enters as float32 and is cast in the graph)."""
    return rand(*shape, dtype="float32" if dtype == "bfloat16" else dtype, low=-3, high=3)


def in_dtype(fn, dtype):
    """fn applied to its first argument cast to `dtype` (bfloat16), the results back to float32."""
    if dtype != "bfloat16":
        return fn
    return lambda x, *rest: [tf.cast(y, tf.float32) for y in tf.nest.flatten(
        fn(tf.cast(x, tf.bfloat16), *rest))]


# -- sorted segments -------------------------------------------------------------------------
SORTED_IDS = [0, 0, 2, 2, 2, 3, 6]           # segments 1, 4 and 5 are empty
SEGMENT_OPS = {
    "SegmentSum": tf.math.segment_sum, "SegmentMean": tf.math.segment_mean,
    "SegmentMax": tf.math.segment_max, "SegmentMin": tf.math.segment_min,
    "SegmentProd": tf.math.segment_prod,
}


@pytest.mark.parametrize("dtype", ALL)
def test_segment_reductions(dtype):
    fns = [fn for _, fn in sorted(SEGMENT_OPS.items())]
    fn = in_dtype(lambda x: [f(x, SORTED_IDS) for f in fns], dtype)
    check_op(fn, [data(dtype, 7, 2)], atol=0.05 if dtype in ("float16", "bfloat16") else None)


def test_segment_ids_at_run_time_and_unknown_shapes():
    specs = [spec((None, None), "float64"), spec((None,), "int64", "x1")]
    fn = lambda x, ids: [f(x, ids) for _, f in sorted(SEGMENT_OPS.items())]  # noqa: E731
    check_op(fn, [rand(6, 3, dtype="float64"), np.array([1, 1, 1, 4, 4, 5])], specs=specs,
             extra_inputs=[[rand(0, 2, dtype="float64"), np.zeros(0, np.int64)],
                           [rand(2, 5, dtype="float64"), np.array([0, 0])]])


def test_segment_of_scalars_and_higher_rank_rows():
    check_op(lambda x: [tf.math.segment_max(x, [0, 1, 1]), tf.math.segment_mean(x, [0, 1, 1])],
             [rand(3)])
    check_op(lambda x: tf.math.segment_sum(x, [0, 0, 3]), [rand(3, 2, 2, 2)])


# -- unsorted segments ----------------------------------------------------------------------------
UNSORTED_OPS = {
    "UnsortedSegmentSum": tf.math.unsorted_segment_sum,
    "UnsortedSegmentMax": tf.math.unsorted_segment_max,
    "UnsortedSegmentMin": tf.math.unsorted_segment_min,
    "UnsortedSegmentProd": tf.math.unsorted_segment_prod,
}


@pytest.mark.parametrize("dtype", ALL)
def test_unsorted_segment_reductions(dtype):
    """Negative ids are dropped; empty segments are 0, 1, lowest and highest."""
    ids = [3, -1, 0, 3, 5, 0, -4]
    fns = [fn for _, fn in sorted(UNSORTED_OPS.items())]
    fn = in_dtype(lambda x: [f(x, ids, 7) for f in fns], dtype)
    check_op(fn, [data(dtype, 7, 3)], atol=0.05 if dtype in ("float16", "bfloat16") else None)


def test_unsorted_segment_ids_of_rank_two_and_run_time_count():
    specs = [spec((None, 3, 2), "float32"), spec((None, 3), "int32", "x1"), spec((), "int32", "x2")]
    fn = lambda x, ids, n: [f(x, ids, n) for _, f in sorted(UNSORTED_OPS.items())]  # noqa: E731
    ids = np.array([[0, 2, 2], [-1, 0, 4]], np.int32)
    check_op(fn, [rand(2, 3, 2), ids, np.array(5, np.int32)], specs=specs,
             extra_inputs=[[rand(0, 3, 2), np.zeros((0, 3), np.int32), np.array(2, np.int32)],
                           [rand(1, 3, 2), np.array([[1, -1, 1]], np.int32), np.array(2, np.int32)]])


# -- sparse segments -----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL)
def test_sparse_segment_sum(dtype):
    fn = in_dtype(lambda x: tf.sparse.segment_sum(x, [4, 0, 4, 2], [0, 0, 1, 3]), dtype)
    check_op(fn, [data(dtype, 5, 2)], atol=0.05 if dtype in ("float16", "bfloat16") else None)


@pytest.mark.parametrize("dtype", FLOATS)
def test_sparse_segment_mean_and_sqrt_n(dtype):
    indices, ids = [4, 0, 4, 2, 1], [0, 0, 0, 2, 2]
    fn = in_dtype(lambda x: [tf.sparse.segment_mean(x, indices, ids),
                             tf.sparse.segment_sqrt_n(x, indices, ids)], dtype)
    check_op(fn, [data(dtype, 5, 3)], atol=0.05 if dtype in ("float16", "bfloat16") else None)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "float16"])
def test_sparse_segments_with_num_segments(dtype):
    indices, ids = [1, 3, 0], [1, 1, 4]
    fns = [tf.sparse.segment_sum]
    if dtype != "int32":
        fns += [tf.sparse.segment_mean, tf.sparse.segment_sqrt_n]
    check_op(lambda x: [f(x, indices, ids, num_segments=6) for f in fns], [data(dtype, 4, 2)])


def test_sparse_segments_at_run_time():
    specs = [spec((None, None)), spec((None,), "int32", "x1"), spec((None,), "int64", "x2")]
    fn = lambda x, i, s: [tf.sparse.segment_mean(x, i, s),  # noqa: E731
                          tf.sparse.segment_sqrt_n(x, i, s, num_segments=4)]
    check_op(fn, [rand(4, 2), np.array([3, 3, 0], np.int32), np.array([0, 2, 2])], specs=specs,
             extra_inputs=[[rand(3, 5), np.zeros(0, np.int32), np.zeros(0, np.int64)]])


# -- bincount ----------------------------------------------------------------------------------
VALUES = np.array([1, 3, 3, 0, 7, 3, 1], np.int32)


@pytest.mark.parametrize("dtype", ["int32", "int64", "float32", "float64"])
def test_bincount_weights_and_counts(dtype):
    weights = data(dtype, 7)
    fn = lambda x: [raw.Bincount(arr=x, size=5, weights=tf.constant(weights)),  # noqa: E731
                    raw.Bincount(arr=x, size=5, weights=tf.constant([], dtype)),
                    tf.math.bincount(x, minlength=9, dtype=dtype)]
    check_op(fn, [VALUES])


@pytest.mark.parametrize("dtype", ["int32", "int64", "float32", "float64"])
@pytest.mark.parametrize("binary", [False, True])
def test_dense_bincount(dtype, binary):
    rows = np.array([[1, 3, 3, 0], [4, 4, 2, 9]], np.int64)
    weights = data(dtype, 2, 4)
    fn = lambda x: [raw.DenseBincount(input=x, size=5, weights=tf.constant(weights),  # noqa: E731
                                      binary_output=binary),
                    raw.DenseBincount(input=x, size=5, weights=tf.constant([], dtype),
                                      binary_output=binary),
                    raw.DenseBincount(input=x[0], size=3, weights=tf.constant(weights[0]),
                                      binary_output=binary)]
    check_op(fn, [rows])


def test_bincount_at_run_time():
    """Size, weights (empty or not) and values known only at run time."""
    specs = [spec((None,), "int32"), spec((), "int32", "x1"), spec((None,), "float32", "x2")]
    fn = lambda x, n, w: raw.Bincount(arr=x, size=n, weights=w)  # noqa: E731
    check_op(fn, [VALUES, np.array(4, np.int32), rand(7)], specs=specs,
             extra_inputs=[[VALUES, np.array(9, np.int32), np.zeros(0, np.float32)],
                           [np.zeros(0, np.int32), np.array(2, np.int32), np.zeros(0, np.float32)]])
    specs = [spec((None, None), "int32"), spec((), "int32", "x1")]
    fn = lambda x, n: raw.DenseBincount(input=x, size=n, weights=[], binary_output=True)  # noqa: E731
    check_op(fn, [VALUES.reshape(1, 7), np.array(8, np.int32)], specs=specs,
             extra_inputs=[[np.zeros((3, 0), np.int32), np.array(2, np.int32)]])


# -- tensor scatter max, min, sub --------------------------------------------------------------------
INDICES = np.array([[1], [4], [1], [0]], np.int32)


@pytest.mark.parametrize("dtype", ALL)
def test_tensor_scatter_max_min_sub(dtype):
    updates = data(dtype, 4, 3)
    fn = in_dtype(lambda x, u: [tf.tensor_scatter_nd_max(x, INDICES, u),
                                tf.tensor_scatter_nd_min(x, INDICES, u),
                                tf.tensor_scatter_nd_sub(x, INDICES, u)], dtype)
    if dtype == "bfloat16":
        fn = (lambda f: lambda x, u: f(x, tf.cast(u, tf.bfloat16)))(fn)
    check_op(fn, [data(dtype, 5, 3), updates], atol=0.05 if dtype in ("float16", "bfloat16") else None)


def test_tensor_scatter_elements_and_unknown_shapes():
    specs = [spec((None, None)), spec((None, 2), "int64", "x1"), spec((None,), "float32", "x2")]
    fn = lambda x, i, u: [tf.tensor_scatter_nd_max(x, i, u),  # noqa: E731
                          tf.tensor_scatter_nd_sub(x, i, u)]
    check_op(fn, [rand(3, 4), np.array([[0, 1], [2, 3], [0, 1]]), rand(3)], specs=specs,
             extra_inputs=[[rand(2, 2), np.zeros((0, 2), np.int64), np.zeros(0, np.float32)]])


# -- without TensorFlow: inference ----------------------------------------------------------------
def test_shapes_are_inferred():
    from tf2ir.ir import TensorDesc
    _, node = single_op_graph("SegmentReduce", [TensorDesc("float32", (5, 3)), np.array([0, 0, 4])],
                              {"reduction": "max"})
    assert node.outputs[0].desc.shape == (5, 3)
    _, node = single_op_graph("UnsortedSegmentReduce", [TensorDesc("int8", (2, 4, 3)),
                                                        TensorDesc("int32", (2, 4)),
                                                        TensorDesc("int32", ())],
                              {"reduction": "prod"})
    assert node.outputs[0].desc.shape == (None, 3)
    _, node = single_op_graph("Bincount", [TensorDesc("int32", (None, 7)), np.array(4, np.int32),
                                           TensorDesc("float64", (0,))])
    assert (node.outputs[0].desc.dtype, node.outputs[0].desc.shape) == ("float64", (None, 4))
