"""The first plugin example of docs/plugins.md (once README's), run as written through --plugin-dir and
TF2IR_PLUGIN_PATH."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

from tests.conftest import max_abs_error, run_cli, run_onnx
from tf2ir.tools.models import run_frozen_graph

DOCS = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "plugins.md")


@pytest.fixture
def plugin_dir(tmp_path):
    text = open(DOCS).read()
    code = re.search(r"<!-- file: my_plugins/xlog1py_plugin.py -->\n```python\n(.*?)```", text, re.S).group(1)
    folder = tmp_path / "my_plugins"
    folder.mkdir()
    (folder / "xlog1py_plugin.py").write_text(code)
    return str(folder)


@pytest.fixture
def xlog1py_pb(freeze):
    import tensorflow as tf
    path, outputs = freeze(lambda x, y: tf.math.xlog1py(x, y) * 2.0,
                           [tf.TensorSpec([None, 3], tf.float32, name="x"),
                            tf.TensorSpec([None, 3], tf.float32, name="y")], "xlog1py")
    return path, outputs


def test_without_the_plugin_xlog1py_is_unsupported(xlog1py_pb, tmp_path):
    result = run_cli("convert", xlog1py_pb[0], "-o", str(tmp_path / "m.onnx"))
    assert result.returncode == 3 and "Xlog1py (1 node" in result.stderr


@pytest.mark.parametrize("how", ["--plugin-dir", "env"])
def test_readme_plugin_converts_xlog1py(xlog1py_pb, plugin_dir, tmp_path, how):
    path, outputs = xlog1py_pb
    out = str(tmp_path / "m.onnx")
    if how == "env":
        result = run_cli("convert", path, "-o", out, env={**os.environ, "TF2IR_PLUGIN_PATH": plugin_dir})
    else:
        result = run_cli("convert", path, "-o", out, "--plugin-dir", plugin_dir)
    assert result.returncode == 0, result.stderr
    x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(4, 3)
    x[1, :] = 0.0                      # 0 · log1p(-1) is 0, not nan
    y = np.linspace(-0.9, 2, 12, dtype=np.float32).reshape(4, 3)
    y[1, 0] = -1.0
    feeds = {"x": x, "y": y}
    expected = run_frozen_graph(path, feeds, outputs)[0]
    got = run_onnx(out, feeds)[0]
    assert np.isfinite(got).all() and max_abs_error(got, expected) <= 1e-6


def test_plugins_command_lists_the_plugin(plugin_dir):
    import json
    result = run_cli("plugins", "--json", "--plugin-dir", plugin_dir)
    assert result.returncode == 0, result.stderr
    rows = {r["origin_op_type"]: r for r in json.loads(result.stdout)}
    assert rows["Xlog1py"]["ir_op_type"] == "Xlog1py"
    assert rows["Xlog1py"]["source"].endswith("xlog1py_plugin.py")
    assert rows["Conv2D"]["plugin"].startswith("builtin")


def test_failing_plugin_is_named(xlog1py_pb, tmp_path):
    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / "broken.py").write_text(
        "from tf2ir.plugins import hookimpl, register_op\n"
        "def parse(src, op):\n    raise RuntimeError('boom')\n"
        "@hookimpl\ndef tf2ir_op_mappings():\n"
        "    return [register_op('Log').origin_op_type('Xlog1py').parse_params_fn(parse)]\n")
    out = str(tmp_path / "m.onnx")
    result = run_cli("convert", xlog1py_pb[0], "-o", out, "--plugin-dir", str(folder))
    assert result.returncode == 1
    line = result.stderr.strip()
    assert "broken.py" in line and "Xlog1py" in line and "boom" in line and "node '" in line
    assert not os.path.exists(out)
