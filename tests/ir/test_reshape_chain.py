"""reshape_chain pass: Reshape -> Unsqueeze and Reshape -> Squeeze of known result shapes
become single Reshapes of the first input; values unchanged in onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from tests.ir.onnx.test_pass_common import optimized_op_types


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
    return optimized_op_types(tmp_path, _model(), passes, (6, 4))


def test_reshape_chain_merges(tmp_path):
    assert _optimized(tmp_path, ["off:all", "on:reshape_chain", "on:dce"]) == ["Reshape", "Relu"]
    assert _optimized(tmp_path, ["off:all", "on:dce"]) == ["Reshape", "Unsqueeze", "Squeeze",
                                                          "Relu"]
