"""RaggedTensorToTensor (opp/ragged.py) against TensorFlow on the graphs tokenizers feed it:
every row_partition_types combination TF emits (ROW_SPLITS, FIRST_DIM_SIZE + VALUE_ROWIDS, and
the two mixed at ragged rank 2), a shape left out (scalar -1), given fully, partly, at run time
or smaller than the rows (truncated), a scalar or broadcast default, empty rows and an empty
batch, values of rank 2 and 3, int32 and int64 partitions, string and numeric values. Every
operand is a run-time input with unknown dims (specs of None), as a tokenizer's output is; the
models run through tf2ir.InferenceSession and must equal TF's result exactly."""

from __future__ import annotations


import numpy as np
import pytest

from tests.conformance.harness import spec, check_exactly

tf = pytest.importorskip("tensorflow")
raw = tf.raw_ops

TESTED_DTYPES = {"RaggedTensorToTensor": ("string", "float32", "int32", "int64", "bool")}

SPLITS = np.array([0, 2, 2, 5, 6, 6], np.int64)       # rows of 2, 0, 3, 1 and 0 items
ROWIDS = np.array([0, 0, 2, 2, 2, 3], np.int64)       # the same rows as value_rowids (nrows 5)
OUTER = np.array([0, 2, 3, 3, 5], np.int64)           # 4 rows over SPLITS' 5 inner rows
WORDS = np.array(["a", "Bé", "", "日本", "x" * 40, "Ωz"], object)


def values_of(dtype, *inner):
    if dtype == "string":
        return np.array([f"{w}{k}" for k, w in enumerate(np.resize(WORDS, 6 * int(
            np.prod(inner, dtype=np.int64))))], object).reshape((6,) + inner)
    out = np.arange(1, 6 * int(np.prod(inner, dtype=np.int64)) + 1).reshape((6,) + inner)
    return (out % 2 == 0) if dtype == "bool" else out.astype(dtype)


def default_of(dtype):
    return {"string": np.array("<pad>", object), "bool": np.array(True)}.get(
        dtype, np.array(-7, dtype if dtype != "string" else object))


def check(fn, inputs, specs, extra_inputs=()):
    """Convert `fn`, run it through tf2ir.InferenceSession on `inputs` and each list of
    `extra_inputs` (one model: the dims stay symbolic) and compare with TF exactly."""
    return check_exactly(fn, inputs, specs, extra_inputs)


def _dtype_spec(dtype, shape, name):
    return spec(shape, "string" if dtype == "string" else dtype, name)


# -- ragged rank 1 -------------------------------------------------------------------------------
SHAPES = [None, [None, 3], [None, 1], [2, None], [7, 4], [3, 2]]
CASES = [("string", s) for s in SHAPES] + [(d, s) for d in TESTED_DTYPES["RaggedTensorToTensor"][1:]
                                          for s in (None, [None, 1], [7, 4])]


@pytest.mark.parametrize("dtype, shape", CASES)
def test_row_splits_with_shape(dtype, shape):
    """to_tensor(default, shape): longer rows truncated, shorter ones and missing rows padded."""
    def fn(sp, v, d):
        return tf.RaggedTensor.from_row_splits(v, sp, validate=False).to_tensor(d, shape=shape)
    specs = [spec((None,), "int64"), _dtype_spec(dtype, (None,), "x1"), _dtype_spec(dtype, (), "x2")]
    values, default = values_of(dtype), default_of(dtype)
    check(fn, [SPLITS, values, default], specs,
          extra_inputs=[[SPLITS[:1], values[:0], default],                  # no rows
                        [np.zeros(4, np.int64), values[:0], default],       # rows, all empty
                        [np.array([0, 6], np.int64), values, default]])     # one long row


@pytest.mark.parametrize("splits_type", ["int32", "int64"])
@pytest.mark.parametrize("shape", [None, [None, 2], [6, None]])
def test_value_rowids(splits_type, shape):
    """FIRST_DIM_SIZE + VALUE_ROWIDS: trailing empty rows come from nrows."""
    def fn(rowids, nrows, v):
        rt = tf.RaggedTensor.from_value_rowids(v, rowids, nrows, validate=False)
        return rt.to_tensor(shape=shape)
    specs = [spec((None,), splits_type), spec((), splits_type, "x1"), spec((None,), "int32", "x2")]
    values = values_of("int32")
    check(fn, [ROWIDS.astype(splits_type), np.array(5, splits_type), values], specs,
          extra_inputs=[[ROWIDS[:0].astype(splits_type), np.array(0, splits_type), values[:0]],
                        [ROWIDS[:0].astype(splits_type), np.array(3, splits_type), values[:0]],
                        [np.full(6, 1, splits_type), np.array(2, splits_type), values]])


