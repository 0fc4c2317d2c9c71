"""The TensorFlow fallback delegate (`--fallback tf`, parser/fallback.py): the nodes no plugin
maps become TFSubgraph segments that the runtime entry runs with TensorFlow, and the model
matches TensorFlow. Dawsn and Expint stand for op types no built-in plugin maps."""

from __future__ import annotations

import json
import os

import numpy as np
import onnx
import pytest

from tests.conftest import run_cli

tf = pytest.importorskip("tensorflow")

RNG = np.random.default_rng(11)
W1 = RNG.normal(size=(3, 3, 3, 8)).astype(np.float32) * 0.3
W2 = RNG.normal(size=(3, 3, 8, 4)).astype(np.float32) * 0.3


def cnn_with_two_runs(x):
    h = tf.nn.relu(tf.nn.conv2d(x, W1, 1, "SAME"))
    h = tf.math.special.dawsn(tf.math.special.expint(h + 0.5))   # one run of two unmapped nodes
    h = tf.nn.conv2d(h, W2, 1, "SAME")
    h = tf.math.special.dawsn(h)                                 # a second run
    return tf.reduce_mean(h, axis=[1, 2])


def diamond(x):
    """Dawsn → Relu (mapped) → Expint, and Dawsn → Expint's other operand: one segment of
    both would be a cycle through the Relu."""
    a = tf.math.special.dawsn(x + 2.0)
    return tf.math.special.expint(tf.nn.relu(a) + 1.0) * a


def loop_body(x):
    return tf.while_loop(lambda i, a: i < 3,
                         lambda i, a: (i + 1, tf.math.special.dawsn(a + 2.0) * 0.3), [0, x])[1]


CASES = {
    "cnn": (cnn_with_two_runs, [None, 8, 8, 3], [(1, 8, 8, 3), (3, 8, 8, 3)], 2),
    "diamond": (diamond, [None, 5], [(1, 5), (4, 5)], 2),
    "loop": (loop_body, [None, 4], [(1, 4), (3, 4)], 0),   # the segment is in the body
}


def _convert(name, tmp_path, *extra):
    from tf2ir.tools.models import freeze_function
    fn, shape, _, _ = CASES[name]
    pb = str(tmp_path / f"{name}.pb")
    freeze_function(fn, tf.TensorSpec(shape, tf.float32, name="x"), pb)
    out = str(tmp_path / f"{name}.onnx")
    return pb, out, run_cli("convert", pb, "-o", out, *extra)


def _segments(graph):
    found = []
    for node in graph.node:
        if node.domain == "ai.tf2ir.tf":
            found.append(node)
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                found += _segments(attr.g)
    return found


@pytest.mark.parametrize("name", sorted(CASES))
def test_fallback_segments_run_by_tensorflow_match_it(name, tmp_path):
    import tf2ir
    fn, _, shapes, top_level = CASES[name]
    pb, out, refused = _convert(name, tmp_path)
    assert refused.returncode == 3 and not os.path.exists(out), refused.stderr
    _, _, result = _convert(name, tmp_path, "--fallback", "tf")
    assert result.returncode == 0, result.stderr
    model = onnx.load(out)
    top = [n for n in model.graph.node if n.domain == "ai.tf2ir.tf"]
    assert len(top) == top_level and all(n.op_type == "TFSubgraph" for n in top)
    assert _segments(model.graph), "no TFSubgraph node"
    session = tf2ir.InferenceSession(out)
    for shape in shapes:
        x = RNG.uniform(0.1, 2.0, shape).astype(np.float32)
        (got,) = session.run(None, {"x": x})
        np.testing.assert_allclose(got, fn(tf.constant(x)).numpy(), rtol=1e-4, atol=1e-5)


def test_a_run_that_would_close_a_cycle_is_split(tmp_path):
    pb, _, _ = _convert("diamond", tmp_path, "--fallback", "tf")
    result = run_cli("check", pb, "--fallback", "tf", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert [s["op_types"] for s in report["segments"]] == [{"Dawsn": 1}, {"Expint": 1}]
    assert not report["unsupported"]


def test_check_lists_the_segments_and_their_share(tmp_path):
    pb, _, _ = _convert("cnn", tmp_path)
    result = run_cli("check", pb, "--fallback", "tf")
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stdout.splitlines() if line.startswith("fallback segment")]
    assert len(lines) == 2, result.stdout
    assert "2 nodes" in lines[0] and "Dawsn 1, Expint 1" in lines[0] and "% of the model" in lines[0]
    assert "(run by TensorFlow: --fallback tf)" in result.stdout
    plain = run_cli("check", pb)
    assert plain.returncode == 3 and "unsupported: Dawsn" in plain.stdout


def test_tf2ir_run_and_verify_take_fallback_models(tmp_path):
    pb, out, result = _convert("cnn", tmp_path, "--fallback", "tf")
    assert result.returncode == 0, result.stderr
    x = RNG.uniform(0.1, 2.0, (2, 8, 8, 3)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    ran = run_cli("run", out, "--inputs-data", f"x={tmp_path / 'x.npy'}",
                  "-o", str(tmp_path / "y.npz"))
    assert ran.returncode == 0, ran.stderr
    with np.load(tmp_path / "y.npz") as archive:
        (got,) = [archive[k] for k in archive.files]
    np.testing.assert_allclose(got, cnn_with_two_runs(tf.constant(x)).numpy(), rtol=1e-4,
                               atol=1e-5)
    verified = run_cli("verify", pb, "--fallback", "tf")
    assert verified.returncode == 0, verified.stdout + verified.stderr
