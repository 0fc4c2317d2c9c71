"""`tf2ir new-plugin` writes a package that installs, registers through the entry point,
converts a graph with its op type, and whose own test passes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import onnx
import pytest

from tests.conftest import run_cli


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    root = tmp_path_factory.mktemp("scaffold")
    result = run_cli("new-plugin", "lgamma_ops", "--origin-op", "Lgamma", "-o", str(root))
    assert result.returncode == 0, result.stderr
    package = root / "lgamma_ops"
    assert (package / "setup.cfg").read_text().count("lgamma_ops = lgamma_ops.plugin") == 1
    site = root / "site"
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                          "--target", str(site), str(package)], capture_output=True, text=True)
    assert pip.returncode == 0, pip.stderr
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    return package, env


def test_installed_plugin_is_listed(installed):
    _, env = installed
    result = run_cli("plugins", "--json", env=env)
    assert result.returncode == 0, result.stderr
    row = next(r for r in json.loads(result.stdout) if r["origin_op_type"] == "Lgamma")
    assert row["plugin"] == "lgamma_ops" and row["ir_op_type"] == "Lgamma"
    assert row["source"].startswith("lgamma_ops 0.1.0 (")     # the installed package, named
    assert row["imply_type"] == "CUSTOM"


def test_graph_with_the_op_converts(installed, freeze, tmp_path):
    import tensorflow as tf
    _, env = installed
    path, _ = freeze(lambda x: tf.math.lgamma(x) + 1.0, tf.TensorSpec([None, 3], tf.float32, name="x"))
    assert run_cli("convert", path, "-o", str(tmp_path / "no.onnx")).returncode == 3  # not installed here
    out = str(tmp_path / "m.onnx")
    result = run_cli("convert", path, "-o", out, env=env)
    assert result.returncode == 0, result.stderr
    model = onnx.load(out)
    custom = [n for n in model.graph.node if n.op_type == "Lgamma"]
    assert len(custom) == 1 and custom[0].domain == "ai.tf2ir.lgamma_ops"
    assert "ai.tf2ir.lgamma_ops" in [o.domain for o in model.opset_import]


def test_scaffolded_test_passes(installed):
    package, env = installed
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             str(package / "tests")], capture_output=True, text=True, env=env,
                            cwd=str(package))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout


def test_refuses_to_overwrite_and_bad_names(tmp_path):
    assert run_cli("new-plugin", "p", "--origin-op", "Lgamma", "-o", str(tmp_path)).returncode == 0
    again = run_cli("new-plugin", "p", "--origin-op", "Lgamma", "-o", str(tmp_path))
    assert again.returncode == 2 and "exists already" in again.stderr
    bad = run_cli("new-plugin", "q", "--origin-op", "not an op", "-o", str(tmp_path))
    assert bad.returncode == 2 and "not a TF op type" in bad.stderr
    taken = run_cli("new-plugin", "r", "--origin-op", "Relu", "-o", str(tmp_path))
    assert taken.returncode == 2 and "--ir-op Relu" in taken.stderr
