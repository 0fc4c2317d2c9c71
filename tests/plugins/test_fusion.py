"""The scope fusion API and its runner on small hand-built GraphDefs (no TensorFlow):
switches, pass order, provenance, matching by scope, op counts and structure, declined
matches, many-to-one and many-to-many plugins loaded from a plugin directory."""

from __future__ import annotations

import math
import os
import textwrap

import numpy as np
import pytest
from tensorboard.compat.proto import graph_pb2, tensor_pb2, tensor_shape_pb2

from tf2ir.ir import ConversionError
from tf2ir.ir.onnx.compile import compile_to_model
from tf2ir.parser.pipeline import convert_graph_def
from tf2ir.parser.graph_view import TfGraph
from tf2ir.ir.passes.manager import order_passes, resolve_switches
from tf2ir.parser.scope_fusion import FusedNode, apply_scope_fusion
from tf2ir.plugins import (
    FusionResult, PluginManager, ScopePattern, Structure, at_least, between, scope_fusion_pass,
)
from tf2ir.plugins.manager import PLUGIN_PATH_ENV

BUILTIN_PASSES = {"layer_norm", "gelu", "swish", "hard_swish"}


@pytest.fixture(autouse=True)
def no_plugin_path(monkeypatch):
    monkeypatch.delenv(PLUGIN_PATH_ENV, raising=False)


# -- a tiny GraphDef builder ------------------------------------------------------------------
class G:
    def __init__(self):
        self.graph_def = graph_pb2.GraphDef()

    def node(self, name, op, *inputs):
        node = self.graph_def.node.add(name=name, op=op)
        node.input.extend(inputs)
        if op not in ("Placeholder", "Const"):
            node.attr["T"].type = 1
        return name

    def x(self, name="x", shape=(-1, 4)):
        node = self.graph_def.node.add(name=name, op="Placeholder")
        node.attr["dtype"].type = 1
        node.attr["shape"].shape.CopyFrom(tensor_shape_pb2.TensorShapeProto(
            dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=d) for d in shape]))
        return name

    def const(self, name, value):
        node = self.graph_def.node.add(name=name, op="Const")
        node.attr["dtype"].type = 1
        node.attr["value"].tensor.CopyFrom(tensor_pb2.TensorProto(dtype=1, float_val=[value]))
        return name


def gelu_erf_graph(extra_erf_user=False):
    """0.5 * x * (1 + erf(x / sqrt(2))) at the root scope, then Tanh; sqrt(2) is a Sqrt op."""
    g = G()
    x = g.x()
    half = g.node("mul", "Mul", g.const("mul/x", 0.5), x)
    div = g.node("truediv", "RealDiv", x, g.node("Sqrt", "Sqrt", g.const("Sqrt/x", 2.0)))
    erf = g.node("Erf", "Erf", div)
    out = g.node("mul_1", "Mul", half, g.node("add", "AddV2", g.const("add/x", 1.0), erf))
    g.node("y", "Tanh", out)
    if extra_erf_user:
        g.node("z", "Neg", erf)
    return g.graph_def


def run_ir(graph, x):
    import onnxruntime as ort
    model = compile_to_model(graph)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})


def gelu(x):
    from math import erf
    return 0.5 * x * (1 + np.vectorize(erf)(x / math.sqrt(2)))


# -- switches and order -----------------------------------------------------------------------
def enabled_passes(passes, switches):
    state = resolve_switches([p.record() for p in passes], switches, "--fusion")
    return [p for p in passes if state[p.name]]


def test_fusion_switches_last_word_wins():
    passes = [scope_fusion_pass(n).pattern(ScopePattern(scope=n)) for n in BUILTIN_PASSES]
    names = lambda sw: sorted(p.name for p in enabled_passes(passes, sw))  # noqa: E731
    assert names(["on:gelu,off:swish", "off:all"]) == []
    assert names(["off:all", "on:gelu"]) == ["gelu"]
    assert names("on:gelu,off:all") == []           # as --passes: the last word wins
    assert names([]) == sorted(BUILTIN_PASSES)


