"""Common-subexpression elimination: equal nodes and equal small constants merge."""

from __future__ import annotations

import numpy as np

from tf2ir.ir.onnx.passes.cse import eliminate_common_subexpressions
from tf2ir.ir.onnx.passes.dce import remove_dead_nodes
from tests.ir.onnx.test_pass_common import check_pass, node, op_types

F32 = np.float32


def _cse_then_dce(g):
    count = eliminate_common_subexpressions(g)
    remove_dead_nodes(g)
    return count


def test_equal_nodes_and_constants_merge():
    inits = {"c1": np.array([2.0, 3.0], F32), "c2": np.array([2.0, 3.0], F32),
             "c3": np.array([2.0, 4.0], F32)}
    nodes = [node("Transpose", ["x"], ["t1"], perm=[1, 0]),
             node("Transpose", ["x"], ["t2"], perm=[1, 0]),
             node("Transpose", ["x"], ["t3"], perm=[0, 1]),         # other attribute: kept
             node("Mul", ["t1", "c1"], ["m1"]), node("Mul", ["t2", "c2"], ["m2"]),
             node("Mul", ["t2", "c3"], ["m3"]),                       # other constant: kept
             node("Sum", ["m1", "m2", "m3", "t3"], ["y"])]
    x = np.random.RandomState(0).randn(2, 2).astype(F32)
    g, count = check_pass(_cse_then_dce, nodes, inits, {"x": (F32, [2, 2])},
                          {"y": (F32, [2, 2])}, {"x": x})
    assert count == 2
    assert op_types(g) == ["Transpose", "Transpose", "Mul", "Mul", "Sum"]
    assert g.nodes[-1].input[0] == g.nodes[-1].input[1]


def test_graph_outputs_and_random_ops_are_not_merged():
    nodes = [node("Relu", ["x"], ["y"]), node("Relu", ["x"], ["z"]),
             node("RandomUniformLike", ["x"], ["r1"]), node("RandomUniformLike", ["x"], ["r2"]),
             node("Sub", ["r1", "r2"], ["d"]), node("Mul", ["d", "d"], ["w"])]
    g, count = check_pass(_cse_then_dce, nodes, {}, {"x": (F32, [2])},
                          {"y": (F32, [2]), "z": (F32, [2])}, {"x": np.ones(2, F32)})
    assert count == 0 and op_types(g) == ["Relu", "Relu"]


def test_equal_nodes_merge_without_constants_and_chains_follow():
    nodes = [node("Relu", ["x"], ["a"]), node("Relu", ["x"], ["b"]), node("Neg", ["a"], ["na"]),
             node("Neg", ["b"], ["nb"]), node("Add", ["na", "nb"], ["y"])]
    g, count = check_pass(_cse_then_dce, nodes, {}, {"x": (F32, [None])}, {"y": (F32, [None])},
                          {"x": np.array([-1.0, 2.0], F32)})
    assert count == 2 and op_types(g) == ["Relu", "Neg", "Add"]
