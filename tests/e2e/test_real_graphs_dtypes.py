"""Dtype and op gaps TF allows (issue 20, class 4), each written from the issue's description
as a small TF function, frozen, converted, run and compared with TensorFlow: int32 max pooling
(min-pooling an attention mask), string Equal/NotEqual/SelectV2 (Keras StringLookup and
TextVectorization compare tokens with ""), Bitcast (Keras 3 `ops.argmax` on floats),
BroadcastArgs/BroadcastGradientArgs (`tf.linspace` in a loop body). Each op's IR dtype list
is checked against TF's op registry."""

from __future__ import annotations

import tempfile

import numpy as np
import pytest

from tests.conformance.harness import as_text, assert_close, convert_function, rand, spec


def compare(fn, inputs, specs=None, kernels=False, extra_inputs=()):
    """Convert `fn`, run it in onnxruntime (through tf2ir.InferenceSession when the model
    has tf2ir kernel nodes: `kernels`) and compare every output with TensorFlow's."""
    import onnxruntime as ort
    import tensorflow as tf
    import tf2ir
    arrays = [np.asarray(a) for a in inputs]
    if specs is None:
        specs = [spec(a.shape, "string" if a.dtype == object else a.dtype, f"x{i}")
                 for i, a in enumerate(arrays)]
    with tempfile.TemporaryDirectory() as directory:
        path, graph, _, _ = convert_function(fn, specs, directory)
        session = tf2ir.InferenceSession(path) if kernels else \
            ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        for feed in [arrays] + [[np.asarray(a) for a in more] for more in extra_inputs]:
            names = [i.name for i in session.get_inputs()]
            by_name = {f"x{i}": a for i, a in enumerate(feed)}
            got = session.run(None, {n: by_name[n] for n in names})
            want = tf.nest.flatten(tf.function(fn)(*[tf.constant(a) for a in feed]))
            assert len(got) == len(want)
            for k, (w, g) in enumerate(zip(want, got)):
                assert_close(as_text(np.asarray(w)), as_text(g), what=f"output {k}")
        return graph


def tf_types(op_type, attr="T"):
    from tensorflow.python.framework import op_def_registry
    import tensorflow as tf
    op = op_def_registry.get(op_type)
    allowed = next(a for a in op.attr if a.name == attr).allowed_values.list.type
    return {tf.as_dtype(t).name for t in allowed}


def ir_types(op_type, input_index=0):
    from tf2ir.ir.prototype import get_prototype
    from tests.conformance.harness import _manager
    _manager().registry          # the built-in prototypes registered
    return set(get_prototype(op_type).inputs[input_index].dtypes)


# -- MaxPool on integers ----------------------------------------------------------------------
def test_int32_min_pool_of_an_attention_mask():
    """-maxpool(-mask): a padding mask pooled to the minimum over windows, on int32, with
    values past float32's exact range to show the pooling is exact."""
    import tensorflow as tf
    mask = np.array([[[1], [1], [0], [1], [1], [1], [0], [0]],
                     [[1], [1], [1], [1], [1], [0], [0], [0]]], np.int32)
    compare(lambda m: -tf.nn.max_pool1d(-m, 2, 2, "VALID"), [mask])
    big = np.array([[[2 ** 31 - 1], [-2 ** 31], [16777217], [16777216], [5], [-7]]], np.int32)
    compare(lambda m: tf.nn.max_pool1d(m, 3, 2, "SAME"), [big])


@pytest.mark.parametrize("dtype", ["int16", "uint16", "int8"])
def test_small_int_max_pool_same_with_unknown_sizes(dtype):
    import tensorflow as tf
    x = rand(1, 5, 5, 2, dtype=dtype, low=3)
    compare(lambda m: tf.nn.max_pool2d(m, 2, 3, "SAME"), [x],
            specs=[spec([1, None, None, 2], dtype, "x0")])


def test_int64_max_pool_is_refused_with_the_reason():
    import tensorflow as tf
    from tf2ir.ir import ConversionError
    with tempfile.TemporaryDirectory() as directory, \
            pytest.raises(ConversionError, match="MaxPool on int64 is not supported: .*no float"):
        convert_function(lambda m: tf.nn.max_pool1d(m, 2, 2, "VALID"),
                         [spec([1, 4, 1], "int64")], directory)


def test_max_pool_dtypes_are_tfs():
    assert ir_types("MaxPool") == tf_types("MaxPool") - {"qint8"}


# -- strings: Equal, NotEqual, SelectV2 ------------------------------------------------------
TOKENS = np.array([["the", "", "cat"], ["", "[UNK]", "sat"]], object)


def test_string_lookup_style_mask_compare_runs_in_plain_onnxruntime():
    """Keras StringLookup's mask: tokens compared with "" (a constant: LabelEncoder)."""
    import tensorflow as tf

    def fn(tokens):
        mask = tf.not_equal(tokens, "")
        is_unk = tf.equal("[UNK]", tokens)
        return mask, is_unk, tf.where(mask, tokens, tf.constant("<pad>"))
    compare(fn, [TOKENS])


def test_string_equality_of_two_run_time_tensors():
    import tensorflow as tf
    other = np.array([["the", "x", ""], ["", "[UNK]", "sat"]], object)
    compare(lambda a, b: (tf.equal(a, b), tf.not_equal(a, b[:1])), [TOKENS, other], kernels=True)


def test_string_select_v1_rows():
    import tensorflow as tf
    compare(lambda c, a: tf.raw_ops.Select(condition=c, x=a, y=tf.fill(tf.shape(a), "-")),
            [np.array([True, False]), TOKENS])


def test_equality_and_select_dtypes_include_strings():
    for op_type in ("Equal", "NotEqual"):
        assert "string" in ir_types(op_type) and "string" in ir_types(op_type, 1)
    for op_type in ("Select", "SelectV2"):
        assert "string" in ir_types(op_type, 1)


# -- Bitcast ----------------------------------------------------------------------------------
@pytest.mark.parametrize("src, dst, shape", [
    ("float32", "int32", (3, 4)), ("int32", "float32", (2, 3)), ("float64", "uint8", (2, 2)),
    ("uint8", "float32", (3, 4)), ("int16", "uint16", (5,)), ("uint64", "float64", (2,)),
])
def test_bitcast_reinterprets_the_bytes(src, dst, shape):
    import tensorflow as tf
    x = rand(*shape, dtype=src, low=0, high=50)
    compare(lambda v: tf.bitcast(v, getattr(tf, dst)), [x], kernels=True)


def test_half_float_bitcast_is_refused_with_the_reason():
    import tensorflow as tf
    from tf2ir.ir import ConversionError
    with tempfile.TemporaryDirectory() as directory, \
            pytest.raises(ConversionError, match="Bitcast of float16 is not supported: ONNX"):
        convert_function(lambda v: tf.bitcast(v, tf.int16), [spec([3], "float16")], directory)


def test_keras3_argmax_on_floats():
    import keras
    x = rand(3, 7)
    x[1, 2] = x[1, 5] = 9.0          # ties: the first index, as TF's
    compare(lambda v: keras.ops.argmax(v, axis=-1), [x], kernels=True)


def test_bitcast_dtypes_are_tfs():
    quantized = {"qint8", "quint8", "qint16", "quint16", "qint32"}
    assert ir_types("Bitcast") == tf_types("Bitcast") - quantized
