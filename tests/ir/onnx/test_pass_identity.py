"""Identity/no-op elimination: pass-through nodes go, graph output names stay."""

from __future__ import annotations

import numpy as np

from tf2ir.ir.onnx.passes.identity import remove_identities
from tests.ir.onnx.test_pass_common import check_pass, node, op_types

F32 = np.float32


def test_no_ops_are_removed():
    inits = {"zero": np.array(0, F32), "one": np.ones((1, 1), F32),
             "pads": np.zeros(6, np.int64)}
    nodes = [node("Identity", ["x"], ["a"]), node("Transpose", ["a"], ["b"], perm=[0, 1, 2]),
             node("Add", ["b", "zero"], ["c"]), node("Mul", ["one", "c"], ["d"]),
             node("Pad", ["d", "pads"], ["e"]), node("Relu", ["e"], ["y"])]
    x = np.random.RandomState(0).randn(2, 3, 4).astype(F32)
    g, count = check_pass(remove_identities, nodes, inits, {"x": (F32, [None, 3, 4])},
                          {"y": (F32, [None, 3, 4])}, {"x": x})
    assert count == 5 and op_types(g) == ["Relu"] and list(g.nodes[0].input) == ["x"]


def test_a_neutral_constant_that_broadcasts_is_kept():
    # x + zeros(1, 1, 1) turns a rank-2 x into rank 3: not a no-op.
    inits = {"zero": np.zeros((1, 1, 1), F32)}
    nodes = [node("Add", ["x", "zero"], ["y"])]
    g, count = check_pass(remove_identities, nodes, inits, {"x": (F32, [2, 3])},
                          {"y": (F32, [1, 2, 3])}, {"x": np.ones((2, 3), F32)})
    assert count == 0 and op_types(g) == ["Add"]


def test_an_identity_writing_a_graph_output_renames_its_producer():
    nodes = [node("Relu", ["x"], ["r"]), node("Identity", ["r"], ["y"]), node("Neg", ["r"], ["z"])]
    x = np.array([-1.0, 2.0], F32)
    g, count = check_pass(remove_identities, nodes, {}, {"x": (F32, [2])},
                          {"y": (F32, [2]), "z": (F32, [2])}, {"x": x})
    assert count == 1 and op_types(g) == ["Relu", "Neg"]
    assert list(g.nodes[0].output) == ["y"] and list(g.nodes[1].input) == ["y"]


def test_an_identity_between_input_and_output_stays():
    nodes = [node("Identity", ["x"], ["y"])]
    g, count = check_pass(remove_identities, nodes, {}, {"x": (F32, [2])}, {"y": (F32, [2])},
                          {"x": np.ones(2, F32)})
    assert count == 0 and op_types(g) == ["Identity"]


def test_neutral_vectors_go_where_the_shape_is_known_and_booleans_too():
    # EfficientNet's Normalization of an untrained model: x - [0, 0, 0], / [1, 1, 1]
    inits = {"zeros": np.zeros(3, F32), "ones": np.ones((1, 1, 3), F32),
             "false": np.zeros(1, bool), "true": np.ones((), bool)}
    nodes = [node("Sub", ["x", "zeros"], ["a"]), node("Relu", ["a"], ["y"]),
             node("Div", ["x", "ones"], ["b"]), node("Relu", ["b"], ["y2"]),
             node("Or", ["false", "m"], ["o"]), node("And", ["o", "true"], ["p"]),
             node("Not", ["p"], ["z"])]
    x = np.random.RandomState(0).randn(2, 4, 3).astype(F32)
    m = np.random.RandomState(1).rand(2, 4, 3) > 0.5
    g, count = check_pass(remove_identities, nodes, inits,
                          {"x": (F32, [None, 4, 3]), "m": (bool, [2, 4, 3])},
                          {"y": (F32, [None, 4, 3]), "y2": (F32, [None, 4, 3]),
                           "z": (bool, [2, 4, 3])}, {"x": x, "m": m})
    assert count == 4 and op_types(g) == ["Relu", "Relu", "Not"]


def test_a_neutral_vector_that_would_broadcast_or_of_unknown_shape_stays():
    inits = {"zeros": np.zeros(3, F32)}
    nodes = [node("Add", ["x", "zeros"], ["y"]), node("Add", ["u", "zeros"], ["z"])]
    g, count = check_pass(remove_identities, nodes, inits,
                          {"x": (F32, [2, 1]), "u": (F32, [None, None])},
                          {"y": (F32, [2, 3]), "z": (F32, [None, 3])},
                          {"x": np.ones((2, 1), F32), "u": np.ones((2, 3), F32)})
    assert count == 0
