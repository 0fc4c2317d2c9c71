"""Helpers for the ONNX pass tests (small hand-built graphs run in onnxruntime before and
after a pass), and the tests of the pass pipeline: switches, order, a whole small CNN."""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper

from tf2ir.ir.errors import ConversionError
from tf2ir.ir.onnx.graph import OnnxGraph
from tf2ir.ir.names import fresh_name
from tf2ir.ir.onnx.compile import ALL_PASSES
from tf2ir.ir.passes.manager import order_passes, resolve_switches

Spec = Tuple[np.dtype, Sequence[Optional[int]]]
SAMPLE_CNN = os.path.join(os.path.dirname(__file__), "..", "..", "data", "sample_cnn.pb")


def node(op_type: str, inputs: Sequence[str], outputs: Sequence[str], **attrs) -> onnx.NodeProto:
    return helper.make_node(op_type, list(inputs), list(outputs), name=f"{op_type}:{outputs[0]}", **attrs)


def _info(name: str, spec: Spec) -> onnx.ValueInfoProto:
    dtype, shape = spec
    dims = None if shape is None else [d if d is not None else f"{name}_d{i}"
                                       for i, d in enumerate(shape)]
    return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), dims)


def make_model(g: OnnxGraph, inputs: Dict[str, Spec],
               outputs: Dict[str, Spec]) -> onnx.ModelProto:
    used = {n for nd in g.nodes for n in nd.input} | set(outputs)
    inits = [onnx.numpy_helper.from_array(a, n) for n, a in g.initializers.items() if n in used]
    protos = g.to_protos()
    graph = helper.make_graph(protos, "t", [_info(n, s) for n, s in inputs.items()],
                              [_info(n, s) for n, s in outputs.items()], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 9
    return model


def onnx_graph(nodes: List[onnx.NodeProto], inits: Dict[str, np.ndarray],
               inputs: Dict[str, Spec], outputs: Dict[str, Spec],
               ranks: Optional[Dict[str, int]] = None) -> OnnxGraph:
    """A pass graph of `nodes` (copied), with the inputs' ranks, dtypes and shapes known."""
    taken = {o for n in nodes for o in n.output} | set(inits) | set(inputs)

    def fresh(hint):
        name = fresh_name(hint, taken)
        taken.add(name)
        return name
    known = {n: len(s[1]) for n, s in list(inputs.items()) + list(outputs.items())
             if s[1] is not None}
    known.update(ranks or {})
    shapes = {n: tuple(s[1]) for n, s in inputs.items() if s[1] is not None}
    dtypes = {n: np.dtype(s[0]).name for n, s in inputs.items()}
    return OnnxGraph.from_protos([_copy(n) for n in nodes], fresh, inputs=list(inputs),
                                 outputs=list(outputs), initializers=dict(inits), ranks=known,
                                 dtypes=dtypes, shapes=shapes)


lowered = onnx_graph      # (the name older tests use)


def on_onnx_graph(run_pass: Callable) -> bool:
    """Whether `run_pass` is a registered ONNX pass (every one is written on OnnxGraph)."""
    return any(record.run is run_pass for record in ALL_PASSES)


def _copy(n: onnx.NodeProto) -> onnx.NodeProto:
    out = onnx.NodeProto()
    out.CopyFrom(n)
    return out


def run(model: onnx.ModelProto, feeds: Dict[str, np.ndarray]) -> List[np.ndarray]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def check_pass(run_pass: Callable, nodes, inits, inputs: Dict[str, Spec],
               outputs: Dict[str, Spec], feeds: Dict[str, np.ndarray], ranks=None,
               rtol: float = 1e-5) -> Tuple[Any, int]:
    """Run `run_pass` on a copy of the graph, check the graph's invariants after it, and
    assert the model stays valid and onnxruntime gives the same outputs as before. Returns
    the rewritten graph and the pass's count."""
    before = onnx_graph(nodes, inits, inputs, outputs, ranks)
    expected = run(make_model(before, inputs, outputs), feeds)
    g = onnx_graph(nodes, inits, inputs, outputs, ranks)
    count = run_pass(g)
    g.check()
    model = make_model(g, inputs, outputs)
    onnx.checker.check_model(model, full_check=True)
    got = run(model, feeds)
    for e, a in zip(expected, got):
        assert e.shape == a.shape and e.dtype == a.dtype
        # a rewrite reorders float32 rounding: an element that cancels near zero keeps an
        # error of the order of the output's scale times the rounding, not of itself
        scale = float(np.max(np.abs(e))) if e.size and e.dtype.kind == "f" else 1.0
        np.testing.assert_allclose(a, e, rtol=rtol, atol=1e-6 * max(1.0, scale))
    return g, count


def op_types(g: OnnxGraph) -> List[str]:
    return [n.op_type for n in g.nodes]


def optimized_op_types(tmp_path, model: onnx.ModelProto, passes, shape) -> List[str]:
    """`model` through tf2ir optimize's passes (`passes` words, the graph checked after each),
    written; its output on a random float input of [2, 3, 4] equals the original's exactly and
    has `shape`. Returns the written model's op types in order."""
    from tests.conftest import max_abs_error, run_onnx
    from tf2ir.ir.onnx.optimize import optimize_model
    from tf2ir.ir.onnx.writer import write_model
    src, out = str(tmp_path / "in.onnx"), str(tmp_path / f"out{len(passes)}.onnx")
    onnx.save(model, src)
    optimized, initializers, _ = optimize_model(model, passes=passes, check_passes=True)
    write_model(optimized, initializers, out)
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    (want,), (got,) = run_onnx(src, {"x": x}), run_onnx(out, {"x": x})
    assert got.shape == shape and max_abs_error(want, got) == 0.0
    return [n.op_type for n in onnx.load(out).graph.node]


# -- the pipeline -----------------------------------------------------------------------------
def enabled_passes(switches=None):
    return {name for name, on in resolve_switches(ALL_PASSES, switches).items() if on}


def test_switches_change_the_defaults():
    defaults = enabled_passes()
    names = {p.name for p in ALL_PASSES}
    assert enabled_passes("off:all") == {"inline"}          # inlining is part of compiling
    assert enabled_passes(["off:all", "on:layout,on:fold"]) == {"inline", "layout", "fold"}
    assert enabled_passes("on:all,off:cse") == names - {"cse"}
    assert enabled_passes("on:cse,off:all") == {"inline"}   # the last word wins
    assert enabled_passes({"dce": False}) == defaults - {"dce"}
    for bad, needle in (("off:nope", "unknown pass 'nope'"), ("layout", "on:NAME or off:NAME"),
                        ({"nope": True}, "unknown pass 'nope'"),
                        ("off:inline", "cannot be switched off")):
        with pytest.raises(ConversionError, match=needle) as info:
            enabled_passes(bad)
        assert info.value.exit_code == 2     # a usage error


def test_order_honours_after():
    ordered = order_passes(ALL_PASSES)
    order = [p.name for p in ordered]
    for p in ordered:
        for before in p.after:
            assert order.index(before) < order.index(p.name)
    assert order[-1] == "dce" and order.index("ir-fold") < order.index("fold")


def test_small_cnn_keeps_only_edge_transposes_and_matches_tensorflow():
    from tf2ir.ir.onnx.compile import compile_to_model
    from tf2ir.parser.pipeline import convert_file
    from tf2ir.tools.models import run_frozen_graph

    models = {}
    for switches in ("off:all", "on:all"):
        graph, _ = convert_file(SAMPLE_CNN)
        models[switches] = compile_to_model(graph, passes=switches)
    plain, optimized = models["off:all"], models["on:all"]
    onnx.checker.check_model(optimized, full_check=True)
    count = sum(n.op_type == "Transpose" for n in optimized.graph.node)
    assert count <= 2 < sum(n.op_type == "Transpose" for n in plain.graph.node)
    assert len(optimized.graph.node) < len(plain.graph.node)
    name = optimized.graph.input[0].name
    dims = [d.dim_value or None for d in optimized.graph.input[0].type.tensor_type.shape.dim]
    assert dims[0] is None                        # the batch dim stays symbolic
    for batch in (1, 3):
        x = np.random.RandomState(batch).uniform(-1, 1, [batch] + dims[1:]).astype(np.float32)
        expected = run_frozen_graph(SAMPLE_CNN, {name: x}, ["Identity:0"])[0]
        np.testing.assert_allclose(run(optimized, {name: x})[0], expected, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(run(plain, {name: x})[0], expected, rtol=1e-4, atol=1e-5)
