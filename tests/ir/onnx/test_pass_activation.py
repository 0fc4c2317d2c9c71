"""Activation fusion on OnnxGraph: the Mul is morphed in place (its output name and place
kept) and the HardSigmoid or Clip it alone read goes; one read elsewhere, or a graph output,
stays and nothing fuses."""

from __future__ import annotations

import numpy as np

from tests.ir.onnx.test_pass_common import check_pass, node, op_types
from tf2ir.ir.onnx.passes.activation import fuse_hard_activations

F32 = np.float32
X = {"x": (F32, [None, 3, 5, 6])}
FEEDS = {"x": np.random.RandomState(1).uniform(-8, 8, (2, 3, 5, 6)).astype(F32)}
INITS = {"zero": np.array(0, F32), "six": np.array(6, F32), "sixth": np.array(1 / 6, F32)}


def test_the_fused_op_keeps_the_mul_output_name_and_its_readers():
    nodes = [node("Clip", ["x", "zero", "six"], ["c"]), node("Mul", ["sixth", "c"], ["m"]),
             node("Neg", ["m"], ["y"])]
    g, count = check_pass(fuse_hard_activations, nodes, INITS, X, {"y": X["x"]}, FEEDS)
    assert count == 1 and op_types(g) == ["HardSigmoid", "Neg"]
    fused = g.nodes[0]
    assert list(fused.input) == ["x"] and list(fused.output) == ["m"]
    assert np.isclose(fused.attr("alpha"), 1 / 6) and fused.attr("beta") == 0.0


def test_a_source_read_elsewhere_or_written_out_stays():
    nodes = [node("HardSigmoid", ["x"], ["h"], alpha=1 / 6, beta=0.5),
             node("Mul", ["x", "h"], ["y"]), node("Neg", ["h"], ["z"]),        # h read twice
             node("Clip", ["x", "zero", "six"], ["c"]), node("Mul", ["c", "sixth"], ["w"])]
    outputs = {name: X["x"] for name in ("y", "z", "w", "c")}              # c written out
    g, count = check_pass(fuse_hard_activations, nodes, INITS, X, outputs, FEEDS)
    assert count == 0 and op_types(g) == ["HardSigmoid", "Mul", "Neg", "Clip", "Mul"]
