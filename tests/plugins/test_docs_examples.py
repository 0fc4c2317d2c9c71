"""Every example of docs/plugins.md, run as a plugin file on a real TF graph and compared
with TensorFlow."""

from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest

from tests.conftest import max_abs_error, run_cli, run_onnx
from tf2ir.tools.models import run_frozen_graph

DOCS = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "plugins.md")


def examples():
    text = open(DOCS).read()
    return dict(re.findall(r"<!-- example: (\w+) -->\n```python\n(.*?)```", text, re.S))


def _graphs():
    """example name → (fn, specs, feeds, what the IR text must show)."""
    import tensorflow as tf
    rng = np.random.RandomState(0)
    w = rng.normal(size=(3, 3, 2, 4)).astype(np.float32)
    x4 = rng.normal(size=(2, 8, 8, 2)).astype(np.float32)
    x2 = rng.permutation(12).reshape(2, 6).astype(np.float32)
    spec4 = tf.TensorSpec([None, 8, 8, 2], tf.float32, name="x")
    spec2 = tf.TensorSpec([None, 6], tf.float32, name="x")
    return {
        "auto_mapping": (lambda x: tf.nn.leaky_relu(x, alpha=0.3), spec2, {"x": x2 - 6},
                         ["alpha: float 0.30000001192092896"]),
        "computed_attributes": (lambda x: tf.math.top_k(x, 2), spec2, {"x": x2},
                                ["dim: int -1", "largest: bool true"]),
        "formats": (lambda x: tf.nn.conv2d(x, w, 1, "SAME"), spec4, {"x": x4},
                    ["HWCN", "NHWC"]),
        "dynamic_io": (lambda x: tf.split(tf.concat([x, x * 2.0, x + 1.0], 1), 3, axis=1),
                       spec2, {"x": x2}, ["x2=", "num_split: int 3"]),
        "one_to_many": (lambda x: tf.math.add_n([x, x * 2.0, x + 1.0]), spec2, {"x": x2},
                        ['original_type: str "AddN"', "Data() {index: int 2}", " Add("]),
        "many_to_one": (_scoped("my_softplus", lambda x: tf.math.log(1.0 + tf.exp(x))),
                        spec2, {"x": x2 / 4}, [" Softplus(x="], ),
        "many_to_many": (lambda x: tf.nn.relu(_scoped("my_affine", lambda t: t * 3.0 + 0.5)(x)),
                         spec2, {"x": x2 - 6}, ['"my_affine/add/scale" Mul(', '"my_affine/add/shift" Add(']),
    }


def _scoped(scope, fn):
    import tensorflow as tf

    def wrapped(x):
        with tf.name_scope(scope):
            return fn(x)
    return wrapped


FUSIONS = {"many_to_one": "my_softplus", "many_to_many": "my_affine"}


@pytest.mark.parametrize("name", ["auto_mapping", "computed_attributes", "formats", "dynamic_io",
                                  "one_to_many", "many_to_one", "many_to_many"])
def test_docs_example(name, freeze, tmp_path):
    code = examples()[name]
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / f"{name}.py").write_text(code)
    fn, spec, feeds, needles = _graphs()[name]
    path, outputs = freeze(fn, spec)
    ir_path, onnx_path = str(tmp_path / "m.ir"), str(tmp_path / "m.onnx")
    result = run_cli("convert", path, "-o", ir_path, "--plugin-dir", str(folder), "-v")
    assert result.returncode == 0, result.stderr
    if name in FUSIONS:
        assert f"{FUSIONS[name]}" in result.stderr      # -v lists the fusions applied
    else:
        assert "tf2ir: note: " in result.stderr and "overrides builtin_" in result.stderr  # never silent
    text = open(ir_path).read()
    for needle in needles:
        assert needle in text
    assert run_cli("compile", ir_path, "-o", onnx_path).returncode == 0
    for got, expected in zip(run_onnx(onnx_path, feeds), run_frozen_graph(path, feeds, outputs)):
        assert max_abs_error(got, expected) <= 1e-5
    listing = run_cli("plugins", "--json", "--plugin-dir", str(folder))
    rows = [r for r in json.loads(listing.stdout) if r["source"].endswith(f"{name}.py")]
    if name == "many_to_one":
        assert [r["origin_op_type"] for r in rows] == ["MySoftplus"]
    elif name != "many_to_many":
        assert rows and all(r["overrides"] for r in rows)   # each example overrides a built-in


def test_every_docs_example_is_tested():
    assert set(examples()) == set(_graphs())
