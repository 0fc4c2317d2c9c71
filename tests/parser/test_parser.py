"""The GraphDef parser: no TensorFlow import, .pbtxt input, outputs, pruning, pass-through ops."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from tests.conftest import max_abs_error, run_cli, run_onnx
from tf2ir.tools.models import run_frozen_graph


@pytest.fixture
def two_headed(freeze):
    """x → dense → relu → (a: softmax, b: tanh); a side branch nobody asks for."""
    import tensorflow as tf
    w = np.random.RandomState(0).normal(size=(6, 5)).astype(np.float32)

    def fn(x):
        h = tf.nn.relu(tf.matmul(x, w) + 0.5)
        a = tf.identity(tf.nn.softmax(h), name="a")
        b = tf.identity(tf.tanh(tf.stop_gradient(h) * 2.0), name="b")
        return a, b
    return freeze(fn, tf.TensorSpec([None, 6], tf.float32, name="x"), "two_headed")


def test_converting_a_pb_never_imports_tensorflow(two_headed, tmp_path):
    """Run the CLI with tensorflow made unimportable: the conversion must still work."""
    path, _ = two_headed
    blocker = tmp_path / "block"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(textwrap.dedent("""
        import sys
        class _Block:
            def find_spec(self, name, path=None, target=None):
                if name == "tensorflow" or name.startswith("tensorflow."):
                    raise ImportError("tensorflow is blocked in this test")
        sys.meta_path.insert(0, _Block())
    """))
    out = str(tmp_path / "m.onnx")
    code = ("import sys; from tf2ir.tools.cli import main; rc = main(['convert', %r, '-o', %r]); "
            "assert 'tensorflow' not in sys.modules; sys.exit(rc)" % (path, out))
    env = {"PYTHONPATH": str(blocker), "PATH": "/usr/bin:/bin"}
    import os
    env = {**os.environ, **env}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    check = subprocess.run([sys.executable, "-c", "import tensorflow"], env=env, capture_output=True)
    assert check.returncode != 0  # the blocker really blocks


def test_default_outputs_are_the_sinks_and_match_tf(two_headed, tmp_path):
    path, outputs = two_headed
    out = str(tmp_path / "m.onnx")
    assert run_cli("convert", path, "-o", out).returncode == 0
    x = np.random.RandomState(1).normal(size=(3, 6)).astype(np.float32)
    got = run_onnx(out, {"x": x})
    expected = run_frozen_graph(path, {"x": x}, outputs)
    assert len(got) == len(expected) == 2
    for g, e in zip(got, expected):
        assert max_abs_error(g, e) <= 1e-5


def test_selected_output_prunes_the_rest(two_headed, tmp_path):
    import onnx
    path, _ = two_headed
    ir_path = str(tmp_path / "m.ir")
    assert run_cli("convert", path, "-o", ir_path, "--outputs", "b").returncode == 0
    text = open(ir_path).read()
    assert "Softmax" not in text and "Tanh" in text
    assert "Identity" not in text and "StopGradient" not in text
    out = str(tmp_path / "m.onnx")
    assert run_cli("convert", path, "-o", out, "--outputs", "b:0").returncode == 0
    assert [o.name for o in onnx.load(out).graph.output] == ["b"]


def test_pbtxt_input(two_headed, tmp_path):
    from google.protobuf import text_format
    from tf2ir.parser.load import load_graph_def
    path, outputs = two_headed
    pbtxt = tmp_path / "m.pbtxt"
    pbtxt.write_text(text_format.MessageToString(load_graph_def(path)))
    out = str(tmp_path / "m.onnx")
    result = run_cli("convert", str(pbtxt), "-o", out)
    assert result.returncode == 0, result.stderr
    x = np.ones((2, 6), np.float32)
    assert max_abs_error(run_onnx(out, {"x": x})[1], run_frozen_graph(path, {"x": x}, outputs)[1]) <= 1e-5


def test_output_that_is_an_input_gets_an_identity(freeze, tmp_path):
    import tensorflow as tf
    path, _ = freeze(lambda x: (tf.identity(x), x * 3.0), tf.TensorSpec([2], tf.float32, name="x"))
    out = str(tmp_path / "m.onnx")
    result = run_cli("convert", path, "-o", out)
    assert result.returncode == 0, result.stderr
    x = np.array([1.0, 2.0], np.float32)
    got = run_onnx(out, {"x": x})
    assert sorted(tuple(g.tolist()) for g in got) == [(1.0, 2.0), (3.0, 6.0)]


def test_a_const_and_the_placeholder_chosen_as_outputs(tmp_path):
    """--outputs may name a Const (its copy takes the Const's name) and the input itself
    (the copy is NAME/output: ONNX names are unique)."""
    import onnx
    from tf2ir.parser.load import load_graph_def
    from tf2ir.tools.bench import generate_ladder
    path = generate_ladder(str(tmp_path / "ladder.pb"), 20)
    out = str(tmp_path / "m.onnx")
    result = run_cli("convert", path, "-o", out, "--outputs", "rung0/w,Identity,input")
    assert result.returncode == 0, result.stderr
    assert [o.name for o in onnx.load(out).graph.output] == ["rung0/w", "Identity", "input/output"]
    x = np.random.RandomState(0).randn(3, 16).astype(np.float32)
    w, _, echoed = run_onnx(out, {"input": x})
    const = next(n for n in load_graph_def(path).node if n.name == "rung0/w")
    expected = np.frombuffer(const.attr["value"].tensor.tensor_content, np.float32).reshape(16, 16)
    np.testing.assert_array_equal(w, expected)
    np.testing.assert_array_equal(echoed, x)
