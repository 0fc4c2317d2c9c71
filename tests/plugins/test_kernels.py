"""Plugin ops that run: the kernel example of docs/plugins.md as a plugin file, a model with
its op converted, run through the runtime entry (`tf2ir run`, `tf2ir.InferenceSession`,
`tf2ir verify`) and compared with TensorFlow; a failing kernel is one clear error."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

from tests.conftest import run_cli

tf = pytest.importorskip("tensorflow")
DOCS = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "plugins.md")


def _example(name: str) -> str:
    text = open(DOCS).read()
    return re.search(rf"<!-- kernel-example: {name} -->\n```python\n(.*?)```", text, re.S).group(1)


def fn(x):
    return tf.math.ndtri(x * 0.5 + 0.25) - 1.0


@pytest.fixture
def converted(tmp_path, freeze):
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "my_math.py").write_text(_example("ndtri"))
    pb, _ = freeze(fn, tf.TensorSpec([None, 3], tf.float32, name="x"))
    out = str(tmp_path / "m.onnx")
    result = run_cli("convert", pb, "-o", out, "--plugin-dir", str(folder))
    assert result.returncode == 0, result.stderr
    return pb, out, folder


def test_the_docs_kernel_runs_through_the_runtime_entry(converted, tmp_path):
    import onnx

    import tf2ir
    from tf2ir.plugins.manager import PluginManager
    pb, out, folder = converted
    nodes = [n for n in onnx.load(out).graph.node if n.domain == "ai.tf2ir.my_math"]
    assert [n.op_type for n in nodes] == ["Ndtri"]
    x = np.random.default_rng(0).uniform(0.0, 1.0, (4, 3)).astype(np.float32)
    session = tf2ir.InferenceSession(out, manager=PluginManager(plugin_dirs=[str(folder)]))
    (got,) = session.run(None, {"x": x})
    np.testing.assert_allclose(got, fn(tf.constant(x)).numpy(), rtol=1e-5, atol=1e-5)
    np.save(tmp_path / "x.npy", x)
    ran = run_cli("run", out, "--inputs-data", f"x={tmp_path / 'x.npy'}", "--plugin-dir",
                  str(folder), "-o", str(tmp_path / "y.npz"))
    assert ran.returncode == 0, ran.stderr
    assert "float32  [4, 3]" in ran.stdout
    with np.load(tmp_path / "y.npz") as archive:
        np.testing.assert_allclose(archive[archive.files[0]], got)
    verified = run_cli("verify", pb, "--plugin-dir", str(folder))
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_without_the_plugin_run_says_what_is_missing(converted, tmp_path):
    _, out, _ = converted
    np.save(tmp_path / "x.npy", np.ones((2, 3), np.float32))
    ran = run_cli("run", out, "--inputs-data", f"x={tmp_path / 'x.npy'}")
    assert ran.returncode == 1
    lines = ran.stderr.strip().splitlines()
    assert len(lines) == 1 and "Ndtri" in lines[0] and lines[0].startswith("tf2ir: error:")


def test_a_failing_kernel_is_a_kernel_error_naming_the_node(converted, tmp_path):
    import tf2ir
    from tf2ir.ir.onnx.runtime import KernelError
    from tf2ir.plugins.manager import PluginManager
    _, out, folder = converted
    manager = PluginManager(plugin_dirs=[str(folder)])

    def broken(x):
        raise ValueError("no ndtri today")
    manager.prototypes["Ndtri"].kernel_fn = broken
    session = tf2ir.InferenceSession(out, manager=manager)
    with pytest.raises(KernelError, match=r"ai.tf2ir.my_math:Ndtri node .*ValueError: no ndtri today"):
        session.run(None, {"x": np.ones((2, 3), np.float32)})


NDTRI_PBTXT = """node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }
       attr { key: "shape" value { shape { dim { size: -1 } dim { size: 4 } } } } }
