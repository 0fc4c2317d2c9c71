"""The ONNX fold pass computes by onnx's reference evaluator (issue 22: one constant folder):
ops its old numpy table lacked fold with ONNX's values, the size rule still holds before
anything is computed, what it refused stays refused, and onnx.reference is imported only
when a node needs it."""

from __future__ import annotations

import os
import subprocess
import sys

import ml_dtypes
import numpy as np
import onnx

from tf2ir.ir.onnx.passes import fold as onnx_fold
from tf2ir.ir.onnx.passes.fold import FOLD_LIMIT_BYTES, fold_lowered_constants
from tests.ir.onnx.test_pass_common import check_pass, node, onnx_graph, op_types

F32, I64 = np.float32, np.int64
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _spy(monkeypatch):
    calls = []
    real = onnx_fold.evaluate

    def evaluate(n, arrays):
        calls.append(n.op_type)
        return real(n, arrays)
    monkeypatch.setattr(onnx_fold, "evaluate", evaluate)
    return calls


def test_ops_the_old_table_lacked_fold_by_the_reference_evaluator(monkeypatch):
    """Range, Pow, Where, Slice, ReduceSum, Split (two outputs) and Expand (its size known
    from shape inference first): none was in the old table; onnxruntime agrees."""
    calls = _spy(monkeypatch)
    inits = {"zero": np.array(0, I64), "six": np.array(6, I64), "one": np.array(1, I64),
             "two": np.array([2.0], F32), "mask": np.array([True, False, True, False, True,
                                                           False]),
             "start": np.array([1], I64), "end": np.array([5], I64), "axes": np.array([0], I64),
             "shape": np.array([2, 2], I64)}
    nodes = [node("Range", ["zero", "six", "one"], ["r"]), node("Cast", ["r"], ["rf"], to=1),
             node("Pow", ["rf", "two"], ["p"]), node("Where", ["mask", "p", "rf"], ["w"]),
             node("Slice", ["w", "start", "end"], ["s"]),
             node("Split", ["s"], ["s0", "s1"], axis=0, num_outputs=2),
             node("ReduceSum", ["s0", "axes"], ["t"], keepdims=1),
             node("Expand", ["s1", "shape"], ["e"]),
             node("Mul", ["x", "t"], ["m"]), node("Add", ["m", "e"], ["y"])]
    g, count = check_pass(fold_lowered_constants, nodes, inits, {"x": (F32, [2, 2])},
                          {"y": (F32, [2, 2])}, {"x": np.ones((2, 2), F32)})
    assert count == 8 and op_types(g) == ["Mul", "Add"]
    assert {"Range", "Pow", "Where", "Slice", "Split", "ReduceSum", "Expand"} <= set(calls)
    np.testing.assert_array_equal(g.initializers["s0"], np.array([1, 4], F32))
    np.testing.assert_array_equal(g.initializers["t"], np.array([5], F32))
    np.testing.assert_array_equal(g.initializers["e"], np.array([[3, 16], [3, 16]], F32))
    assert g.initializers["r"].dtype == I64


def test_dtypes_bfloat16_int64_shapes_and_integer_division():
    """bfloat16 (ml_dtypes) through Cast and Mul, Reshape's 0 and -1 on int64 targets, ONNX's
    truncating integer Div, Gather's negative indices."""
    bf16 = np.dtype(ml_dtypes.bfloat16)
    inits = {"a": np.array([1.5, -2.25], F32), "b": np.array([2.0, 2.0], bf16),
             "m": np.arange(6, dtype=I64).reshape(2, 3), "target": np.array([0, -1], I64),
             "n": np.array([-7, 7], np.int32), "d": np.array([2], np.int32),
             "idx": np.array([-1], I64)}
    g = onnx_graph([node("Cast", ["a"], ["c"], to=onnx.TensorProto.BFLOAT16),
                    node("Mul", ["c", "b"], ["cb"]), node("Reshape", ["m", "target"], ["rs"]),
                    node("Div", ["n", "d"], ["q"]), node("Gather", ["m", "idx"], ["gt"]),
                    node("Concat", ["x", "x"], ["y"], axis=0)],
                   inits, {"x": (F32, [2])}, {"y": (F32, [4])})
    outputs = ("cb", "rs", "q", "gt")
    assert fold_lowered_constants(g) == 5 and op_types(g) == ["Concat"]
    g.check()
    cb, rs, q, gt = (g.initializers[name] for name in outputs)
    assert cb.dtype == bf16 and cb.astype(F32).tolist() == [3.0, -4.5]
    assert rs.dtype == I64 and rs.shape == (2, 3)
    assert q.dtype == np.int32 and q.tolist() == [-3, 3]
    assert gt.tolist() == [[3, 4, 5]]


