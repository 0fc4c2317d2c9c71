"""Three-way shape runs (issue 20) of the norm, quantize, ragged, select, set and sparse
families: a representative case of each lowering taught to compute at run time what it used to
refuse without the rank (or a vector's length), run with every argument of unknown rank (and
the vector-length cases with every dim unknown too), against TensorFlow over the same relaxed
specs (the whole suite: python -m tf2ir.tools.shapes3). Before: every case here was a clean
refusal ("needs the rank", "a vector of known length"); two written-shape bugs the rewrites
showed are checked as written."""

import numpy as np
import pytest

from tests.conformance.harness import check_op, rand

tf = pytest.importorskip("tensorflow")
raw = tf.raw_ops

def _parts(sparse):
    return sparse.indices, sparse.values, sparse.dense_shape


SPLITS = np.array([0, 2, 2, 5, 6], np.int64)

CASES = {
    "batch_norm_nchw": (lambda x: tf.compat.v1.nn.fused_batch_norm(
        x, tf.constant([1.0, 2.0, 0.5]), tf.constant([0.1, -0.2, 0.3]), tf.constant([0.5, 0.0, -1.0]),
        tf.constant([1.0, 2.0, 0.25]), is_training=False, data_format="NCHW")[0], [rand(2, 3, 4, 5)]),
    "quantize_per_axis": (lambda x: raw.QuantizeAndDequantizeV2(
        input=x, input_min=tf.zeros([3]), input_max=tf.zeros([3]), range_given=False, axis=1,
        num_bits=5), [rand(2, 3, 4)]),
    "ragged_to_sparse_inner": (lambda s, v: _parts(tf.RaggedTensor.from_row_splits(v, s).to_sparse()),
                               [SPLITS, rand(6, 2, 3)]),
    "select_v1_rows": (lambda c, a, b: raw.Select(condition=c, x=a, y=b),
                       [np.array([True, False, True]), rand(3, 2, 2), rand(3, 2, 2)]),
    "unique_axis_1": (lambda x: raw.UniqueWithCountsV2(x=x, axis=tf.constant([1], tf.int64)),
                      [np.array([[1, 2, 1], [3, 4, 3]], np.int32)]),
    "roll_run_time_axes": (lambda x, s, a: tf.roll(x, s, a),
                           [rand(2, 3, 4), np.array([1, -5], np.int32), np.array([2, -1], np.int32)]),
    "dynamic_stitch": (lambda i, j, a, b: tf.dynamic_stitch([i, j], [a, b]),
                       [np.array([[0, 2]], np.int32), np.array([1], np.int32),
                        rand(1, 2, 3), rand(1, 3)]),
}

# vectors whose length is the dense rank, known only at run time
LENGTH_CASES = {
    "sparse_to_dense": (lambda i, s, v: raw.SparseToDense(sparse_indices=i, output_shape=s,
                                                          sparse_values=v, default_value=7.0),
                        [np.array([[0, 1], [2, 0]], np.int64), np.array([3, 2], np.int64), rand(2)]),
    "fill_empty_rows": (lambda i, v, s: list(raw.SparseFillEmptyRows(
        indices=i, values=v, dense_shape=s, default_value=tf.constant(-1.0))),
        [np.array([[1, 0, 1], [3, 2, 0]], np.int64), rand(2), np.array([5, 3, 2], np.int64)]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_unknown_rank_converts_and_matches(monkeypatch, case):
    monkeypatch.setenv("TF2IR_CONFORMANCE_SHAPES", "rank")
    fn, inputs = CASES[case]
    check_op(fn, inputs)


@pytest.mark.parametrize("mode", ["dims", "rank"])
@pytest.mark.parametrize("case", sorted(LENGTH_CASES))
def test_run_time_dense_rank_converts_and_matches(monkeypatch, mode, case):
    monkeypatch.setenv("TF2IR_CONFORMANCE_SHAPES", mode)
    fn, inputs = LENGTH_CASES[case]
    check_op(fn, inputs)


def test_per_axis_range_of_a_vector_is_per_value():
    """A rank-1 x quantized along axis 0 has one range per value: ONNX's ReduceMin over no
    axes reduced them all to one range before noop_with_empty_axes."""
    x = rand(5)
    check_op(lambda v: raw.QuantizeAndDequantizeV2(input=v, input_min=tf.zeros([5]),
                                                   input_max=tf.zeros([5]), range_given=False,
                                                   axis=0, num_bits=4), [x])


def test_dynamic_stitch_of_empty_rows():
    """Rows of no values (data [n, 0]) keep their 0 when flattened (allowzero)."""
    check_op(lambda i, d: tf.dynamic_stitch([i], [d]), [np.array([[1, 0]], np.int32),
                                                        np.zeros((1, 2, 0), np.float32)])
