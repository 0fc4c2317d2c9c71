"""The model zoo tool (tools/zoo.py): one small keras.applications model per family that
tests/e2e/test_keras_applications.py does not cover, through the tool's own functions
(freeze in a child, convert with the CLI, onnxruntime vs TensorFlow), plus the rows the
tool makes of failures. Frozen models and references are cached in the session's
model_dir, shared with the keras_app fixture."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from tf2ir.tools import zoo

MODELS = [
    "MobileNetV3Small",                # hard-swish fusion, unknown spatial dims in the graph
    "DenseNet121",                     # concatenations, average pooling
    pytest.param("NASNetMobile", marks=pytest.mark.slow),      # separable convs, cropping
    pytest.param("InceptionV3", marks=pytest.mark.slow),       # multi-branch, valid padding
    pytest.param("Xception", marks=pytest.mark.slow),
    pytest.param("ResNet50V2", marks=pytest.mark.slow),        # pre-activation, explicit pads
    pytest.param("EfficientNetV2B0", marks=pytest.mark.slow),
    pytest.param("InceptionResNetV2", marks=pytest.mark.slow),
]


@pytest.mark.parametrize("name", MODELS)
def test_zoo_model_converts_and_matches_tensorflow(model_dir, tmp_path, name):
    row = zoo.run_model(name, model_dir, str(tmp_path), batch=2)
    assert row.status == "ok", f"{name}: {row.status}: {row.error}"
    assert row.converted and row.tf_nodes > 100 and row.peak_mb > 0
    assert row.spread > 5e-4   # randomized batch norms: the output is far from uniform
    assert row.max_abs_error <= min(1e-4, 0.01 * row.spread)


def _tiny_model(model_dir, name="Tiny"):
    """A frozen x*2+1 GraphDef (written without TensorFlow) and its cached reference, named
    like a zoo model so that the zoo neither builds nor runs it in TensorFlow."""
    from tensorboard.compat.proto import graph_pb2
    from tensorboard.compat.proto.tensor_pb2 import TensorProto
    graph = graph_pb2.GraphDef()
    x = graph.node.add(name="input", op="Placeholder")
    x.attr["dtype"].type = 1
    for size in (-1, 4):
        x.attr["shape"].shape.dim.add(size=size)
    for const_name, value in (("two", 2.0), ("one", 1.0)):
        const = graph.node.add(name=const_name, op="Const")
        const.attr["dtype"].type = 1
        const.attr["value"].tensor.CopyFrom(TensorProto(dtype=1, float_val=[value]))
        const.attr["value"].tensor.tensor_shape.SetInParent()
    graph.node.add(name="mul", op="Mul", input=["input", "two"]).attr["T"].type = 1
    graph.node.add(name="out", op="AddV2", input=["mul", "one"]).attr["T"].type = 1
    paths = zoo.reference_paths(name, model_dir, 3, 5)
    with open(paths["pb"], "wb") as f:
        f.write(graph.SerializeToString())
    x = np.random.RandomState(5).uniform(0, 1, (3, 4)).astype(np.float32)
    np.savez(paths["npz"], x=x, out0=x * 2 + 1)
    with open(paths["json"], "w") as f:
        json.dump({"input": "input", "input_shape": [4], "outputs": ["out:0"],
                   "tf_nodes": 5, "tf_noise": [0.0], "tf_kernel_noise": [0.0]}, f)
    return paths


def test_a_cached_model_matches_then_a_wrong_reference_is_a_mismatch(tmp_path):
    work = str(tmp_path / "work")
    os.makedirs(work)
    paths = _tiny_model(str(tmp_path))
    row = zoo.run_model("Tiny", str(tmp_path), work, batch=3, seed=5)
    assert row.ok and row.converted and row.tf_nodes == 5, row
    assert row.max_abs_error <= 1e-6 and row.spread > 0.5 and row.tf_peak_mb is None
    assert os.listdir(work) == []   # converted models are removed after each row

    with np.load(paths["npz"]) as ref:
        x, expected = ref["x"], ref["out0"]
    np.savez(paths["npz"], x=x, out0=expected + 0.1)
    row = zoo.run_model("Tiny", str(tmp_path), work, batch=3, seed=5)
    assert row.status == "mismatch" and row.converted
    assert "out:0: max abs error 0.1" in row.error


def test_a_reference_without_kernel_noise_gets_it_from_tf(tmp_path):
    """An older cached reference lacks TF's other-kernel run: only that child runs (TF with
    oneDNN off), and its distance joins tf_noise."""
    work = str(tmp_path / "work")
    os.makedirs(work)
    paths = _tiny_model(str(tmp_path))
    with open(paths["json"]) as f:
        info = json.load(f)
    del info["tf_kernel_noise"]
    with open(paths["json"], "w") as f:
        json.dump(info, f)
    row = zoo.run_model("Tiny", str(tmp_path), work, batch=3, seed=5)
    assert row.ok and row.tf_peak_mb is not None, row
    with open(paths["json"]) as f:
        info = json.load(f)
    assert info["tf_kernel_noise"][0] < 1e-6 and len(info["tf_noise"]) == 1


def test_failures_are_rows_and_set_the_exit_status(tmp_path, capsys):
    model_dir = str(tmp_path)
    # A cached "model" that is not a GraphDef: the conversion fails, the row says why.
    paths = zoo.reference_paths("Broken", model_dir, 2, 0)
    with open(paths["pb"], "wb") as f:
        f.write(b"not a graph")
    np.savez(paths["npz"], x=np.zeros((2, 4), np.float32), out0=np.zeros((2, 4), np.float32))
    with open(paths["json"], "w") as f:
        json.dump({"input": "input", "input_shape": [4], "outputs": ["out:0"],
                   "tf_nodes": 3, "tf_noise": [0.0], "tf_kernel_noise": [0.0]}, f)
    json_path = str(tmp_path / "rows.json")
    status = zoo.main(["Broken", "NoSuchNet", "--model-dir", model_dir, "--json", json_path])
    assert status == 1
    rows = {r["model"]: r for r in json.load(open(json_path))}
    assert rows["Broken"]["status"] == "convert failed" and not rows["Broken"]["converted"]
    assert "not a GraphDef" in rows["Broken"]["error"]
    assert paths["pb"] not in rows["Broken"]["error"]           # the long path is cut
    assert rows["NoSuchNet"]["status"] == "build failed"
    assert "NoSuchNet" in rows["NoSuchNet"]["error"]
    out = capsys.readouterr().out
    assert "0/2 models convert and match TensorFlow" in out
    assert "Broken" in out and "convert failed: " in out


def test_judge_is_relative_to_the_spread_and_knows_tf_noise():
    expected = np.array([[0.0, 1.0]], np.float32)
    check = zoo.judge("y", expected, expected + 0.005, 0.0, 0.01)
    assert (check.verdict, check.spread, check.tolerance) == ("ok", 1.0, 0.01)
    assert zoo.judge("y", expected, expected + 0.02, 0.0, 0.01).verdict == "mismatch"
    # TF itself moves by 0.1 under a 1-ulp input change: 0.2 is noise, 0.5 is not.
    assert zoo.judge("y", expected, expected + 0.2, 0.1, 0.01).verdict == "unstable"
    assert zoo.judge("y", expected, expected + 0.5, 0.1, 0.01).verdict == "mismatch"
    # Noise below the tolerance still widens it to NOISE_FACTOR x the noise, as "unstable".
    assert zoo.judge("y", expected, expected + 0.02, 0.006, 0.01).verdict == "unstable"
    assert zoo.judge("y", expected, expected + 0.03, 0.006, 0.01).verdict == "mismatch"
    with pytest.raises(ValueError, match="shape"):
        zoo.judge("y", expected, np.zeros((2, 2), np.float32), 0.0, 0.01)


def test_logits_behind_a_softmax_are_compared_too():
    from tensorboard.compat.proto import graph_pb2
    graph = graph_pb2.GraphDef()
    x = graph.node.add(name="input", op="Placeholder")
    for size in (-1, 8):
        x.attr["shape"].shape.dim.add(size=size)
    graph.node.add(name="dense/BiasAdd", op="BiasAdd", input=["input", "b"])
    graph.node.add(name="b", op="Const")
    graph.node.add(name="dense/Softmax", op="Softmax", input=["dense/BiasAdd"])
    graph.node.add(name="Identity", op="Identity", input=["dense/Softmax"])
    info = zoo._graph_signature(graph)
    assert info["outputs"] == ["Identity:0", "dense/BiasAdd:0"]
    assert info["input_shape"] == [8] and info["tf_nodes"] == 5 and info["softmax_of"] == {0: 1}
