"""reshape_chain pass: Reshape -> Unsqueeze and Reshape -> Squeeze of known result shapes
become single Reshapes of the first input; values unchanged in onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from tests.conftest import max_abs_error, run_onnx
from tf2ir.ir.onnx.optimize import optimize_model
from tf2ir.ir.onnx.writer import write_model


def _model() -> onnx.ModelProto:
    c = lambda name, v: numpy_helper.from_array(np.array(v, np.int64), name)
    nodes = [helper.make_node("Reshape", ["x", "s1"], ["r"]),
             helper.make_node("Unsqueeze", ["r", "ax"], ["u"]),
             helper.make_node("Squeeze", ["u", "ax"], ["q"]),
             helper.make_node("Relu", ["q"], ["y"])]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [6, 4])],
        [c("s1", [6, 4]), c("ax", [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 9
    return model


def _optimized(tmp_path, passes):
    src, out = str(tmp_path / "in.onnx"), str(tmp_path / f"out{len(passes)}.onnx")
    onnx.save(_model(), src)
    model, initializers, _ = optimize_model(_model(), passes=passes, check_passes=True)
    write_model(model, initializers, out)
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    (want,), (got,) = run_onnx(src, {"x": x}), run_onnx(out, {"x": x})
    assert got.shape == (6, 4) and max_abs_error(want, got) == 0.0
    return [n.op_type for n in onnx.load(out).graph.node]


def test_reshape_chain_merges(tmp_path):
    assert _optimized(tmp_path, ["off:all", "on:reshape_chain", "on:dce"]) == ["Reshape", "Relu"]
    assert _optimized(tmp_path, ["off:all", "on:dce"]) == ["Reshape", "Unsqueeze", "Squeeze",
                                                          "Relu"]
