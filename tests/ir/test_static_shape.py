"""static_shape pass: Shape -> Gather -> ReduceProd -> Concat -> Reshape on a tensor of known
shape (an exporter's shape arithmetic) folds to a constant Reshape target; values unchanged."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from tests.ir.onnx.test_pass_common import optimized_op_types


def _model() -> onnx.ModelProto:
    c = lambda name, v: numpy_helper.from_array(np.array(v, np.int64), name)
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "i0"], ["d0"], axis=0),
             helper.make_node("Gather", ["s", "rest"], ["r"], axis=0),
             helper.make_node("ReduceProd", ["r"], ["p"], keepdims=1),
             helper.make_node("Concat", ["d0", "p"], ["target"], axis=0),
             helper.make_node("Reshape", ["x", "target"], ["y"])]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [c("i0", [0]), c("rest", [1, 2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 9
    return model


def _optimized(tmp_path, passes):
    return optimized_op_types(tmp_path, _model(), passes, (2, 12))


def test_shape_arithmetic_folds(tmp_path):
    assert _optimized(tmp_path, ["off:all", "on:static_shape"]) == ["Reshape"]
    # without the pass, folding alone cannot start: Shape's input is not a constant
    assert "Shape" in _optimized(tmp_path, ["off:all", "on:fold"])


def test_a_shape_written_out_stays_and_its_twin_folds():
    # on the pass graph itself (checked after the pass): a Shape that is a graph output keeps
    # its node; the Shape a Reshape target is computed from becomes an initializer, folded on
    from tests.ir.onnx.test_pass_common import check_pass, node, op_types
    from tf2ir.ir.onnx.passes.shapes import fold_static_shapes
    f32 = np.float32
    nodes = [node("Shape", ["x"], ["s"]), node("Shape", ["x"], ["s2"]),
             node("Gather", ["s2", "i0"], ["d0"], axis=0),
             node("Concat", ["d0", "twelve"], ["target"], axis=0),
             node("Reshape", ["x", "target"], ["y"])]
    inits = {"i0": np.array([0], np.int64), "twelve": np.array([12], np.int64)}
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(f32)
    g, count = check_pass(fold_static_shapes, nodes, inits, {"x": (f32, [2, 3, 4])},
                          {"s": (np.int64, [3]), "y": (f32, [2, 12])}, {"x": x})
    assert count == 3 and op_types(g) == ["Shape", "Reshape"]     # Shape, Gather, Concat
    assert g.const(g.nodes[1].input[1]).tolist() == [2, 12] and g.nodes[0].output == ("s",)
