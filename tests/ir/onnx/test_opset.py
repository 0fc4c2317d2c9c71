"""The opset a compiled model declares: 18 (the lowerings' op versions) unless an op only
a newer opset defines is used: Gelu (fused GELU) makes it 20, and onnxruntime runs it."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
from onnx import helper

from tf2ir.ir.onnx.compile import OPSET, choose_opset
from tests.ir.onnx.test_pass_common import node


def test_the_opset_is_18_unless_a_newer_op_is_used():
    plain = [node("Relu", ["x"], ["r"]), node("Softplus", ["r"], ["y"])]
    assert choose_opset(plain) == OPSET == 18
    gelu = plain + [node("Gelu", ["y"], ["z"], approximate="tanh")]
    assert choose_opset(gelu) == 20
    body = helper.make_graph([node("Gelu", ["x"], ["g"])], "then", [],
                             [helper.make_tensor_value_info("g", 1, None)])
    nested = [node("If", ["c"], ["o"], then_branch=body, else_branch=body)]
    assert choose_opset(nested) == 20


def test_onnxruntime_runs_gelu_at_the_chosen_opset():
    nodes = [node("Gelu", ["x"], ["y"]), node("Gelu", ["x"], ["z"], approximate="tanh")]
    info = lambda name: helper.make_tensor_value_info(name, 1, [5])     # noqa: E731
    graph = helper.make_graph(nodes, "g", [info("x")], [info("y"), info("z")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", choose_opset(nodes))])
    model.ir_version = 9
    x = np.linspace(-3, 3, 5).astype(np.float32)
    y, z = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, {"x": x})
    from math import erf, pi, sqrt, tanh
    exact = [v * 0.5 * (1 + erf(v / sqrt(2))) for v in x]
    approx = [0.5 * v * (1 + tanh(sqrt(2 / pi) * (v + 0.044715 * v ** 3))) for v in x]
    np.testing.assert_allclose(y, exact, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(z, approx, rtol=1e-5, atol=1e-6)
