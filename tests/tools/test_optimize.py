"""`tf2ir optimize`: tf2ir's ONNX passes over ONNX models from anywhere. End states: the output
is a valid model computing the same values with fewer nodes; a bad file or option is one
error line, its exit status, and no output file."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tests.conftest import max_abs_error, run_cli, run_onnx
from tf2ir.tools.cli import main

SAMPLE_CNN = os.path.join(os.path.dirname(__file__), "..", "data", "sample_cnn.pb")
RNG = np.random.default_rng(0)


def _foreign_model() -> onnx.ModelProto:
    """An exporter's idioms: a Transpose pair that cancels, an Identity, a Constant node, +0."""
    w = numpy_helper.from_array(RNG.standard_normal((4, 3, 3, 3)).astype(np.float32), "W")
    b = numpy_helper.from_array(RNG.standard_normal(4).astype(np.float32), "B")
    nodes = [
        helper.make_node("Constant", [], ["zero"], value=numpy_helper.from_array(
            np.zeros((), np.float32))),
        helper.make_node("Transpose", ["x"], ["t1"], perm=[0, 2, 3, 1]),
        helper.make_node("Transpose", ["t1"], ["t2"], perm=[0, 3, 1, 2]),
        helper.make_node("Identity", ["t2"], ["t3"]),
        helper.make_node("Conv", ["t3", "W", "B"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c", "zero"], ["a"]),
        helper.make_node("Relu", ["a"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "foreign", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], [w, b])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 9
    onnx.checker.check_model(model, full_check=True)
    return model


def _assert_same_values(before: str, after: str, feeds) -> None:
    onnx.checker.check_model(after, full_check=True)
    for a, b in zip(run_onnx(before, feeds), run_onnx(after, feeds)):
        assert max_abs_error(a, b) <= 1e-5


def test_foreign_model_is_optimized(tmp_path, capsys):
    src, out = str(tmp_path / "in.onnx"), str(tmp_path / "out.onnx")
    onnx.save(_foreign_model(), src)
    assert main(["optimize", src, "-o", out]) == 0
    optimized = onnx.load(out)
    assert [n.op_type for n in optimized.graph.node] == ["Conv", "Relu"]
    assert [i.name for i in optimized.graph.input] == ["x"]
    assert [o.name for o in optimized.graph.output] == ["y"]
    x = RNG.standard_normal((1, 3, 8, 8)).astype(np.float32)
    _assert_same_values(src, out, {"x": x})
    printed = capsys.readouterr().out
    assert "Transpose" in printed and "total" in printed
    total = next(line for line in printed.splitlines() if line.startswith("total")).split()
    assert total[1:3] == ["7", "2"]


def test_passes_switch_like_convert(tmp_path):
    src, out = str(tmp_path / "in.onnx"), str(tmp_path / "out.onnx")
    onnx.save(_foreign_model(), src)
    assert main(["optimize", src, "-o", out, "--passes", "off:all", "-q"]) == 0
    assert len(onnx.load(out).graph.node) == 6
    assert main(["optimize", src, "-o", out, "--passes", "off:all,on:identity", "-q"]) == 0
    ops = [n.op_type for n in onnx.load(out).graph.node]
    assert "Identity" not in ops and "Add" not in ops


def test_external_data_and_overridable_initializer(tmp_path):
    """Weights in an external data file are read; an initializer that is also a graph input
    (a default the caller may override) stays an input and is never folded."""
    model = _foreign_model()
    scale = numpy_helper.from_array(np.full((1,), 2.0, np.float32), "scale")
    model.graph.initializer.append(scale)
    model.graph.input.append(helper.make_tensor_value_info("scale", TensorProto.FLOAT, [1]))
    y = model.graph.output[0]
    model.graph.node[-1].output[0] = "r"
    model.graph.node.append(helper.make_node("Mul", ["r", "scale"], ["y"]))
    src, out = str(tmp_path / "in.onnx"), str(tmp_path / "out.onnx")
    onnx.save(model, src, save_as_external_data=True, all_tensors_to_one_file=True,
              location="in.weights", size_threshold=0)
    assert os.path.getsize(src) < 1000   # the weights are elsewhere
    assert main(["optimize", src, "-o", out, "-q"]) == 0
    optimized = onnx.load(out)
    assert [i.name for i in optimized.graph.input] == ["x", "scale"] and y.name == "y"
    x = RNG.standard_normal((1, 3, 8, 8)).astype(np.float32)
    _assert_same_values(src, out, {"x": x})
    other = np.full((1,), -3.0, np.float32)
    _assert_same_values(src, out, {"x": x, "scale": other})


def test_tf2ir_output_unoptimized_then_optimized(tmp_path):
    raw, out = str(tmp_path / "raw.onnx"), str(tmp_path / "out.onnx")
    assert main(["convert", SAMPLE_CNN, "-o", raw, "--passes", "off:all", "-q"]) == 0
    assert main(["optimize", raw, "-o", out, "-q"]) == 0
    before, after = onnx.load(raw), onnx.load(out)
    assert len(after.graph.node) < len(before.graph.node)
    inp = before.graph.input[0]
    shape = [d.dim_value or 1 for d in inp.type.tensor_type.shape.dim]
    _assert_same_values(raw, out, {inp.name: RNG.standard_normal(shape).astype(np.float32)})


def _one_error_line(result, out, code, needle):
    assert result.returncode == code, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tf2ir: error: "), result.stderr
    assert needle in lines[0], lines[0]
    assert not os.path.exists(out)
    left = os.listdir(os.path.dirname(out))
    assert not [f for f in left if f.startswith(".") or "tmp" in f], left   # no temporary


def test_not_an_onnx_file(tmp_path):
    src, out = tmp_path / "in.onnx", str(tmp_path / "out.onnx")
    src.write_bytes(b"\xff\xfenot a model at all" * 10)
    result = run_cli("optimize", str(src), "-o", out)
    _one_error_line(result, out, 1, "not an ONNX model")
    assert sorted(os.listdir(tmp_path)) == ["in.onnx"]   # no temporary left either


def test_external_data_that_is_a_fifo_is_refused_without_blocking(tmp_path):
    src, out = str(tmp_path / "in.onnx"), str(tmp_path / "out.onnx")
    onnx.save(_foreign_model(), src, save_as_external_data=True, location="w.bin",
              size_threshold=0)
    os.remove(tmp_path / "w.bin")
    os.mkfifo(tmp_path / "w.bin")
    result = subprocess.run([sys.executable, "-m", "tf2ir.tools.cli", "optimize", src, "-o", out],
                            capture_output=True, text=True, timeout=60)   # (blocked: killed)
    _one_error_line(result, out, 1, "not regular file")   # (onnx's own check)


@pytest.mark.parametrize("case", ["missing", "same", "pass", "data"])
def test_bad_input_or_option(tmp_path, capsys, case):
    src, out = str(tmp_path / "in.onnx"), str(tmp_path / "out.onnx")
    model = _foreign_model()
    if case == "data":
        onnx.save(model, src, save_as_external_data=True, location="w.bin", size_threshold=0)
        os.remove(tmp_path / "w.bin")
    else:
        onnx.save(model, src)
    original = open(src, "rb").read()
    argv = {"missing": [str(tmp_path / "nope.onnx"), "-o", out],
            "same": [src, "-o", src],
            "pass": [src, "-o", out, "--passes", "on:no_such_pass"],
            "data": [src, "-o", out]}[case]
    code, needle = {"missing": (2, "no such model file"), "same": (2, "refusing to overwrite"),
                    "pass": (2, "no_such_pass"), "data": (1, "external data")}[case]
    assert main(["optimize", *argv]) == code
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("tf2ir: error: ") and needle in err[0], err
    assert not os.path.exists(out)
    assert open(src, "rb").read() == original
    assert not [f for f in os.listdir(tmp_path) if f.startswith(".") or "tmp" in f]


def test_invalid_result_is_not_written(tmp_path, monkeypatch):
    """A result onnx.checker rejects (a pass's defect) is exit 1 and no file."""
    import tf2ir.ir.onnx.optimize as optimize
    src, out = str(tmp_path / "in.onnx"), str(tmp_path / "out.onnx")
    onnx.save(_foreign_model(), src)
    real = optimize._rebuild

    def broken(*args):
        model = real(*args)
        model.graph.node[0].op_type = "NoSuchOp"
        return model
    monkeypatch.setattr(optimize, "_rebuild", broken)
    assert main(["optimize", src, "-o", out, "-q"]) == 1
    assert sorted(os.listdir(tmp_path)) == ["in.onnx"]


@pytest.mark.parametrize("case", ["unsorted", "twice", "subgraph"])
def test_a_graph_out_of_topological_order_is_one_error_line(tmp_path, capsys, case):
    """Nodes out of order (onnx.checker refuses them; the pass graph cannot hold them) or a
    name written twice: exit 1, one line naming the node, no file (was an internal error)."""
    src, out = str(tmp_path / "in.onnx"), str(tmp_path / "out.onnx")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    branch = helper.make_graph([helper.make_node("Neg", ["a"], ["b"])], "then", [],
                               [helper.make_tensor_value_info("b", TensorProto.FLOAT, [2])])
    nodes = {"unsorted": [helper.make_node("Relu", ["a"], ["y"], name="late"),
                          helper.make_node("Neg", ["x"], ["a"])],
             "twice": [helper.make_node("Neg", ["x"], ["y"]),
                       helper.make_node("Relu", ["x"], ["y"], name="late")],
             "subgraph": [helper.make_node("ReduceMin", ["x"], ["m"], keepdims=0),
                          helper.make_node("Cast", ["m"], ["c"], to=TensorProto.BOOL),
                          helper.make_node("If", ["c"], ["y"], name="late",
                                           then_branch=branch, else_branch=branch),
                          helper.make_node("Neg", ["x"], ["a"])]}[case]
    graph = helper.make_graph(nodes, "g", [x],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 9
    onnx.save(model, src)
    assert main(["optimize", src, "-o", out]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("tf2ir: error: "), err
    assert "node 'late'" in err[0] and "not a valid ONNX graph" in err[0], err
    assert not os.path.exists(out)
