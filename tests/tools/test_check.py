"""`tf2ir check`: the support report of a model, without converting it."""

from __future__ import annotations

import json
import os

import pytest

from tests.conftest import run_cli

SAMPLE_CNN = os.path.join(os.path.dirname(__file__), "..", "data", "sample_cnn.pb")


@pytest.fixture
def unsupported_pb(freeze):
    import tensorflow as tf

    def fn(x):
        a = tf.math.special.dawsn(x)          # Dawsn: no plugin, twice
        b = tf.math.special.dawsn(x * 2.0)
        return tf.math.special.expint(tf.nn.relu(a + b))   # Expint: no plugin
    path, _ = freeze(fn, tf.TensorSpec([None, 4], tf.float32, name="x"), "unsupported")
    return path


def test_supported_graph_exits_0_with_json(tmp_path):
    result = run_cli("check", SAMPLE_CNN, "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["supported"] is True and report["unsupported"] == []
    assert report["tf_nodes"] > 0 and report["fusions"] == {}
    rows = {row["op_type"]: row for row in report["op_types"]}
    assert rows["Conv2D"]["count"] == 2
    assert rows["Conv2D"]["ir_op_type"] == "Conv2D" and rows["Conv2D"]["plugin"] == "builtin_conv"
    assert rows["Placeholder"]["status"] == "converter"
    assert sum(row["count"] for row in report["op_types"]) == report["tf_nodes"]
    assert not list(tmp_path.iterdir())   # nothing written


def test_table_is_aligned(tmp_path):
    result = run_cli("check", SAMPLE_CNN)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["OP", "TYPE", "COUNT", "IR", "OP", "PLUGIN"]
    conv = next(line for line in lines if line.startswith("Conv2D "))
    assert conv.index("builtin_conv") == lines[0].index("PLUGIN")
    assert "0 unsupported" in result.stdout and "no scope fusion applies" in result.stdout


def test_unsupported_ops_exit_3_with_examples(unsupported_pb):
    result = run_cli("check", unsupported_pb, "--json")
    assert result.returncode == 3, result.stderr
    report = json.loads(result.stdout)
    assert report["supported"] is False
    unsupported = {row["op_type"]: row for row in report["unsupported"]}
    assert set(unsupported) == {"Dawsn", "Expint"}
    assert unsupported["Dawsn"]["count"] == 2
    assert "Dawsn" in unsupported["Dawsn"]["example"]
    assert unsupported["Expint"]["example"]
    result = run_cli("check", unsupported_pb)
    assert result.returncode == 3
    assert "UNSUPPORTED, e.g. '" in result.stdout
    assert "2 unsupported" in result.stdout and "Dawsn (2x, e.g. '" in result.stdout


def test_layer_norm_fusion_is_listed(tmp_path):
    import keras
    keras.utils.set_random_seed(0)
    inputs = keras.Input((5, 8), name="tokens")
    x = keras.layers.LayerNormalization()(inputs)
    outputs = keras.layers.Dense(4)(x)
    path = str(tmp_path / "ln.keras")
    keras.Model(inputs, outputs).save(path)
    result = run_cli("check", path, "--json", "--quiet")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    report = json.loads(result.stdout)
    assert report["fusions"] == {"layer_norm": 1}
    rows = {row["op_type"]: row for row in report["op_types"]}
    fused = [row for row in rows.values() if "layer_norm" in row["fused_by"]]
    assert any(row["status"] == "fused" or row["plugin"] for row in fused)
    text = run_cli("check", path, "-q")
    assert text.returncode == 0 and "fusion layer_norm  1 match" in text.stdout


def test_missing_model_is_one_line_error(tmp_path):
    result = run_cli("check", str(tmp_path / "nope.pb"))
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "nope.pb" in lines[0] and "does not exist" in lines[0]


def test_pruned_assert_is_listed_apart_and_does_not_fail(freeze, tmp_path):
    """An Assert that only a control edge reaches is pruned by convert (no output needs it):
    check lists it apart from the unsupported op types and exits 0, as convert does."""
    import tensorflow as tf

    def fn(x):
        check = tf.debugging.Assert(tf.reduce_all(x > -10.0), ["x is too small"])
        with tf.control_dependencies([check]):
            y = tf.identity(x)
        return tf.nn.relu(y) + tf.math.special.dawsn(x)      # Dawsn: needed and unsupported
    path, _ = freeze(fn, tf.TensorSpec([None, 4], tf.float32, name="x"), "asserted")

    def pruned_fn(x):
        check = tf.debugging.Assert(tf.reduce_all(x > -10.0), ["x is too small"])
        with tf.control_dependencies([check]):
            return tf.nn.relu(tf.identity(x)) * 2.0
    pruned_path, _ = freeze(pruned_fn, tf.TensorSpec([None, 4], tf.float32, name="x"), "pruned")

    result = run_cli("check", pruned_path, "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["supported"] and report["unsupported"] == []
    assert [row["op_type"] for row in report["pruned_unsupported"]] == ["Assert"]
    assert report["pruned_unsupported"][0]["status"] == "pruned"
    assert "Assert" not in {row["op_type"] for row in report["op_types"]}
    text = run_cli("check", pruned_path)
    assert text.returncode == 0 and "0 unsupported" in text.stdout
    assert "pruned, not converted (no output needs them): Assert (1x, e.g. '" in text.stdout
    assert run_cli("convert", pruned_path, "-o", str(tmp_path / "pruned.onnx")).returncode == 0

    result = run_cli("check", path, "--json")
    assert result.returncode == 3
    report = json.loads(result.stdout)
    assert [row["op_type"] for row in report["unsupported"]] == ["Dawsn"]
    assert [row["op_type"] for row in report["pruned_unsupported"]] == ["Assert"]


def test_the_dry_run_leaves_nothing_behind(tmp_path):
    """check compiles and checks the model as convert does, in a temporary directory that it
    removes: nothing is left there or beside the model."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = dict(os.environ, TMPDIR=str(scratch))
    beside = sorted(os.listdir(os.path.dirname(SAMPLE_CNN)))
    result = run_cli("check", SAMPLE_CNN, "--json", env=env)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["exit_status"] == 0 and report["stage"] == "checker"
    assert report["errors"] == [] and report["convert_error"] == ""
    assert list(scratch.iterdir()) == []
    assert sorted(os.listdir(os.path.dirname(SAMPLE_CNN))) == beside


def test_passes_options_reach_the_dry_run(tmp_path):
    """check takes convert's --passes and --check-passes: a bad word is a usage error (2)."""
    result = run_cli("check", SAMPLE_CNN, "--passes", "sideways:cse")
    assert result.returncode == 2 and "bad --passes value" in result.stderr
    result = run_cli("check", SAMPLE_CNN, "--passes", "off:all", "--check-passes", "--json")
    assert result.returncode == 0, result.stderr
