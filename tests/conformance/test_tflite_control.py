"""TFLite control flow against the LiteRT interpreter: tf.while_loop and tf.cond functions
that TF's converter keeps as WHILE / IF over subgraphs, converted to the IR's While / If
(float, and a loop whose body holds int8 ops); resource variables refused in one line."""

import numpy as np
import pytest

from tests.conformance.tflite_harness import check_tflite, convert_tflite, spec

tf = pytest.importorskip("tensorflow")

TFLITE_TESTED = {"WHILE": ("float", "int8"), "IF": ("float", "int8")}


@tf.function
def counted_loop(x):
    def body(i, y):
        return i + 1, y * 0.5 + 1.0
    return tf.while_loop(lambda i, y: i < 3, body, [tf.constant(0), x])[1]


@tf.function
def data_loop(x):
    """The trip count depends on the data: halve until the sum is small."""
    def body(i, y):
        return i + 1, y * 0.5
    i, y = tf.while_loop(lambda i, y: tf.reduce_sum(tf.abs(y)) > 1.0, body, [tf.constant(0), x])
    return y, i


@tf.function
def branch(x):
    return tf.cond(tf.reduce_sum(x) > 0, lambda: x * 2.0, lambda: x - 1.0)


def test_while_float(tmp_path):
    outcome = check_tflite(tmp_path, counted_loop, [spec([2, 3])])
    assert outcome.exact


def test_while_data_dependent_trip_count(tmp_path):
    # feeds whose sums need 0 to several halvings: the counter output differs between them
    feeds = [[np.full((2, 3), v, np.float32)] for v in (0.1, 1.0, 7.5)]
    check_tflite(tmp_path, data_loop, [spec([2, 3])], feeds=feeds)


def test_if_float_both_branches(tmp_path):
    feeds = [[np.full((2, 3), 0.5, np.float32)], [np.full((2, 3), -0.5, np.float32)]]
    outcome = check_tflite(tmp_path, branch, [spec([2, 3])], feeds=feeds)
    assert outcome.exact


@pytest.mark.parametrize("fn", [counted_loop, branch], ids=["while", "if"])
def test_control_int8(tmp_path, fn):
    """Full-integer models: the body's ops are quantized (QDQ inside the subgraphs)."""
    check_tflite(tmp_path, fn, [spec([2, 3])], mode="int8")


def test_resource_variables_refused(tmp_path):
    from tf2ir.ir.errors import ConversionError

    class Counter(tf.Module):
        def __init__(self):
            self.v = tf.Variable(tf.zeros([3]))

        @tf.function(input_signature=[tf.TensorSpec([3])])
        def f(self, x):
            self.v.assign_add(x)
            return self.v * 2.0

    module = Counter()
    converter = tf.lite.TFLiteConverter.from_concrete_functions(
        [module.f.get_concrete_function()], module)
    converter.experimental_enable_resource_variables = True
    path = tmp_path / "var.tflite"
    path.write_bytes(converter.convert())
    with pytest.raises(ConversionError) as info:
        convert_tflite(str(path), str(tmp_path / "var.onnx"))
    message = str(info.value)
    assert "\n" not in message
    assert "VAR_HANDLE" in message and "resource variables" in message
    assert not (tmp_path / "var.onnx").exists()