def test_value_rowids_strings_validated():
    """from_value_rowids as written (validation on), strings, default ''."""
    def fn(rowids, nrows, v):
        return tf.RaggedTensor.from_value_rowids(v, rowids, nrows).to_tensor()
    specs = [spec((None,), "int64"), spec((), "int64", "x1"), spec((None,), "string", "x2")]
    check(fn, [ROWIDS, np.array(4, np.int64), values_of("string")], specs)


# (TF's kernel misreads a default of lower rank than values.shape[1:] but not a scalar)
DEFAULTS = {"scalar": np.array(9.0, np.float32), "row": np.array([[0.5, -1.5, 2.5]], np.float32),
            "column": np.array([[4.0], [5.0]], np.float32),
            "full": np.arange(6, dtype=np.float32).reshape(2, 3) - 10}


@pytest.mark.parametrize("default", list(DEFAULTS))
@pytest.mark.parametrize("shape", [None, [None, None, 2, 3], [4, 1, None, None], [None] * 4])
def test_inner_dims_and_broadcast_default(shape, default):
    """values [N, 2, 3]; the default a scalar, [1, 3], [2, 1] or [2, 3], broadcast to [2, 3]."""
    splits_type = "int32" if default in ("row", "column") else "int64"
    def fn(sp, v, d):
        rt = tf.RaggedTensor.from_row_splits(v, sp, validate=False)
        return rt.to_tensor(d, shape=shape)
    d = DEFAULTS[default]
    specs = [spec((None,), splits_type), spec((None, None, None), "float32", "x1"),
             spec((None,) * d.ndim, "float32", "x2")]
    values, splits = values_of("float32", 2, 3), SPLITS.astype(splits_type)
    check(fn, [splits, values, d], specs, extra_inputs=[[splits[:1], values[:0], d]])


def test_inner_dims_strings():
    def fn(sp, v):
        return tf.RaggedTensor.from_row_splits(v, sp, validate=False).to_tensor("-", shape=[3, 1, 2])
    specs = [spec((None,), "int32"), spec((None, None), "string", "x1")]
    check(fn, [SPLITS.astype(np.int32), values_of("string", 2)], specs)


# -- ragged rank 2 -------------------------------------------------------------------------------
def _rank2(kind, a, b, n, v):
    """Ragged rank 2 built so that to_tensor emits the partition types `kind` names."""
    if kind == "splits":                         # ROW_SPLITS, ROW_SPLITS
        return tf.RaggedTensor.from_nested_row_splits(v, [a, b], validate=False)
    if kind == "rowids":                         # FIRST_DIM_SIZE, VALUE_ROWIDS, VALUE_ROWIDS
        inner = tf.RaggedTensor.from_value_rowids(v, b, tf.shape(a, out_type=b.dtype)[0],
                                                  validate=False)
        return tf.RaggedTensor.from_value_rowids(inner, a, n, validate=False)
    if kind == "rowids_splits":                  # FIRST_DIM_SIZE, VALUE_ROWIDS, ROW_SPLITS
        inner = tf.RaggedTensor.from_row_splits(v, b, validate=False)
        return tf.RaggedTensor.from_value_rowids(inner, a, n, validate=False)
    inner = tf.RaggedTensor.from_value_rowids(v, b, n, validate=False)   # ROW_SPLITS, VALUE_ROWIDS
    return tf.RaggedTensor.from_row_splits(inner, a, validate=False)


# (outer partition, inner partition, nrows) per kind, the same ragged tensor each time:
# rows [[v0 v1], []], [[v2 v3 v4]], [], [[v5], []] over SPLITS' inner rows
RANK2 = {
    "splits": (np.array([0, 2, 3, 3, 5], np.int64), SPLITS, 0),
    "rowids": (np.array([0, 0, 1, 3, 3], np.int64), ROWIDS, 4),
    "rowids_splits": (np.array([0, 0, 1, 3, 3], np.int64), SPLITS, 4),
    "splits_rowids": (np.array([0, 2, 3, 3, 5], np.int64), ROWIDS, 5),
}


