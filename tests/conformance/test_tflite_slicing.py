"""TFLite's slicing and indexing ops (plugins/builtin/tflite_slicing.py) against the LiteRT
interpreter: each case a small TF function TF's TFLiteConverter turns into the op (checked to be
in the model), or, for the forms the converter never writes (STRIDED_SLICE's ellipsis and
new-axis masks and its offset option, EMBEDDING_LOOKUP), a model built from the schema.
Integer outputs compare exactly."""

import numpy as np
import pytest

from tests.conformance.test_tflite_array import (
    build_tflite, check_built, check_op, feeds_of, tflite_ops)
from tests.conformance.tflite_harness import spec

tf = pytest.importorskip("tensorflow")

TFLITE_TESTED = {
    "SLICE": ("float",), "STRIDED_SLICE": ("float", "int8"), "GATHER": ("float", "int8"),
    "EMBEDDING_LOOKUP": ("float", "dynamic"), "GATHER_ND": ("float",), "SCATTER_ND": ("float",),
    "ONE_HOT": ("float",), "REVERSE_V2": ("float",), "REVERSE_SEQUENCE": ("float",),
    "WHERE": ("float",), "UNIQUE": ("float",), "SEGMENT_SUM": ("float",),
    "UNSORTED_SEGMENT_SUM": ("float",),
    "UNSORTED_SEGMENT_PROD": ("float",), "UNSORTED_SEGMENT_MAX": ("float",),
    "UNSORTED_SEGMENT_MIN": ("float",),
}

RNG = np.random.default_rng(7)


def floats(*shape):
    return RNG.uniform(-2, 2, shape).astype(np.float32)


# -- SLICE, STRIDED_SLICE -------------------------------------------------------------------------

def test_slice(tmp_path):
    check_op(tmp_path, "SLICE", lambda x: tf.slice(x, [0, 1, 0], [-1, 2, 3]), [spec([None, 4, 3])])


SLICES = {
    "masks": lambda x: x[:, 1:, ::2],                   # begin/end masks, a stride
    "negative": lambda x: x[:, ::-1, -3:-1],            # a negative stride, negative bounds
    "shrink": lambda x: x[:, 2, 1:],                     # shrink_axis_mask
}


@pytest.mark.parametrize("case", sorted(SLICES))
def test_strided_slice(tmp_path, case):
    check_op(tmp_path, "STRIDED_SLICE", SLICES[case], [spec([None, 4, 5])],
             name=f"strided_slice_{case}")


@pytest.mark.parametrize("mode", ["int8"])
def test_strided_slice_int8(tmp_path, mode):
    check_op(tmp_path, "STRIDED_SLICE", lambda x: x[:, 1:, ::2] * 1.5, [spec([None, 4, 5])],
             mode=mode, name="strided_slice_int8")


def test_strided_slice_of_dynamic_shape_is_exact(tmp_path):
    """SHAPE -> STRIDED_SLICE (shrink) -> PACK: the dynamic-batch shape arithmetic, integers."""
    fn = lambda x: tf.stack([tf.shape(x)[0] * 2, tf.shape(x)[-1]])  # noqa: E731
    outcome = check_op(tmp_path, "STRIDED_SLICE", fn, [spec([None, 3])], name="ss_shape")
    assert outcome.exact


def slice_model(options, begin, end, strides, in_shape, out_shape):
    n = len(begin)
    tensors = [("x", np.float32, in_shape, None),
               ("begin", np.int32, [n], np.int32(begin)), ("end", np.int32, [n], np.int32(end)),
               ("strides", np.int32, [n], np.int32(strides)), ("y", np.float32, out_shape, None)]
    return build_tflite(tensors, [("STRIDED_SLICE", [0, 1, 2, 3], [4],
                                   ("StridedSliceOptions", options))], [0], [4])


def test_strided_slice_ellipsis_and_new_axis(tmp_path):
    """x[..., None, 1:3]: ellipsis_mask bit 0, new_axis_mask bit 1."""
    model = slice_model({"ellipsis_mask": 1, "new_axis_mask": 2}, [0, 0, 1], [0, 0, 3], [1, 1, 1],
                        [None, 3, 4], [None, 3, 1, 2])
    check_built(tmp_path, "strided_slice_ellipsis", model, feeds_of([None, 3, 4]))


def test_strided_slice_offset(tmp_path):
    """offset: end is relative to begin (x[:, 1:1+2, 2:2+3])."""
    model = slice_model({"begin_mask": 1, "end_mask": 1, "offset": True}, [0, 1, 2], [0, 2, 3],
                        [1, 1, 1], [None, 4, 5], [None, 2, 3])
    outcome = check_built(tmp_path, "strided_slice_offset", model, feeds_of([None, 4, 5]))
    assert outcome.exact


