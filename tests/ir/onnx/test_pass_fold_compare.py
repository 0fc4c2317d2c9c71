"""Constant folding of comparisons and logic (a causal mask's constant parts)."""

from __future__ import annotations

import numpy as np

from tf2ir.ir.onnx.passes.fold import fold_lowered_constants
from tests.ir.onnx.test_pass_common import check_pass, node, op_types

I64 = np.int64


def test_constant_comparisons_and_logic_fold():
    inits = {"a": np.array([1, 5, 3], I64), "b": np.array(3, I64)}
    nodes = [node("Less", ["a", "b"], ["lt"]), node("GreaterOrEqual", ["a", "b"], ["ge"]),
             node("Or", ["lt", "ge"], ["any"]), node("Not", ["any"], ["none"]),
             node("Xor", ["none", "m"], ["y"])]
    m = np.array([True, False, True])
    g, count = check_pass(fold_lowered_constants, nodes, inits, {"m": (bool, [3])},
                          {"y": (bool, [3])}, {"m": m})
    assert count == 4 and op_types(g) == ["Xor"]
    assert g.initializers["none"].dtype == np.bool_ and not g.initializers["none"].any()