def test_refused_as_before_and_the_size_rule_holds(monkeypatch):
    """Strings, random ops and graph outputs stay nodes; an Expand or Range beyond the bound
    is never computed (its size comes from shape inference first)."""
    calls = _spy(monkeypatch)
    side = int(np.sqrt(FOLD_LIMIT_BYTES / 4)) * 2              # side*side floats: 4x the bound
    inits = {"s": np.array(["a", "b"], dtype=object), "one": np.ones((1, 1), F32),
             "big": np.array([side, side], I64), "shape": np.array([2], I64),
             "zero": np.array(0, I64), "n": np.array(side * side, I64), "step": np.array(1, I64)}
    g = onnx_graph([node("Identity", ["s"], ["s2"]), node("Expand", ["one", "big"], ["e"]),
                    node("Range", ["zero", "n", "step"], ["r"]),
                    node("RandomNormalLike", ["one"], ["rn"]), node("Neg", ["one"], ["out"])],
                   inits, {}, {"out": (F32, [1, 1])})
    assert fold_lowered_constants(g) == 0
    assert op_types(g) == ["Identity", "Expand", "Range", "RandomNormalLike", "Neg"]
    assert "Expand" not in calls and "Range" not in calls


_PROBE = """
import sys
import numpy as np
from tf2ir.ir.onnx.graph import OnnxGraph
from tf2ir.ir.onnx.passes.fold import fold_lowered_constants
from tf2ir.tools.cli import main
try:
    main(["convert", sys.argv[1], "-o", sys.argv[2], "-q"])
except SystemExit as exc:
    assert not exc.code, exc.code
print("after convert:", "onnx.reference" in sys.modules)
g = OnnxGraph(str, inputs=["x"], outputs=["y"], initializers={"c": np.ones(2, np.float32)})
g.add_node("Relu", ["x"], ["r"])
g.add_node("Add", ["r", "c"], ["y"])
print("nothing to fold:", fold_lowered_constants(g), "onnx.reference" in sys.modules)
g.initializers["i"] = np.array([2, 3], np.int64)
g.add_node("Max", ["i", "i"], ["m"])
g.add_node("Cast", ["m"], ["mf"], to=1)
g.add_node("Mul", ["y", "mf"], ["z"])
print("a Max to fold:", fold_lowered_constants(g), "onnx.reference" in sys.modules)
"""


def test_onnx_reference_is_imported_only_for_a_node_it_folds(tmp_path):
    """A conversion whose fold pass has only batch norm's arithmetic (numpy's special case)
    or nothing to fold does not import onnx.reference (start-up does not grow); the first
    node only it can fold imports it."""
    model = os.path.join(ROOT, "tests", "data", "sample_cnn.pb")
    out = subprocess.run([sys.executable, "-c", _PROBE, model, str(tmp_path / "m.onnx")],
                         capture_output=True, text=True, cwd=str(tmp_path), timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.splitlines() == ["after convert: False", "nothing to fold: 0 False",
                                       "a Max to fold: 2 True"]
    assert os.path.getsize(tmp_path / "m.onnx") > 0
