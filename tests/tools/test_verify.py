"""`tf2ir verify` and `tf2ir convert --verify`: TF vs onnxruntime, and the first diverging node."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

from tests.conftest import run_cli
from tf2ir.tools.verify import compare

# A plugin that maps TF's Tanh to IR Sigmoid, overriding the built-in one: a wrong conversion.
WRONG_TANH_PLUGIN = """\
from tf2ir.plugins import hookimpl, register_op


def parse(src, op):
    pass


@hookimpl
def tf2ir_op_mappings():
    return [register_op("Sigmoid").origin_op_type("Tanh").parse_params_fn(parse).with_priority(10)]
"""


@pytest.fixture(scope="module")
def mlp_pb(tmp_path_factory):
    """x → MatMul → Tanh → Mul → Softmax, frozen."""
    import tensorflow as tf
    from tf2ir.tools.models import freeze_function
    weights = np.random.default_rng(1).standard_normal((8, 4)).astype(np.float32)

    def mlp(x):
        return tf.nn.softmax(tf.tanh(tf.matmul(x, weights)) * 1.5)
    path = str(tmp_path_factory.mktemp("verify") / "mlp.pb")
    freeze_function(mlp, tf.TensorSpec([None, 8], tf.float32, name="x"), path)
    return path


@pytest.fixture(scope="module")
def wrong_plugin_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("wrong_plugins")
    (folder / "wrong_tanh.py").write_text(WRONG_TANH_PLUGIN)
    return str(folder)


def _table_rows(stdout):
    return [line.split() for line in stdout.splitlines()
            if line and not line.startswith(("OUTPUT", "verification", "first divergence"))]


def test_verify_matches_and_prints_table(mlp_pb):
    result = run_cli("verify", mlp_pb, "--batch", "3")
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["OUTPUT", "SHAPE", "MAX", "ABS", "ERR", "MAX", "REL", "ERR", "OK"]
    rows = _table_rows(result.stdout)
    assert len(rows) == 1 and rows[0][0] == "Identity" and rows[0][-1] == "yes"
    assert "[3, 4]" in lines[1] and float(rows[0][3]) < 1e-5
    assert "verification passed" in result.stdout and "first divergence" not in result.stdout


def test_verify_writes_onnx_when_asked(mlp_pb, tmp_path):
    out = str(tmp_path / "mlp.onnx")
    result = run_cli("verify", mlp_pb, "--onnx", out)
    assert result.returncode == 0, result.stderr
    assert os.path.getsize(out) > 0


def test_verify_with_user_inputs(mlp_pb, tmp_path):
    x = np.linspace(-2, 2, 40, dtype=np.float32).reshape(5, 8)
    npz = str(tmp_path / "inputs.npz")
    np.savez(npz, x=x)
    result = run_cli("verify", mlp_pb, "--inputs-data", npz)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "[5, 4]" in result.stdout and "x [5, 8] float32" in result.stdout

    npy = str(tmp_path / "x.npy")
    np.save(npy, x[:2].astype(np.float64))   # cast to the input's dtype
    result = run_cli("verify", mlp_pb, "--inputs-data", f"x={npy}")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "[2, 4]" in result.stdout

    np.savez(npz, y=x)
    result = run_cli("verify", mlp_pb, "--inputs-data", npz)
    assert result.returncode == 2 and "y" in result.stderr and "not an input" in result.stderr


def test_wrong_plugin_is_found_as_first_divergence(mlp_pb, wrong_plugin_dir):
    result = run_cli("verify", mlp_pb, "--plugin-dir", wrong_plugin_dir)
    assert result.returncode == 4, result.stdout + result.stderr
    assert _table_rows(result.stdout)[0][-1] == "NO"
    assert "verification FAILED" in result.stdout
    line = [x for x in result.stdout.splitlines() if x.startswith("first divergence")]
    assert len(line) == 1
    assert re.search(r"node 'Tanh' \(op Tanh, plugin \S*wrong_tanh\.py\)", line[0]), line[0]


def test_convert_verify(mlp_pb, wrong_plugin_dir, tmp_path):
    out = str(tmp_path / "ok.onnx")
    result = run_cli("convert", mlp_pb, "-o", out, "--verify")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "verification passed" in result.stdout and os.path.exists(out)

    out = str(tmp_path / "wrong.onnx")
    result = run_cli("convert", mlp_pb, "-o", out, "--verify", "--plugin-dir", wrong_plugin_dir)
    assert result.returncode == 4, result.stdout + result.stderr
    assert "first divergence: node 'Tanh' (op Tanh, plugin" in result.stdout
    assert os.path.exists(out)   # a mismatch keeps the model, for debugging

    result = run_cli("convert", mlp_pb, "-o", str(tmp_path / "m.ir"), "--verify")
    assert result.returncode == 0, result.stdout + result.stderr


def test_tolerances_are_respected(mlp_pb, wrong_plugin_dir):
    # Tanh→Sigmoid moves the softmax outputs by about 0.33: a loose --atol accepts it.
    result = run_cli("verify", mlp_pb, "--plugin-dir", wrong_plugin_dir, "--atol", "0.5")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "atol=0.5" in result.stdout
    result = run_cli("verify", mlp_pb, "--plugin-dir", wrong_plugin_dir, "--atol", "0.01")
    assert result.returncode == 4


def test_compare_uses_rtol_and_atol():
    expected = np.array([1.0, 100.0], np.float32)
    actual = expected + np.array([1e-3, 1e-2], np.float32)
    assert not compare("y", actual, expected, rtol=0, atol=1e-3).ok
    assert compare("y", actual, expected, rtol=1e-4, atol=1.1e-3).ok
    row = compare("y", actual, expected, rtol=0, atol=0.02)
    assert row.ok and row.max_abs == pytest.approx(1e-2, rel=1e-3)
    assert row.max_rel == pytest.approx(1e-3, rel=1e-3)
    assert not compare("y", actual[:1], expected, 1, 1).ok   # shapes differ
    assert compare("y", np.array([np.nan]), np.array([np.nan]), 0, 0).ok
    assert not compare("y", np.array([np.nan]), np.array([1.0]), 0, 0).ok