# -- GATHER, EMBEDDING_LOOKUP, GATHER_ND, SCATTER_ND ----------------------------------------------

TABLE = np.arange(20, dtype=np.float32).reshape(5, 4) / 4


@pytest.mark.parametrize("mode", ["float", "int8"])
def test_gather_axis(tmp_path, mode):
    check_op(tmp_path, "GATHER", lambda x: tf.gather(x, [3, 0, 3], axis=-1) + 0.5,
             [spec([None, 2, 4])], mode=mode, name=f"gather_{mode}")


def test_gather_batch_dims(tmp_path):
    fn = lambda x, i: tf.gather(x, i, axis=1, batch_dims=1)  # noqa: E731
    check_op(tmp_path, "GATHER", fn, [spec([2, 4, 3]), spec([2, 2], "int32")],
             name="gather_batch_dims",
             feeds=[[floats(2, 4, 3), np.int32([[3, 0], [1, 1]])]])


def test_gather_embedding_dynamic_ids(tmp_path):
    """Keras' Embedding: a constant table gathered at [batch, time] ids of unknown size."""
    fn = lambda i: tf.gather(tf.constant(TABLE), i)  # noqa: E731
    check_op(tmp_path, "GATHER", fn, [spec([None, None], "int32")], name="gather_embedding",
             feeds=[[np.int32([[4, 0, 2]])], [np.int32([[1], [3]])]])


def test_embedding_lookup(tmp_path):
    """EMBEDDING_LOOKUP takes the ids first, the table second."""
    model = build_tflite([("ids", np.int32, [None], None), ("table", np.float32, [5, 4], TABLE),
                          ("y", np.float32, [None, 4], None)],
                         [("EMBEDDING_LOOKUP", [0, 1], [2], None)], [0], [2])
    outcome = check_built(tmp_path, "embedding_lookup", model,
                          [[np.int32([4, 0, 4])], [np.int32([2])]])
    assert outcome.exact


@pytest.mark.parametrize("per_row", [False, True])
def test_embedding_lookup_int8_table(tmp_path, per_row):
    """A hybrid model's int8 table (a scale per tensor or per row) gives float rows: the view
    dequantizes the table, the lookup gathers floats."""
    table = np.arange(-10, 10, dtype=np.int8).reshape(5, 4) * 3
    scale = [0.5, 0.25, 1.0, 0.125, 2.0] if per_row else [0.25]
    quant = {"scale": scale, "zero_point": [0] * len(scale), "axis": 0}
    model = build_tflite([("ids", np.int32, [None], None),
                          ("table", np.int8, [5, 4], table, quant),
                          ("y", np.float32, [None, 4], None)],
                         [("EMBEDDING_LOOKUP", [0, 1], [2], None)], [0], [2])
    outcome = check_built(tmp_path, f"embedding_lookup_int8_{per_row}", model,
                          [[np.int32([4, 0, 1])], [np.int32([3, 3])]])
    assert outcome.exact
    from tf2ir.tools.runtime import InferenceSession
    got = InferenceSession(str(tmp_path / f"embedding_lookup_int8_{per_row}.onnx")).run(
        None, {"ids": np.int32([4, 0, 1])})[0]
    rows = np.float32(scale)[[4, 0, 1]] if per_row else np.float32(scale[0])
    np.testing.assert_array_equal(got, table[[4, 0, 1]] * np.reshape(rows, (-1, 1)))


def test_gather_nd(tmp_path):
    fn = lambda x, i: tf.gather_nd(x, i)  # noqa: E731
    check_op(tmp_path, "GATHER_ND", fn, [spec([3, 4]), spec([2, 2], "int32")],
             feeds=[[floats(3, 4), np.int32([[2, 3], [0, 1]])]])


def test_scatter_nd(tmp_path):
    fn = lambda i, u: tf.scatter_nd(i, u, [4, 3])  # noqa: E731
    check_op(tmp_path, "SCATTER_ND", fn, [spec([3, 1], "int32"), spec([3, 3])],
             feeds=[[np.int32([[3], [0], [3]]), floats(3, 3)]])   # a repeated index sums


# -- ONE_HOT, REVERSE_V2, REVERSE_SEQUENCE --------------------------------------------------------

@pytest.mark.parametrize("axis", [-1, 0])
def test_one_hot(tmp_path, axis):
    fn = lambda i: tf.one_hot(i, 4, on_value=2.0, off_value=-1.0, axis=axis)  # noqa: E731
    check_op(tmp_path, "ONE_HOT", fn, [spec([None], "int32")], name=f"one_hot_{axis}",
             feeds=[[np.int32([0, 3, 5, -1])], [np.int32([2])]])


