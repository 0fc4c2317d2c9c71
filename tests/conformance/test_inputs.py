"""Conformance of the model inputs a node declares (PlaceholderWithDefault) against TensorFlow:
fed and not fed, with a constant default (an optional ONNX input) and a computed one."""

import logging
import tempfile

import numpy as np
import pytest

from tests.conformance.harness import assert_close, convert_function, rand, spec

tf = pytest.importorskip("tensorflow")

TESTED_DTYPES = {"PlaceholderWithDefault": ("float32", "bool")}


def _run_tf(pb, outputs, feeds):
    """TensorFlow's result of the frozen graph `pb` for `feeds` ({node name: value}; a
    PlaceholderWithDefault left out takes its default)."""
    graph_def = tf.compat.v1.GraphDef()
    with open(pb, "rb") as f:
        graph_def.ParseFromString(f.read())
    with tf.Graph().as_default() as graph:
        tf.compat.v1.import_graph_def(graph_def, name="")
        with tf.compat.v1.Session(graph=graph) as session:
            return session.run(outputs, {f"{name}:0": value for name, value in feeds.items()})


def _convert_and_compare(fn, specs, feeds_list):
    """Convert `fn` and compare onnxruntime with TensorFlow for each feed dict."""
    import onnxruntime as ort
    with tempfile.TemporaryDirectory() as directory:
        path, _, outputs, pb = convert_function(fn, specs, directory)
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        for feeds in feeds_list:
            expected = _run_tf(pb, outputs, feeds)
            actual = session.run(None, feeds)
            for k, (want, got) in enumerate(zip(expected, actual)):
                assert_close(want, got, what=f"output {k} fed {sorted(feeds)}")
        return session


def with_bias(x):
    bias = tf.compat.v1.placeholder_with_default(tf.constant([1.0, 2.0, 3.0]), [None], name="bias")
    training = tf.compat.v1.placeholder_with_default(False, [], name="training")
    return x + bias, tf.where(training, x * 0.5, x)


def test_constant_default_is_an_optional_input(caplog):
    x = rand(2, 3)
    with caplog.at_level(logging.INFO, logger="tf2ir"):
        session = _convert_and_compare(with_bias, [spec((2, 3))], [
            {"x0": x},                                                    # the defaults
            {"x0": x, "bias": np.array([5.0, -1.0, 0.5], np.float32)},   # a fed value
            {"x0": x, "bias": np.array([7.0], np.float32), "training": np.array(True)},
        ])
    assert [i.name for i in session.get_inputs()] == ["x0"]            # the required input
    assert sorted(i.name for i in session.get_overridable_initializers()) == ["bias", "training"]
    notes = [r.getMessage() for r in caplog.records if r.name == "tf2ir"]
    assert any("PlaceholderWithDefault bias: an optional model input 'bias'" in n for n in notes)
    assert not any(r.levelno >= logging.WARNING for r in caplog.records if r.name == "tf2ir")


def test_default_that_is_an_output_keeps_the_input_name():
    fn = lambda x: (x * 2.0, tf.compat.v1.placeholder_with_default(  # noqa: E731
        tf.constant([[1, 2]], tf.int32), [None, 2], name="pair"))
    _convert_and_compare(fn, [spec((3,))], [
        {"x0": rand(3)}, {"x0": rand(3), "pair": np.array([[3, 4], [5, 6]], np.int32)}])


def test_computed_default_warns_and_computes_the_default(caplog):
    def fn(x):
        scale = tf.compat.v1.placeholder_with_default(x[0] * 2.0, [3], name="scale")
        return x * scale
    x = rand(2, 3)
    with caplog.at_level(logging.INFO, logger="tf2ir"):
        session = _convert_and_compare(fn, [spec((2, 3))], [{"x0": x}])
    assert [i.name for i in session.get_inputs()] == ["x0"]
    assert not session.get_overridable_initializers()
    warnings = [r.getMessage() for r in caplog.records
                if r.name == "tf2ir" and r.levelno == logging.WARNING]
    assert warnings == ["note: PlaceholderWithDefault scale: default is computed, the converted "
                        "model has no input for it"]
