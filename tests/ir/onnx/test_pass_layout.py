"""Transpose sinking: NHWC<->NCHW pairs cancel through elementwise ops, Concat, reductions,
Pad, Slice and Softmax; broadcast constants are permuted; symbolic batch dims work."""

from __future__ import annotations

import numpy as np
import pytest

from tf2ir.ir.onnx.passes.layout import sink_transposes
from tests.ir.onnx.test_pass_common import check_pass, node, op_types

F32 = np.float32
TO_NCHW, TO_NHWC = [0, 3, 1, 2], [0, 2, 3, 1]
RNG = np.random.RandomState(0)


def _x(batch=2):
    return {"x": RNG.randn(batch, 4, 5, 3).astype(F32)}


def _conv_like(x, y):
    """x (NHWC) -> NCHW -> MaxPool -> NHWC -> y, as a lowering emits it."""
    return [node("Transpose", [x], [f"{y}_t"], perm=TO_NCHW),
            node("MaxPool", [f"{y}_t"], [f"{y}_p"], kernel_shape=[1, 1]),
            node("Transpose", [f"{y}_p"], [y], perm=TO_NHWC)]


def test_elementwise_chain_between_two_convs_carries_no_transposes():
    inits = {"bias": RNG.randn(3).astype(F32), "scale": RNG.randn(1, 1, 3).astype(F32),
             "lo": np.array(0, F32), "hi": np.array(6, F32), "half": np.array(0.5, F32)}
    nodes = _conv_like("x", "a") + [
        node("Add", ["a", "bias"], ["b"]), node("Mul", ["scale", "b"], ["c"]),
        node("Clip", ["c", "lo", "hi"], ["d"]), node("Sigmoid", ["d"], ["s"]),
        node("Mul", ["d", "s"], ["e"]), node("Mul", ["e", "half"], ["f"])] + _conv_like("f", "y")
    spec = {"x": (F32, [None, 4, 5, 3])}
    g, count = check_pass(sink_transposes, nodes, inits, spec, {"y": (F32, [None, 4, 5, 3])}, _x())
    assert op_types(g).count("Transpose") == 2 and count == 2
    assert g.initializers[g.nodes[2].input[1]].shape == (1, 3, 1, 1)     # bias permuted


def test_residual_add_and_global_pool():
    nodes = _conv_like("x", "a") + [node("Relu", ["a"], ["r"])] + _conv_like("r", "b") + [
        node("Add", ["r", "b"], ["s"]), node("Relu", ["s"], ["t"]),
        node("ReduceMean", ["t", "axes"], ["y"], keepdims=0)]
    inits = {"axes": np.array([1, 2], np.int64)}
    g, count = check_pass(sink_transposes, nodes, inits, {"x": (F32, [None, 4, 5, 3])},
                          {"y": (F32, [None, 3])}, _x(3))
    assert op_types(g).count("Transpose") == 1                  # the input's


@pytest.mark.parametrize("keepdims,axes", [(1, [1, 2]), (0, [-1]), (0, [1]), (1, [3])])
def test_reductions_remap_axes(keepdims, axes):
    out_rank = 4 if keepdims else 4 - len(axes)
    nodes = _conv_like("x", "a") + [node("ReduceMax", ["a", "axes"], ["y"], keepdims=keepdims)]
    g, _ = check_pass(sink_transposes, nodes, {"axes": np.array(axes, np.int64)},
                      {"x": (F32, [None, 4, 5, 3])}, {"y": (F32, [None] * out_rank)}, _x())
    assert op_types(g)[-1] in ("ReduceMax", "Transpose")
    assert op_types(g).index("ReduceMax") > op_types(g).index("MaxPool")


def test_concat_pad_slice_softmax_remap_axes():
    inits = {"pads": np.array([0, 1, 0, 0, 0, 0, 2, 0], np.int64),
             "starts": np.array([1], np.int64), "ends": np.array([3], np.int64),
             "axes": np.array([-1], np.int64), "c": RNG.randn(1, 4, 5, 2).astype(F32)}
    nodes = _conv_like("x", "a") + _conv_like("x", "b") + [
        node("Concat", ["a", "b", "c"], ["cat"], axis=3), node("Pad", ["cat", "pads"], ["p"]),
        node("Slice", ["p", "starts", "ends", "axes"], ["sl"]),
        node("Softmax", ["sl"], ["sm"], axis=-1)] + _conv_like("sm", "y")
    g, count = check_pass(sink_transposes, nodes, inits, {"x": (F32, [1, 4, 5, 3])},
                          {"y": (F32, [1, 5, 7, 2])}, _x(1))
    assert op_types(g).count("Transpose") == 3          # the input's two and the output's one
    concat = next(n for n in g.nodes if n.op_type == "Concat")
    assert concat.attr("axis") == 1