def test_reverse_v2(tmp_path):
    check_op(tmp_path, "REVERSE_V2", lambda x: tf.reverse(x, [1]), [spec([None, 4, 2])])


def test_reverse_sequence(tmp_path):
    fn = lambda x, n: tf.reverse_sequence(x, n, seq_axis=1, batch_axis=0)  # noqa: E731
    check_op(tmp_path, "REVERSE_SEQUENCE", fn, [spec([3, 4, 2]), spec([3], "int32")],
             feeds=[[floats(3, 4, 2), np.int32([4, 0, 2])]])


# -- WHERE, UNIQUE, UNSORTED_SEGMENT_* ------------------------------------------------------------

def test_where_is_exact(tmp_path):
    outcome = check_op(tmp_path, "WHERE", lambda x: tf.where(x > 0.5), [spec([None, 3])])
    assert outcome.exact


def test_unique(tmp_path):
    fn = lambda x: tf.unique(x)  # noqa: E731
    outcome = check_op(tmp_path, "UNIQUE", fn, [spec([None], "int32")],
                       feeds=[[np.int32([3, 1, 3, 0, 1, 7])], [np.int32([5])]])
    assert outcome.exact


@pytest.mark.parametrize("reduction", ["sum", "prod", "max", "min"])
def test_unsorted_segment(tmp_path, reduction):
    reduce = getattr(tf.math, f"unsorted_segment_{reduction}")
    fn = lambda x, i: reduce(x, i, 3)  # noqa: E731
    check_op(tmp_path, f"UNSORTED_SEGMENT_{reduction.upper()}", fn,
             [spec([5, 2]), spec([5], "int32")],
             name=f"segment_{reduction}", feeds=[[floats(5, 2), np.int32([2, 0, 2, 0, 1])]])


def test_segment_sum(tmp_path):
    """Sorted ids (LiteRT's kernel takes no gap between them), 3 segments, then 1."""
    fn = lambda x, i: tf.math.segment_sum(x, i)  # noqa: E731
    check_op(tmp_path, "SEGMENT_SUM", fn, [spec([5, 2]), spec([5], "int32")],
             feeds=[[floats(5, 2), np.int32([0, 0, 1, 2, 2])], [floats(5, 2), np.int32([0] * 5)]])


# -- a BERT-style encoder's slicing over unknown batch and sequence -------------------------------

ENC = np.random.default_rng(11)
TOKENS = ENC.standard_normal((30, 8)).astype(np.float32)
POSITIONS = ENC.standard_normal((16, 8)).astype(np.float32)
QKV = (ENC.standard_normal((8, 24)) * 0.3).astype(np.float32)


@tf.function
def encoder(ids, mask):
    """Token + position embeddings (GATHER, SLICE sized at run time), an attention mask
    (EXPAND_DIMS), fused QKV split (SPLIT), heads (RESHAPE from SHAPE/STRIDED_SLICE/PACK,
    TRANSPOSE), the [CLS] row (STRIDED_SLICE shrink)."""
    b, seq = tf.shape(ids)[0], tf.shape(ids)[1]
    x = tf.gather(TOKENS, ids) + tf.slice(POSITIONS, [0, 0], [seq, -1])[None]
    bias = (1.0 - tf.cast(tf.expand_dims(tf.expand_dims(mask, 1), 1), tf.float32)) * -1e4
    q, k, v = tf.split(tf.reshape(x, [-1, 8]) @ QKV, 3, axis=-1)
    heads = lambda t: tf.transpose(tf.reshape(t, [b, seq, 2, 4]), [0, 2, 1, 3])  # noqa: E731
    scores = tf.nn.softmax(tf.matmul(heads(q), heads(k), transpose_b=True) + bias)
    out = tf.reshape(tf.transpose(tf.matmul(scores, heads(v)), [0, 2, 1, 3]), [b, seq, 8])
    return out[:, 0], tf.reduce_sum(out, axis=1)


@pytest.mark.parametrize("mode", ["float", "int8"])
def test_bert_style_encoder_dynamic_batch_and_sequence(tmp_path, mode):
    rng = np.random.default_rng(12)
    feeds = [[rng.integers(0, 30, (b, s)).astype(np.int32),
              (rng.uniform(size=(b, s)) > 0.3).astype(np.int32)] for b, s in ((1, 5), (3, 2))]
    check_op(tmp_path, "SLICE", encoder, [spec([None, None], "int32")] * 2, mode=mode,
             name="encoder", feeds=feeds)
    ops = set(tflite_ops(str(tmp_path / f"encoder_{mode}.tflite")))
    assert {"SHAPE", "STRIDED_SLICE", "PACK", "RESHAPE", "SPLIT", "EXPAND_DIMS"} <= ops, ops
