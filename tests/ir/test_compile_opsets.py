"""compile's target opset (issue 22): the same TF graphs written at every opset from 13 to the
newest the installed onnx and onnxruntime run, each model valid at its opset and computing what
TensorFlow computes; a form the target cannot hold is one error line."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from tf2ir.ir.errors import ConversionError, ExitStatus
from tf2ir.ir.onnx.compile import compile_to_model
from tf2ir.ir.onnx.forms import OLDEST_OPSET, newest_runnable_opset
from tf2ir.parser.pipeline import convert_file
from tf2ir.tools.models import freeze_function
from tests.conformance.harness import _manager

tf = pytest.importorskip("tensorflow")


def _net(x):
    """Conv, a reduction over constant axes, Split, LayerNorm-like moments, Resize, Pad, Gelu."""
    w = tf.constant(np.random.default_rng(0).standard_normal((3, 3, 4, 6)), tf.float32)
    y = tf.nn.relu(tf.nn.conv2d(x, w, 1, "SAME"))
    y = tf.pad(y, [[0, 0], [1, 1], [0, 2], [0, 0]])
    y = tf.image.resize(y, (12, 10))
    a, b = tf.split(y, 2, axis=3)
    mean, var = tf.nn.moments(a, axes=[3], keepdims=True)
    a = (a - mean) * tf.math.rsqrt(var + 1e-3)
    b = tf.nn.gelu(b, approximate=True)
    return tf.reduce_mean(a * b, axis=[1, 2]), tf.reduce_max(y, axis=3)


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("opsets")
    spec = tf.TensorSpec((2, 8, 8, 4), tf.float32, name="x")
    pb = str(tmp / "net.pb")
    freeze_function(_net, [spec], pb)
    x = np.random.default_rng(1).standard_normal((2, 8, 8, 4)).astype(np.float32)
    want = [t.numpy() for t in _net(tf.constant(x))]
    return pb, x, want


def _run(model, x):
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x})


@pytest.mark.parametrize("opset", range(OLDEST_OPSET, newest_runnable_opset() + 1))
def test_every_target_opset_is_valid_and_computes_what_tf_computes(converted, opset):
    pb, x, want = converted
    graph, _ = convert_file(pb, _manager())
    model = compile_to_model(graph, pb, opset=opset)
    assert [o.version for o in model.opset_import if o.domain == ""] == [opset]
    onnx.checker.check_model(model, full_check=True)
    for expected, got in zip(want, _run(model, x)):
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def test_a_target_outside_the_range_is_one_usage_error(converted):
    pb, _, _ = converted
    graph, _ = convert_file(pb, _manager())
    with pytest.raises(ConversionError) as info:
        compile_to_model(graph, pb, opset=12)
    assert info.value.exit_code == ExitStatus.USAGE
    assert "opset 12 is not a target" in str(info.value) and "\n" not in str(info.value)