@pytest.mark.parametrize("kind", list(RANK2))
@pytest.mark.parametrize("shape", [None, [None, 1, None], [2, None, 2], [5, 3, 4]])
def test_ragged_rank_2(kind, shape):
    def fn(a, b, n, v):
        return _rank2(kind, a, b, n, v).to_tensor(-1, shape=shape)
    a, b, n = RANK2[kind]
    specs = [spec((None,), "int64"), spec((None,), "int64", "x1"), spec((), "int64", "x2"),
             spec((None,), "int64", "x3")]
    check(fn, [a, b, np.array(n, np.int64), values_of("int64")], specs)


@pytest.mark.parametrize("kind", ["splits", "rowids_splits"])
def test_ragged_rank_2_strings_int32_and_empty(kind):
    def fn(a, b, n, v):
        return _rank2(kind, a, b, n, v).to_tensor("", shape=[None, 2, None])
    a, b, n = RANK2[kind]
    specs = [spec((None,), "int32"), spec((None,), "int32", "x1"), spec((), "int32", "x2"),
             spec((None,), "string", "x3")]
    empty_outer = np.zeros(1 if kind == "splits" else 0, np.int32)
    check(fn, [a.astype(np.int32), b.astype(np.int32), np.array(n, np.int32), values_of("string")],
          specs, extra_inputs=[[empty_outer, np.zeros(1, np.int32), np.array(0, np.int32),
                                values_of("string")[:0]]])


# -- the raw op: shapes as TF's kernel reads them ------------------------------------------------
def test_run_time_shape():
    """A shape known only at run time (TF takes the scalar -1 only as a constant): -1 dims
    fit the rows, others pad or truncate."""
    def fn(sp, v, shape):
        return raw.RaggedTensorToTensor(shape=shape, values=v, default_value=0,
                                        row_partition_tensors=[sp],
                                        row_partition_types=["ROW_SPLITS"])
    specs = [spec((None,), "int64"), spec((None,), "int32", "x1"), spec((None,), "int64", "x2")]
    values = values_of("int32")
    check(fn, [SPLITS, values, np.array([-1, 2], np.int64)], specs,
          extra_inputs=[[SPLITS, values, np.array([7, -1], np.int64)],
                        [SPLITS, values, np.array([2, 1], np.int64)],
                        [SPLITS, values, np.array([-1, -1], np.int64)],
                        [SPLITS[:1], values[:0], np.array([-1, 3], np.int64)]])


def test_tokenizer_padding_pattern():
    """The pattern of the text models: ragged ids (int32 cast to int64), to_tensor, sliced and
    padded to a fixed length, and the to_tensor(shape=[None, N]) form of the same."""
    def fn(sp, v):
        rt = tf.RaggedTensor.from_row_splits(tf.cast(v, tf.int64), sp, validate=False)
        ids = rt.to_tensor(0)[:, :4]
        ids = tf.pad(ids, [[0, 0], [0, 4 - tf.shape(ids)[1]]])
        return ids, rt.to_tensor(0, shape=[None, 4])
    specs = [spec((None,), "int64"), spec((None,), "int32", "x1")]
    long_row = np.array([0, 1, 7, 7], np.int64)
    values = np.arange(100, 107, dtype=np.int32)
    check(fn, [long_row, values[:7]], specs,
          extra_inputs=[[np.array([0, 7], np.int64), values], [SPLITS, values[:6]]])


@pytest.mark.parametrize("types", [["ROW_LENGTHS"], ["VALUE_ROWIDS"],
                                   ["FIRST_DIM_SIZE", "ROW_SPLITS"], ["ROW_SPLITS", "ROW_LIMITS"]])
def test_partition_types_tf_does_not_run_are_refused(types):
    """Types TF's kernel refuses or never gets from tf.ragged: one ConversionError naming them
    (TF's own shape function stops such a graph being built, so the IR op is checked)."""
    from tf2ir.ir import ConversionError, TensorDesc
    from tests.conformance.harness import single_op_graph
    operands = [np.array([-1, -1], np.int64), TensorDesc("float32", (None,)),
                np.array(0, np.float32)] + [TensorDesc("int64", (None,)) for _ in types]
    with pytest.raises(ConversionError, match=r"row_partition_types \[.*'" + types[-1]):
        single_op_graph("RaggedTensorToTensor", operands, {
            "row_partition_types": types, "num_row_partition_tensors": len(types)})
