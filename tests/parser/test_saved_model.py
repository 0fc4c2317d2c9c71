"""SavedModel directories and Keras .keras/.h5 files: frozen by TensorFlow, then converted
like a .pb; inputs and outputs keep the signature's names."""

from __future__ import annotations

import os

import numpy as np
import pytest

from tests.conftest import max_abs_error, run_cli, run_onnx


@pytest.fixture(scope="module")
def saved_model(tmp_path_factory):
    """A tf.Module with a variable and two signatures: serving_default and 'add'."""
    import tensorflow as tf
    w = np.random.RandomState(0).normal(size=(4, 3)).astype(np.float32)

    class Scorer(tf.Module):
        def __init__(self):
            super().__init__()
            self.w = tf.Variable(w)

        @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="features")])
        def serve(self, features):
            logits = tf.matmul(features, self.w) + 0.25
            return {"scores": tf.nn.softmax(logits), "logits": logits}

        @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="a"),
                                      tf.TensorSpec([None, 4], tf.float32, name="b")])
        def add(self, a, b):
            return {"total": tf.tanh(a + b * 2.0)}

    module = Scorer()
    path = str(tmp_path_factory.mktemp("saved") / "scorer")
    tf.saved_model.save(module, path, signatures={"serving_default": module.serve, "add": module.add})
    return path


def _tf_signature(path, name, **feeds):
    import tensorflow as tf
    loaded = tf.saved_model.load(path)
    return {k: v.numpy() for k, v in loaded.signatures[name](**feeds).items()}


def _single_error_line(result, code, *needles):
    assert result.returncode == code, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tf2ir: error: "), result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_saved_model_converts_and_matches_tf(saved_model, tmp_path):
    out = str(tmp_path / "m.onnx")
    result = run_cli("convert", saved_model, "-o", out)
    assert result.returncode == 0, result.stderr
    x = np.random.RandomState(1).normal(size=(3, 4)).astype(np.float32)
    import onnx
    model = onnx.load(out)
    assert [i.name for i in model.graph.input] == ["features"]
    names = [o.name for o in model.graph.output]
    assert sorted(names) == ["logits", "scores"]
    got = dict(zip(names, run_onnx(out, {"features": x})))
    want = _tf_signature(saved_model, "serving_default", features=x)
    for key in want:
        assert max_abs_error(got[key], want[key]) <= 1e-5, key


def test_signature_option_picks_another_signature(saved_model, tmp_path):
    out = str(tmp_path / "add.onnx")
    result = run_cli("convert", saved_model, "--signature", "add", "-o", out, "--quiet")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    rng = np.random.RandomState(2)
    a, b = (rng.normal(size=(2, 4)).astype(np.float32) for _ in range(2))
    got = run_onnx(out, {"a": a, "b": b})
    want = _tf_signature(saved_model, "add", a=a, b=b)
    assert len(got) == 1 and max_abs_error(got[0], want["total"]) <= 1e-5


def test_verify_a_saved_model_signature(saved_model, tmp_path):
    """verify freezes the SavedModel again for TensorFlow: the node names line up."""
    result = run_cli("verify", saved_model, "--signature", "add", "--batch", "3")
    assert result.returncode == 0, result.stderr
    assert "verification passed: 1 output" in result.stdout
    assert "total" in result.stdout


def test_unknown_signature_lists_the_available_ones(saved_model, tmp_path):
    out = str(tmp_path / "m.onnx")
    result = run_cli("convert", saved_model, "--signature", "nope", "-o", out)
    _single_error_line(result, 2, "scorer", "'nope'", "available: add, serving_default")
    assert not (tmp_path / "m.onnx").exists()


def test_bad_tag_is_one_line(saved_model, tmp_path):
    result = run_cli("convert", saved_model, "--tag", "train", "-o", str(tmp_path / "m.onnx"))
    _single_error_line(result, 1, "scorer", "tags train")


def test_directory_that_is_not_a_saved_model(tmp_path):
    empty = tmp_path / "empty_dir"
    empty.mkdir()
    result = run_cli("convert", str(empty), "-o", str(tmp_path / "m.onnx"))
    _single_error_line(result, 1, "empty_dir", "not a SavedModel")


def _keras_model():
    import keras
    keras.utils.set_random_seed(0)
    inputs = keras.Input((6,), name="feat")
    x = keras.layers.Dense(8, activation="relu")(inputs)
    x = keras.layers.LayerNormalization()(x)
    outputs = keras.layers.Dense(3, activation="softmax", name="probs")(x)
    return keras.Model(inputs, outputs)


@pytest.mark.parametrize("suffix", [".keras", ".h5"])
def test_keras_file_converts_and_matches_tf(tmp_path, suffix):
    model = _keras_model()
    path = str(tmp_path / f"model{suffix}")
    model.save(path)
    out = str(tmp_path / "m.onnx")
    result = run_cli("convert", path, "-o", out, "-q")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    x = np.random.RandomState(3).normal(size=(5, 6)).astype(np.float32)
    import onnx
    onnx_model = onnx.load(out)
    assert [i.name for i in onnx_model.graph.input] == ["feat"]
    assert [o.name for o in onnx_model.graph.output] == ["probs"]
    got = run_onnx(out, {"feat": x})[0]
    assert max_abs_error(got, model(x, training=False).numpy()) <= 1e-5


@pytest.mark.parametrize("suffix", [".keras", ".h5"])
def test_corrupt_keras_file(tmp_path, suffix):
    bad = tmp_path / f"broken{suffix}"
    bad.write_bytes(b"not a keras model" * 10)
    out = tmp_path / "m.onnx"
    result = run_cli("convert", str(bad), "-o", str(out))
    _single_error_line(result, 1, f"broken{suffix}", "Keras")
    assert not out.exists()


def test_load_model_of_a_pb_needs_no_signature(tmp_path):
    from tf2ir.parser.load import load_model
    graph_def, outputs = load_model(os.path.join(os.path.dirname(__file__), "..", "data",
                                                 "sample_cnn.pb"))
    assert outputs is None and len(graph_def.node) > 10