def test_a_transpose_stuck_before_an_unsupported_op_is_not_multiplied():
    # Pushing below Relu would leave one Transpose for the Reshape and add one after Relu.
    inits = {"shape": np.array([-1], np.int64)}
    nodes = [node("Transpose", ["x"], ["t"], perm=TO_NCHW), node("Relu", ["t"], ["y"]),
             node("Reshape", ["t", "shape"], ["z"])]
    g, count = check_pass(sink_transposes, nodes, inits, {"x": (F32, [2, 4, 5, 3])},
                          {"y": (F32, [2, 3, 4, 5]), "z": (F32, [120])}, _x())
    assert count == 0 and op_types(g) == ["Transpose", "Relu", "Reshape"]


def test_an_untransposed_operand_gets_the_inverse_only_when_it_pays():
    # Sum(T(a), T(b), c) -> T_back: two carried, one inverse inserted for c, T_back cancels.
    c = RNG.randn(2, 3, 4, 5).astype(F32)
    spec = {"x": (F32, [None, 4, 5, 3]), "w": (F32, [None, 4, 5, 3]), "c": (F32, [None, 3, 4, 5])}
    feeds = {**_x(), "w": RNG.randn(2, 4, 5, 3).astype(F32), "c": c}
    nodes = [node("Transpose", ["x"], ["a"], perm=TO_NCHW), node("Transpose", ["w"], ["b"], perm=TO_NCHW),
             node("Sum", ["a", "b", "c"], ["s"]), node("Transpose", ["s"], ["y"], perm=TO_NHWC)]
    g, count = check_pass(sink_transposes, nodes, {}, spec, {"y": (F32, [None, 4, 5, 3])}, feeds)
    assert count == 2 and op_types(g) == ["Transpose", "Sum"]
    assert list(g.nodes[0].input) == ["c"] and g.nodes[1].output[0] == "y"
    # only one operand carries it: nothing moves
    nodes = [node("Transpose", ["x"], ["a"], perm=TO_NCHW), node("Add", ["a", "c"], ["y"])]
    g, count = check_pass(sink_transposes, nodes, {}, {"x": spec["x"], "c": spec["c"]},
                          {"y": (F32, [None, 3, 4, 5])}, {"x": feeds["x"], "c": c})
    assert count == 0 and op_types(g) == ["Transpose", "Add"]


def test_a_cancelled_pair_on_a_graph_output_leaves_its_producer_writing_the_output():
    # T(T(r)) is r, but y is a graph output: the Relu writes y, and Neg reads y.
    nodes = [node("Relu", ["x"], ["r"]), node("Transpose", ["r"], ["a"], perm=TO_NCHW),
             node("Transpose", ["a"], ["y"], perm=TO_NHWC), node("Neg", ["r"], ["z"])]
    spec = (F32, [None, 4, 5, 3])
    g, count = check_pass(sink_transposes, nodes, {}, {"x": spec}, {"y": spec, "z": spec}, _x())
    assert count == 2 and op_types(g) == ["Relu", "Neg"]
    assert list(g.nodes[0].output) == ["y"] and list(g.nodes[1].input) == ["y"]


def test_a_transpose_sinks_to_the_end_of_a_chain_that_keeps_its_output_name():
    # a chain of Relus under one Transpose: the Transpose ends after the last Relu, which
    # is the graph output, and the graph is valid after every step (check_pass checks it)
    relus = [node("Relu", [f"r{i}" if i else "t"], [f"r{i + 1}"]) for i in range(50)]
    nodes = [node("Transpose", ["x"], ["t"], perm=TO_NCHW)] + relus
    g, count = check_pass(sink_transposes, nodes, {}, {"x": (F32, [None, 4, 5, 3])},
                          {"r50": (F32, [None, 3, 4, 5])}, _x())
    assert count == 0 and op_types(g) == ["Relu"] * 50 + ["Transpose"]
    assert g.nodes[-1].output[0] == "r50" and g.nodes[0].input[0] == "x"
