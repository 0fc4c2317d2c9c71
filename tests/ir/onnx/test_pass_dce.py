"""Dead-code elimination: unused chains and initializers go, outputs and their inputs stay."""

from __future__ import annotations

import numpy as np

from tf2ir.ir.onnx.passes.dce import remove_dead_nodes
from tests.ir.onnx.test_pass_common import check_pass, node, op_types

F32 = np.float32


def test_unused_chains_and_initializers_are_removed():
    inits = {"w": np.ones(4, F32), "unused": np.ones(3, F32)}
    nodes = [node("Relu", ["x"], ["a"]), node("Mul", ["a", "w"], ["dead1"]),
             node("Exp", ["dead1"], ["dead2"]), node("Split", ["a"], ["s0", "s1"], axis=0,
                                                     num_outputs=2),
             node("Neg", ["s1"], ["y"])]
    g, count = check_pass(remove_dead_nodes, nodes, inits, {"x": (F32, [4])}, {"y": (F32, [2])},
                          {"x": np.arange(4, dtype=F32)})
    assert count == 2 and op_types(g) == ["Relu", "Split", "Neg"]
    assert set(g.initializers) == set()


def test_nothing_to_remove():
    nodes = [node("Relu", ["x"], ["y"]), node("Neg", ["x"], ["z"])]
    g, count = check_pass(remove_dead_nodes, nodes, {}, {"x": (F32, [2])},
                          {"y": (F32, [2]), "z": (F32, [2])}, {"x": np.ones(2, F32)})
    assert count == 0 and op_types(g) == ["Relu", "Neg"]
