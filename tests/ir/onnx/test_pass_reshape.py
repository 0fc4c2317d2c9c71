"""Reshape simplification: run-time targets from the input's own shape become constants;
a Reshape followed by a Transpose of unit dims becomes one Reshape."""

from __future__ import annotations

import numpy as np

from tf2ir.ir.onnx.passes import ONNX_PASSES
from tf2ir.ir.onnx.passes.reshape import simplify_reshapes
from tests.ir.onnx.test_pass_common import check_pass, node, op_types

F32 = np.float32
I64 = lambda *v: np.array(v, np.int64)     # noqa: E731


def _check(*args, **kwargs):
    """check_pass of the reshape pass (on an OnnxGraph, checked after it), then dead-code
    elimination as registered, so the dead shape arithmetic is gone from the op types."""
    g, count = check_pass(simplify_reshapes, *args, **kwargs)
    next(r.run for r in ONNX_PASSES if r.name == "dce")(g)
    g.check()
    return g, count


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
    g, count = _check(nodes, INITS, {"x": (F32, [None, 6])},
                          {"y": (F32, [None, 6, 1, 1])}, {"x": x}, ranks={"x": 2})
    assert count == 2 and op_types(g) == ["Reshape", "Relu"]
    assert g.initializers[g.nodes[0].input[1]].tolist() == [0, 6, 1, 1]


def test_a_dim_of_another_tensor_or_a_real_transpose_stays():
    nodes = _keras_reshape("x") + [node("Transpose", ["r"], ["y"], perm=[0, 2, 3, 1])]
    nodes[0] = node("Shape", ["other"], ["shape"])
    x = np.random.RandomState(0).randn(3, 6).astype(F32)
    feeds = {"x": x, "other": np.zeros((3, 2), F32)}
    g, count = _check(nodes, INITS,
                          {"x": (F32, [None, 6]), "other": (F32, [None, 2])},
                          {"y": (F32, [None, 1, 6, 1])}, feeds, ranks={"x": 2, "other": 2})
    assert count == 0 and op_types(g)[-2:] == ["Reshape", "Transpose"]
    # (N, 2, 3) -> transpose (0, 2, 1) moves real dims: not a reshape
    nodes = [node("Reshape", ["x", "s"], ["r"]), node("Transpose", ["r"], ["y"], perm=[0, 2, 1])]
    g, count = _check(nodes, {"s": I64(0, 2, 3)}, {"x": (F32, [None, 6])},
                          {"y": (F32, [None, 3, 2])}, {"x": x}, ranks={"x": 2})
    assert count == 0 and op_types(g) == ["Reshape", "Transpose"]


def _tensordot(w="w", bias=None, flat_tail="k", restore=("n",), shape_of="t", **gemm):
    """Keras 3 Dense on x (B, 5, 4): identity Transpose, then Reshape to (B*5, 4) with the
    product computed from the shape, Gemm by w, Reshape back to (B, 5) + restore."""
    return [node("Transpose", ["x"], ["t"], perm=[0, 1, 2]),
            node("Shape", [shape_of], ["shape"]),
            node("Gather", ["shape", "free"], ["lead"], axis=0),
            node("ReduceProd", ["lead", "zero_1d"], ["rows"], keepdims=0),
            node("Unsqueeze", ["rows", "zero_1d"], ["rows_1"]),
            node("Concat", ["rows_1", flat_tail], ["flat"], axis=0),
            node("Reshape", ["t", "flat"], ["r"]),
            node("Gemm", ["r", w] + ([bias] if bias else []), ["mm"], **gemm),
            node("Concat", ["lead", *restore], ["back"], axis=0),
            node("Reshape", ["mm", "back"], ["y"])]


TD_INITS = {"free": I64(0, 1), "zero_1d": I64(0), "k": I64(4), "n": I64(3),
            "w": np.random.RandomState(1).randn(4, 3).astype(F32),
            "wt": np.random.RandomState(2).randn(3, 4).astype(F32),
            "b": np.random.RandomState(3).randn(3).astype(F32)}
TD_X = np.random.RandomState(0).randn(2, 5, 4).astype(F32)


