"""ONNX constant folding: batch-norm constants fold, the size bound holds, outputs stay."""

from __future__ import annotations

import numpy as np

from tf2ir.ir.onnx.passes.fold import FOLD_LIMIT_BYTES, fold_lowered_constants
from tests.ir.onnx.test_pass_common import check_pass, node, op_types

F32 = np.float32


def test_batch_norm_statistics_fold_to_one_constant():
    rng = np.random.RandomState(0)
    inits = {"var": rng.uniform(0.5, 1.5, 8).astype(F32), "eps": np.array(1e-3, F32),
             "gamma": rng.uniform(0.5, 1.5, 8).astype(F32)}
    nodes = [node("Add", ["var", "eps"], ["v"]), node("Sqrt", ["v"], ["s"]),
             node("Reciprocal", ["s"], ["r"]), node("Mul", ["r", "gamma"], ["scale"]),
             node("Mul", ["x", "scale"], ["y"])]
    x = rng.rand(2, 4, 8).astype(F32)
    g, count = check_pass(fold_lowered_constants, nodes, inits, {"x": (F32, [None, 4, 8])},
                          {"y": (F32, [None, 4, 8])}, {"x": x})
    assert count == 4 and op_types(g) == ["Mul"]
    np.testing.assert_allclose(g.initializers["scale"],
                               inits["gamma"] / np.sqrt(inits["var"] + F32(1e-3)), rtol=1e-6)


def test_shape_ops_and_integer_division_fold():
    inits = {"a": np.array([-7, 9], np.int64), "two": np.array([2], np.int64),
             "axes": np.array([0], np.int64)}
    nodes = [node("Div", ["a", "two"], ["q"]), node("Unsqueeze", ["q", "axes"], ["u"]),
             node("Transpose", ["u"], ["t"], perm=[1, 0]), node("Cast", ["t"], ["c"], to=1),
             node("Mul", ["x", "c"], ["y"])]
    x = np.ones((3, 2, 1), F32)
    g, count = check_pass(fold_lowered_constants, nodes, inits, {"x": (F32, [None, 2, 1])},
                          {"y": (F32, [None, 2, 1])}, {"x": x})
    assert count == 4 and op_types(g) == ["Mul"]
    assert g.initializers["c"].ravel().tolist() == [-3.0, 4.0]      # ONNX Div truncates


def test_results_over_the_size_bound_are_not_folded():
    n = int(np.sqrt(FOLD_LIMIT_BYTES / 4)) * 2             # n*n floats: 4x the bound
    inits = {"col": np.ones((n, 1), F32), "row": np.ones((1, n), F32)}
    nodes = [node("Mul", ["col", "row"], ["big"]), node("ReduceSum", ["big"], ["s"], keepdims=0),
             node("Add", ["x", "s"], ["y"])]
    g, count = check_pass(fold_lowered_constants, nodes, inits, {"x": (F32, [2])},
                          {"y": (F32, [2])}, {"x": np.zeros(2, F32)})
    assert count == 0 and "big" not in g.initializers


def test_graph_outputs_are_never_folded_away():
    inits = {"a": np.array([1.0, 2.0], F32)}
    nodes = [node("Neg", ["a"], ["y"]), node("Relu", ["x"], ["z"])]
    g, count = check_pass(fold_lowered_constants, nodes, inits, {"x": (F32, [2])},
                          {"y": (F32, [2]), "z": (F32, [2])}, {"x": np.ones(2, F32)})
    assert count == 0 and op_types(g) == ["Neg", "Relu"]


def test_scalars_stay_scalars():
    inits = {"a": np.array(3.0, F32)}
    nodes = [node("Identity", ["a"], ["b"]), node("Neg", ["b"], ["c"]), node("Add", ["x", "c"], ["y"])]
    g, count = check_pass(fold_lowered_constants, nodes, inits, {"x": (F32, [])}, {"y": (F32, [])},
                          {"x": np.array(1.0, F32)})
    assert count == 2 and g.initializers["c"].shape == ()


def test_ir_folding_is_size_bounded_too():
    from tf2ir.ir import TensorDesc
    from tf2ir.ir.graph import Graph
    from tf2ir.ir.passes import fold_constants
    from tf2ir.ir.passes.fold import FOLD_LIMIT_BYTES
    graph = Graph()
    x = graph.add_input("x", TensorDesc("float32", (2,)))
    side = int(np.sqrt(FOLD_LIMIT_BYTES / 4)) * 2
    small = graph.add_const(np.array([1, 1], np.int32), "dims")
    big = graph.add_const(np.array([side, side], np.int32), "dims_big")
    one = graph.add_const(np.array(1.0, F32), "one")
    fills = [graph.add_node("Fill", [dims, one]).outputs[0] for dims in (small, big)]
    sums = [graph.add_node("Add", [x, f]).outputs[0] for f in fills]
    graph.outputs.extend(sums)
    assert fold_constants(graph) == 1
    assert [n.op_type for n in graph.nodes if n.op_type == "Fill"] == ["Fill"]