@pytest.mark.parametrize("bad", ["gelu", "on:", "maybe:gelu", "on:gelu,,off:x"])
def test_bad_fusion_switch_is_a_usage_error(bad):
    passes = [scope_fusion_pass("gelu").record()]
    with pytest.raises(ConversionError) as info:
        resolve_switches(passes, [bad], "--fusion")
    assert info.value.exit_code == 2 and "bad --fusion value" in str(info.value)


def _toy(name, **kw):
    p = scope_fusion_pass(name).pattern(ScopePattern(scope=name))
    p.after, p.before = list(kw.get("after", [])), list(kw.get("before", []))
    return p


def test_enabled_passes():
    passes = [_toy("a"), _toy("b"), _toy("c").disabled_by_default()]
    names = lambda sw: [p.name for p in enabled_passes(passes, sw)]  # noqa: E731
    assert names(None) == ["a", "b"]
    assert names({"b": False, "c": True}) == ["a", "c"]
    assert names({"all": False, "c": True}) == ["c"]
    assert names({"all": True}) == ["a", "b", "c"]
    with pytest.raises(ConversionError) as info:
        enabled_passes(passes, {"nope": False})
    assert info.value.exit_code == 2 and "nope" in str(info.value) and "known: a, b, c" in str(info.value)


def _order(passes):
    return [r.name for r in order_passes([p.record() for p in passes])]


def test_order_is_computed_from_declarations_not_given_order():
    passes = [_toy("zeta"), _toy("alpha", after=["zeta"]), _toy("mid", before=["zeta"]),
              _toy("beta", after=["not-installed"])]
    assert _order(passes) == ["mid", "zeta", "alpha", "beta"]      # ties: the given order
    assert _order(passes[::-1]) == ["beta", "mid", "zeta", "alpha"]
    with pytest.raises(ConversionError, match="cycle"):
        _order([_toy("a", after=["b"]), _toy("b", after=["a"])])
    with pytest.raises(ConversionError, match="unique"):
        _order([_toy("a"), _toy("a")])


def test_builtin_passes_and_fusion_mappings_have_provenance():
    manager = PluginManager(use_env=False)
    passes = {p.name: p for p in manager.fusion_passes}
    assert BUILTIN_PASSES <= set(passes)
    assert all(os.path.join("builtin", "fusion.py") in passes[n].source for n in BUILTIN_PASSES)
    assert passes["gelu"].plugin in ("builtin_fusion", "tf2ir.plugins.builtin.fusion")
    for origin, ir_type in [("LayerNormFusion", "LayerNorm"), ("GeluFusion", "Gelu"),
                            ("SwishFusion", "Swish")]:
        reg = manager.lookup(origin)
        assert reg.ir_type == ir_type and reg.fusion and reg.plugin == passes["gelu"].plugin
    assert manager.lookup("ir:HardSigmoid").ir_type == "HardSigmoid"


# -- declarations -------------------------------------------------------------------------------
def test_scope_pattern_counts():
    pattern = ScopePattern(scope="Gelu", op_types={"Erf|Erfc": 1, "Mul": at_least(1),
                                                   "Neg": between(0, 1)})
    assert pattern.counts_match(["Erfc", "Mul", "Mul", "Const"])
    assert pattern.counts_match(["Erf", "Mul", "Neg"])
    assert not pattern.counts_match(["Erf", "Erfc", "Mul"])      # two of Erf|Erfc
    assert not pattern.counts_match(["Erf"])                      # no Mul
    assert not pattern.counts_match(["Erf", "Mul", "Neg", "Neg"])
    with pytest.raises(ValueError):
        ScopePattern(op_types={"Mul": 1})


def test_structure_edges():
    s = Structure({"a": "Exp", "b": "Mul|Add", "x": "*"}, "x -> a -> b; x -> b")
    assert s.edges == [("x", "a"), ("a", "b"), ("x", "b")]
    assert s.op_types("b") == {"Mul", "Add"} and s.op_types("x") is None
    with pytest.raises(ValueError, match="unknown node"):
        Structure({"a": "Exp"}, "a -> b")


