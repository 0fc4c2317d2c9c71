"""Reshape simplification: run-time targets from the input's own shape become constants;
a Reshape followed by a Transpose of unit dims becomes one Reshape."""

from __future__ import annotations

import numpy as np

from tf2ir.ir.passes.dce import remove_dead_nodes
from tf2ir.ir.passes.reshape import simplify_reshapes
from tests.ir.test_pass_common import check_pass, node, op_types

F32 = np.float32
I64 = lambda *v: np.array(v, np.int64)     # noqa: E731


def _reshape_then_dce(g):
    count = simplify_reshapes(g)
    remove_dead_nodes(g)
    return count


def _keras_reshape(x="x", tail=("one", "one", "c")):
    """Reshape x (N, C) to (N, 1, 1, C) with N read from x's shape, as Keras freezes it."""
    return [node("Shape", [x], ["shape"]), node("Cast", ["shape"], ["shape32"], to=6),
            node("Slice", ["shape32", "zero", "one_i"], ["n1"]),
            node("Squeeze", ["n1", "zero"], ["n"]), node("Unsqueeze", ["n", "zero"], ["n_1"]),
            node("Concat", ["n_1", *tail], ["target32"], axis=0),
            node("Cast", ["target32"], ["target"], to=7), node("Reshape", [x, "target"], ["r"])]


INITS = {"zero": I64(0), "one_i": I64(1), "one": np.array([1], np.int32),
         "c": np.array([6], np.int32)}


def test_a_target_from_the_input_shape_becomes_constant_and_the_transpose_merges():
    nodes = _keras_reshape() + [node("Transpose", ["r"], ["t"], perm=[0, 3, 1, 2]),
                                node("Relu", ["t"], ["y"])]
    x = np.random.RandomState(0).randn(3, 6).astype(F32)
    g, count = check_pass(_reshape_then_dce, nodes, INITS, {"x": (F32, [None, 6])},
                          {"y": (F32, [None, 6, 1, 1])}, {"x": x}, ranks={"x": 2})
    assert count == 2 and op_types(g) == ["Reshape", "Relu"]
    assert g.initializers[g.nodes[0].input[1]].tolist() == [0, 6, 1, 1]


def test_a_dim_of_another_tensor_or_a_real_transpose_stays():
    nodes = _keras_reshape("x") + [node("Transpose", ["r"], ["y"], perm=[0, 2, 3, 1])]
    nodes[0] = node("Shape", ["other"], ["shape"])
    x = np.random.RandomState(0).randn(3, 6).astype(F32)
    feeds = {"x": x, "other": np.zeros((3, 2), F32)}
    g, count = check_pass(_reshape_then_dce, nodes, INITS,
                          {"x": (F32, [None, 6]), "other": (F32, [None, 2])},
                          {"y": (F32, [None, 1, 6, 1])}, feeds, ranks={"x": 2, "other": 2})
    assert count == 0 and op_types(g)[-2:] == ["Reshape", "Transpose"]
    # (N, 2, 3) -> transpose (0, 2, 1) moves real dims: not a reshape
    nodes = [node("Reshape", ["x", "s"], ["r"]), node("Transpose", ["r"], ["y"], perm=[0, 2, 1])]
    g, count = check_pass(_reshape_then_dce, nodes, {"s": I64(0, 2, 3)}, {"x": (F32, [None, 6])},
                          {"y": (F32, [None, 3, 2])}, {"x": x}, ranks={"x": 2})
    assert count == 0 and op_types(g) == ["Reshape", "Transpose"]