node { name: "y" op: "Ndtri" input: "x" attr { key: "T" value { type: DT_FLOAT } } }
"""


def test_batch_verify_runs_plugin_ops_and_reports_a_wrong_kernel(tmp_path):
    import json
    good, wrong, models = tmp_path / "good", tmp_path / "wrong", tmp_path / "models"
    for folder in (good, wrong, models):
        folder.mkdir()
    (good / "my_math.py").write_text(_example("ndtri"))
    (wrong / "my_math.py").write_text(_example("ndtri").replace(
        "def ndtri_kernel(x):", "def ndtri_kernel(x):\n    return x"))
    (models / "ndtri.pbtxt").write_text(NDTRI_PBTXT)
    (models / "relu.pbtxt").write_text(NDTRI_PBTXT.replace('op: "Ndtri"', 'op: "Relu"'))
    report = str(tmp_path / "report.json")
    ok = run_cli("batch", str(models), "-o", str(tmp_path / "out"), "--verify", "-j", "1",
                 "--plugin-dir", str(good), "--report", report)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    with open(report) as f:
        assert {m["name"]: m["status"] for m in json.load(f)["models"]} == {
            "ndtri.pbtxt": "ok", "relu.pbtxt": "ok"}
    bad = run_cli("batch", str(models), "-o", str(tmp_path / "out2"), "--verify", "-j", "1",
                  "--plugin-dir", str(wrong), "--report", report)
    assert bad.returncode == 4, bad.stdout + bad.stderr
    with open(report) as f:
        statuses = {m["name"]: (m["status"], m["message"]) for m in json.load(f)["models"]}
    assert statuses["relu.pbtxt"][0] == "ok" and statuses["ndtri.pbtxt"][0] == "mismatch"
    assert statuses["ndtri.pbtxt"][1].startswith("verification FAILED: 1 of 1 outputs differ")


def test_a_failing_kernel_is_one_line_from_tf2ir_run(converted, tmp_path):
    _, out, folder = converted
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "my_math.py").write_text(_example("ndtri").replace(
        "def ndtri_kernel(x):", "def ndtri_kernel(x):\n    raise ValueError('no ndtri today')"))
    np.save(tmp_path / "x.npy", np.full((2, 3), 0.5, np.float32))
    ran = run_cli("run", out, "--inputs-data", f"x={tmp_path / 'x.npy'}", "--plugin-dir",
                  str(broken), "-o", str(tmp_path / "y.npz"))
    assert ran.returncode == 1 and not (tmp_path / "y.npz").exists()
    lines = ran.stderr.strip().splitlines()
    assert len(lines) == 1, ran.stderr
    assert "ai.tf2ir.my_math:Ndtri node" in lines[0] and "ValueError: no ndtri today" in lines[0]


def test_a_new_op_signature_waits_for_the_live_python_op_sessions():
    """onnxruntime-extensions cannot grow its op table under a live session (it would crash):
    a model needing a signature outside the pool is refused while one lives, then runs."""
    import gc

    from onnx import TensorProto, helper

    from tf2ir.ir import ConversionError
    from tf2ir.ir.onnx.runtime import InferenceSession

    def model(types):
        node = helper.make_node("Op", [f"x{i}" for i in range(len(types))], ["y"],
                                domain="ai.tf2ir.test")
        inputs = [helper.make_tensor_value_info(f"x{i}", t, [2]) for i, t in enumerate(types)]
        graph = helper.make_graph([node], "g", inputs,
                                  [helper.make_tensor_value_info("y", types[0], [2])])
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18),
                                                       helper.make_opsetid("ai.tf2ir.test", 1)])

    def kernel_for(node):
        return lambda x, *rest: x + 1
    ones = np.ones(2, np.float32)
    first = InferenceSession(model([TensorProto.FLOAT]), kernel_for=kernel_for)
    mixed = model([TensorProto.FLOAT, TensorProto.INT8, TensorProto.UINT16])   # not pooled
    with pytest.raises(ConversionError, match="new signature.*another model with Python"):
        InferenceSession(mixed, kernel_for=kernel_for)
    np.testing.assert_array_equal(first.run(None, {"x0": ones})[0], ones + 1)
    del first
    gc.collect()
    second = InferenceSession(mixed, kernel_for=kernel_for)
    feeds = {"x0": ones, "x1": np.zeros(2, np.int8), "x2": np.zeros(2, np.uint16)}
    np.testing.assert_array_equal(second.run(None, feeds)[0], ones + 1)