# -- the runner ---------------------------------------------------------------------------------
def test_structure_match_fuses_and_keeps_the_default_outputs():
    graph = TfGraph(gelu_erf_graph())
    sinks = graph.sinks()
    counts = apply_scope_fusion(graph, PluginManager(use_env=False))
    assert counts == {"gelu": 1}
    assert graph.sinks() == sinks == ["y"]
    fused = graph["mul_1"]     # named after the node whose output it replaces
    assert isinstance(fused, FusedNode) and fused.op_type == "GeluFusion"
    assert fused.inputs == [("x", 0)] and fused.attrs == {"approximate": "none"}
    assert sorted(n.op_type for n in fused.inner_nodes) == ["AddV2", "Erf", "Mul", "Mul", "RealDiv"]
    # the constants and the Sqrt only the fused nodes used are gone: no new outputs
    assert set(graph.nodes) == {"x", "mul_1", "y"}


def test_fused_graph_converts_and_runs():
    graph, report = convert_graph_def(gelu_erf_graph(), "gelu", PluginManager(use_env=False))
    assert report.fusions == {"gelu": 1}
    assert [n.op_type for n in graph.nodes] == ["Gelu", "Tanh"]
    x = np.linspace(-4, 4, 24, dtype=np.float32).reshape(6, 4)
    np.testing.assert_allclose(run_ir(graph, x)[0], np.tanh(gelu(x)), atol=1e-6)


def test_switched_off_pass_leaves_the_decomposed_form():
    graph, report = convert_graph_def(gelu_erf_graph(), "gelu", PluginManager(use_env=False),
                                      fusion={"gelu": False})
    assert report.fusions == {} and "Erf" in [n.op_type for n in graph.nodes]


def test_declined_when_an_inner_tensor_leaves_the_match():
    graph = TfGraph(gelu_erf_graph(extra_erf_user=True))
    before = dict(graph.nodes)
    assert apply_scope_fusion(graph, PluginManager(use_env=False)) == {}
    assert graph.nodes == before


def test_declined_when_a_requested_output_would_disappear():
    graph = TfGraph(gelu_erf_graph())
    assert apply_scope_fusion(graph, PluginManager(use_env=False), keep=["Erf:0"]) == {}
    graph = TfGraph(gelu_erf_graph())
    assert apply_scope_fusion(graph, PluginManager(use_env=False), keep=["mul_1"]) == {"gelu": 1}


def test_structure_shared_input_must_be_one_tensor():
    """x*sigmoid(x) where the two x are different outputs of one node: no swish."""
    g = G()
    g.node("two", "Unpack", g.x())
    g.node("out", "Mul", "two:0", g.node("sig", "Sigmoid", "two:1"))
    graph = TfGraph(g.graph_def)
    assert apply_scope_fusion(graph, PluginManager(use_env=False)) == {}
    g.graph_def.node[-2].input[0] = "two:0"
    graph = TfGraph(g.graph_def)
    assert apply_scope_fusion(graph, PluginManager(use_env=False)) == {"swish": 1}


class _OnlyPasses:
    def __init__(self, *passes):
        self.fusion_passes = list(passes)


def test_declined_when_fusing_would_make_a_cycle():
    """Scope s holds a and c, but a → b (outside) → c: one node for {a, c} would be a cycle."""
    g = G()
    a = g.node("s/a", "Exp", g.x())
    c = g.node("s/c", "AddV2", a, g.node("b", "Neg", a))
    g.node("y", "Tanh", c)
    toy = scope_fusion_pass("toy").pattern(ScopePattern(scope="^s$"))
    toy.generate_result_fn(lambda match: FusionResult("Toy"))
    graph = TfGraph(g.graph_def)
    assert apply_scope_fusion(graph, _OnlyPasses(toy)) == {}
    assert set(graph.nodes) == {"x", "s/a", "b", "s/c", "y"}