def test_a_tensordot_becomes_one_matmul():
    for extra, gemm, expected in (({}, {}, ["MatMul"]),
                                  ({"bias": "b"}, {"beta": 0.5}, ["MatMul", "Add"]),
                                  ({"w": "wt", "bias": "b"}, {"transB": 1}, ["MatMul", "Add"])):
        g, count = _check(_tensordot(**extra, **gemm), TD_INITS,
                              {"x": (F32, [None, 5, 4])}, {"y": (F32, [None, 5, 3])},
                              {"x": TD_X}, ranks={"x": 3, "t": 3})
        assert count == 1 and op_types(g) == expected, (extra, op_types(g))
        assert g.nodes[0].input[0] == "x"


def test_a_tensordot_that_does_not_restore_the_input_dims_stays():
    # The result is reshaped to (B, 15) (dims of another shape): not a broadcast MatMul.
    inits = dict(TD_INITS, fifteen=I64(15))
    nodes = _tensordot(restore=("n",))
    nodes[-2] = node("Concat", ["first", "fifteen"], ["back"], axis=0)
    nodes.insert(-2, node("Slice", ["lead", "zero_1d", "one_1d"], ["first"]))
    inits["one_1d"] = I64(1)
    g, count = _check(nodes, inits, {"x": (F32, [None, 5, 4])},
                          {"y": (F32, [None, 15])}, {"x": TD_X}, ranks={"x": 3, "t": 3})
    assert count == 0 and "Gemm" in op_types(g)
    # The rows are a product over a shape that is not the Reshape's input's.
    g, count = _check(_tensordot(shape_of="other"), TD_INITS,
                          {"x": (F32, [None, 5, 4]), "other": (F32, [None, 5, 4])},
                          {"y": (F32, [None, 5, 3])}, {"x": TD_X, "other": TD_X},
                          ranks={"x": 3, "t": 3, "other": 3})
    assert count == 0 and "Gemm" in op_types(g)


def test_a_merged_transpose_s_output_name_is_kept_when_it_is_a_graph_output():
    # (N, 6) -> (N, 6, 1) -> Transpose (0, 2, 1) moves a unit dim only: one Reshape, which
    # writes the Transpose's output (a graph output)
    nodes = [node("Reshape", ["x", "s"], ["r"]), node("Transpose", ["r"], ["y"], perm=[0, 2, 1])]
    x = np.random.RandomState(0).randn(3, 6).astype(F32)
    g, count = _check(nodes, {"s": I64(0, 6, 1)}, {"x": (F32, [None, 6])},
                      {"y": (F32, [None, 1, 6])}, {"x": x}, ranks={"x": 2})
    assert count == 1 and op_types(g) == ["Reshape"] and g.nodes[0].output == ("y",)
    assert g.const(g.nodes[0].input[1]).tolist() == [0, 1, 6]


def test_a_run_time_target_with_allowzero_loses_the_flag_only_without_a_literal_zero():
    # lowered TF Reshapes carry allowzero=1 (TF's 0 is a 0): the copies of x's dims are written
    # as 0, so the flag must go; with a literal 0 entry beside a copy there is no constant form
    nodes = _keras_reshape()
    nodes[-1] = node("Reshape", ["x", "target"], ["r"], allowzero=1)
    x = np.random.RandomState(0).randn(3, 6).astype(F32)
    g, count = _check(nodes, INITS, {"x": (F32, [None, 6])}, {"r": (F32, [None, 1, 1, 6])},
                      {"x": x}, ranks={"x": 2})
    assert count == 1 and op_types(g) == ["Reshape"] and g.nodes[0].attr("allowzero") is None
    assert g.const(g.nodes[0].input[1]).tolist() == [0, 1, 1, 6]
    zero = dict(INITS, one=np.array([0], np.int32))          # (N, 0, 0, 6): literal 0s
    g, count = _check(nodes, zero, {"x": (F32, [None, 6])}, {"r": (F32, [None, 0, 0, 6])},
                      {"x": np.zeros((0, 6), F32)}, ranks={"x": 2})
    assert count == 0 and g.nodes[-1].attr("allowzero") == 1
