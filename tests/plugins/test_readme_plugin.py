"""The plugin example in README.md, run as written through --plugin-dir and TF2IR_PLUGIN_PATH."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

from tests.conftest import max_abs_error, run_cli, run_onnx
from tf2ir.tools.models import run_frozen_graph

README = os.path.join(os.path.dirname(__file__), "..", "..", "README.md")


@pytest.fixture
def plugin_dir(tmp_path):
    text = open(README).read()
    section = text[text.index("## Writing a plugin"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    folder = tmp_path / "my_plugins"
    folder.mkdir()
    (folder / "log1p_plugin.py").write_text(code)
    return str(folder)


@pytest.fixture
def log1p_pb(freeze):
    import tensorflow as tf
    path, outputs = freeze(lambda x: tf.math.log1p(x) * 2.0,
                           tf.TensorSpec([None, 3], tf.float32, name="x"), "log1p")
    return path, outputs


def test_without_the_plugin_log1p_is_unsupported(log1p_pb, tmp_path):
    result = run_cli("convert", log1p_pb[0], "-o", str(tmp_path / "m.onnx"))
    assert result.returncode == 3 and "Log1p (1 node" in result.stderr


@pytest.mark.parametrize("how", ["--plugin-dir", "env"])
def test_readme_plugin_converts_log1p(log1p_pb, plugin_dir, tmp_path, how):
    path, outputs = log1p_pb
    out = str(tmp_path / "m.onnx")
    if how == "env":
        result = run_cli("convert", path, "-o", out, env={**os.environ, "TF2IR_PLUGIN_PATH": plugin_dir})
    else:
        result = run_cli("convert", path, "-o", out, "--plugin-dir", plugin_dir)
    assert result.returncode == 0, result.stderr
    x = np.linspace(-0.9, 2, 12, dtype=np.float32).reshape(4, 3)
    expected = run_frozen_graph(path, {"x": x}, outputs)[0]
    assert max_abs_error(run_onnx(out, {"x": x})[0], expected) <= 1e-6


def test_plugins_command_lists_the_plugin(plugin_dir):
    import json
    result = run_cli("plugins", "--json", "--plugin-dir", plugin_dir)
    assert result.returncode == 0, result.stderr
    rows = {r["origin_op_type"]: r for r in json.loads(result.stdout)}
    assert rows["Log1p"]["ir_op_type"] == "Log1p"
    assert rows["Log1p"]["source"].endswith("log1p_plugin.py")
    assert rows["Conv2D"]["plugin"].startswith("builtin")


def test_failing_plugin_is_named(log1p_pb, tmp_path):
    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / "broken.py").write_text(
        "from tf2ir.plugins import hookimpl, register_op\n"
        "def parse(src, op):\n    raise RuntimeError('boom')\n"
        "@hookimpl\ndef tf2ir_op_mappings():\n"
        "    return [register_op('Log').origin_op_type('Log1p').parse_params_fn(parse)]\n")
    out = str(tmp_path / "m.onnx")
    result = run_cli("convert", log1p_pb[0], "-o", out, "--plugin-dir", str(folder))
    assert result.returncode == 1
    line = result.stderr.strip()
    assert "broken.py" in line and "Log1p" in line and "boom" in line and "node '" in line
    assert not os.path.exists(out)