def test_a_failing_pass_is_named():
    g = G()
    g.node("s/a", "Exp", g.x())
    broken = scope_fusion_pass("broken").pattern(ScopePattern(scope="^s$"))
    broken.generate_result_fn(lambda match: 1 / 0)
    broken.plugin = "my_plugin"
    with pytest.raises(ConversionError) as info:
        apply_scope_fusion(TfGraph(g.graph_def), _OnlyPasses(broken))
    text = str(info.value)
    assert "fusion pass broken" in text and "ZeroDivisionError" in text and "my_plugin" in text


# -- plugins from a directory: many-to-one and many-to-many --------------------------------------
PLUGIN = '''
import numpy as np
from tf2ir.plugins import (FusionResult, ScopePattern, at_least, hookimpl, register_op,
                           scope_fusion_pass)

# many-to-one: a scope holding 1/(1 + exp(-x)) becomes one IR Sigmoid
my_sigmoid = scope_fusion_pass("my_sigmoid").pattern(ScopePattern(
    scope=r"(^|/)my_sigmoid$", op_types={"Exp": 1, "Neg": 1, "AddV2|Add": 1, "Reciprocal": 1}))


@my_sigmoid
def sigmoid_result(match):
    return FusionResult("MySigmoid", description="logistic function")


def parse(fused, op):
    assert [n.op_type for n in fused.inner_nodes if n.op_type == "Exp"] == ["Exp"]


# many-to-many: a scope "affine" holding x * a + b becomes IR Mul and Add, constants folded in
affine = scope_fusion_pass("affine").pattern(ScopePattern(scope=r"(^|/)affine$",
                                                          op_types={"Mul": 1, "AddV2": 1}))


@affine
def affine_result(match):
    mul, = match.of_type("Mul")
    add, = match.of_type("AddV2")
    a, x = match.const_operand(mul)
    b, _ = match.const_operand(add)
    result = FusionResult(inputs=[x], outputs=match.outputs)
    scaled = result.add_inner_node("scale", "Mul", [result.input(0), np.float32(a)])
    shifted = result.add_inner_node("shift", "Add", [scaled.output(0), np.float32(b)])
    result.output_of = [shifted.output(0)]
    return result


@hookimpl
def tf2ir_fusion_passes():
    return [my_sigmoid, affine]


@hookimpl
def tf2ir_op_mappings():
    return [register_op("Sigmoid").origin_op_type("MySigmoid").fusion_parse_params_fn(parse)]
'''


def test_plugin_passes_many_to_one_and_many_to_many(tmp_path):
    path = tmp_path / "my_fusions.py"
    path.write_text(textwrap.dedent(PLUGIN))
    manager = PluginManager(plugin_dirs=[str(tmp_path)], use_env=False)
    mine = {p.name: p for p in manager.fusion_passes if p.plugin == str(path)}
    assert set(mine) == {"my_sigmoid", "affine"}

    g = G()
    neg = g.node("my_sigmoid/Neg", "Neg", g.x())
    exp = g.node("my_sigmoid/Exp", "Exp", neg)
    add = g.node("my_sigmoid/add", "AddV2", g.const("my_sigmoid/one", 1.0), exp)
    sig = g.node("my_sigmoid/Reciprocal", "Reciprocal", add)
    mul = g.node("affine/mul", "Mul", g.const("affine/a", 3.0), sig)
    g.node("affine/add", "AddV2", mul, g.const("affine/b", -1.0))
    g.node("y", "Identity", "affine/add")
    graph, report = convert_graph_def(g.graph_def, "m", manager)
    assert report.fusions == {"my_sigmoid": 1, "affine": 1}
    assert [n.op_type for n in graph.nodes if n.op_type != "Const"] == ["Sigmoid", "Mul", "Add"]
    assert [n.name for n in graph.nodes if n.op_type != "Const"] == [
        "my_sigmoid/Reciprocal", "affine/add/scale", "affine/add/shift"]
    x = np.linspace(-3, 3, 12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_allclose(run_ir(graph, x)[0], 3.0 / (1 + np.exp(-x)) - 1.0, atol=1e-6)

    graph, report = convert_graph_def(g.graph_def, "m", manager, fusion={"all": False})
    assert report.fusions == {} and "Exp" in [n.op_type for n in graph.nodes]
