"""One-to-many mapping (the guide's AddN → Adds): a PartitionedCall node owning a subgraph
of Data nodes and IR ops, shown in the text IR, inlined by compile."""

from __future__ import annotations

import os
import textwrap

import numpy as np
import pytest

from tests.conftest import max_abs_error, run_cli, run_onnx
from tf2ir.ir import ConversionError, Graph, TensorDesc
from tf2ir.ir import text as ir_text
from tf2ir.ir.onnx.compile import compile_to_model
from tf2ir.ir.passes import inline_subgraphs
from tf2ir.ir.infer import infer_graph
from tf2ir.plugins import register_op
from tf2ir.plugins.manager import PLUGIN_PATH_ENV
from tf2ir.tools.models import run_frozen_graph


@pytest.fixture(autouse=True)
def no_plugin_path(monkeypatch):
    monkeypatch.delenv(PLUGIN_PATH_ENV, raising=False)


def _vector_specs(names):
    import tensorflow as tf
    return [tf.TensorSpec([2], tf.float32, name=n) for n in names]


def _run_model(model, feeds):
    import onnxruntime as ort
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def test_add_n_maps_to_a_partitioned_call_and_matches_tf(freeze, tmp_path):
    import tensorflow as tf
    specs = [tf.TensorSpec([None, 4], tf.float32, name=n) for n in "abc"]
    path, outputs = freeze(lambda a, b, c: tf.math.add_n([a, b * 2.0, c]), specs, "add_n")
    ir_path, onnx_path = str(tmp_path / "m.ir"), str(tmp_path / "m.onnx")
    result = run_cli("convert", path, "-o", ir_path)
    assert result.returncode == 0, result.stderr
    text = open(ir_path).read()
    call = next(line for line in text.splitlines() if " PartitionedCall(" in line)
    assert 'original_type: str "AddN"' in call and "args2=" in call
    assert 'subgraph "f" graph' in text
    for index in range(3):
        assert f"Data() {{index: int {index}}}" in text
    assert text.count(" Add(") == 2 and "AddN" not in text.replace('"AddN"', "")

    result = run_cli("compile", ir_path, "-o", onnx_path)
    assert result.returncode == 0, result.stderr
    rng = np.random.RandomState(0)
    feeds = {n: rng.normal(size=(3, 4)).astype(np.float32) for n in "abc"}
    expected = run_frozen_graph(path, feeds, outputs)[0]
    assert max_abs_error(run_onnx(onnx_path, feeds)[0], expected) <= 1e-6


def test_text_ir_round_trip_keeps_the_subgraph(freeze, tmp_path):
    import tensorflow as tf
    from tf2ir.parser.pipeline import convert_file
    path, _ = freeze(lambda a, b: tf.math.add_n([a, b]), _vector_specs("ab"))
    graph, _ = convert_file(path)
    first, second = str(tmp_path / "1.ir"), str(tmp_path / "2.ir")
    ir_text.save(graph, first)
    loaded = infer_graph(ir_text.load(first))
    ir_text.save(loaded, second)
    assert open(first).read() == open(second).read()
    call = next(n for n in loaded.nodes if n.op_type == "PartitionedCall")
    assert [n.op_type for n in call.subgraphs["f"].nodes] == ["Data", "Data", "Add"]


def _hand_built_call() -> Graph:
    """x, y → call(y, x) whose body returns (data1 - data0) * 3 and data0 unchanged."""
    g = Graph("main")
    x = g.add_input("x", TensorDesc("float32", (2, 3)))
    y = g.add_input("y", TensorDesc("float32", (2, 3)))
    call = g.add_node("PartitionedCall", [y, x], {"original_type": "Demo"}, "call", num_outputs=2)
    body = Graph("body")
    d1 = body.add_node("Data", [], {"index": 1}, "d1", output_descs=[TensorDesc("float32")])
    d0 = body.add_node("Data", [], {"index": 0}, "d0", output_descs=[TensorDesc("float32")])
    diff = body.add_node("Sub", [d1.outputs[0], d0.outputs[0]], name="diff")
    three = body.add_const(np.float32(3), "three")
    scaled = body.add_node("Mul", [diff.outputs[0], three], name="scaled")
    body.outputs = [scaled.outputs[0], d0.outputs[0]]
    call.subgraphs["f"] = body
    g.add_node("Neg", [call.outputs[0]], name="neg")
    g.outputs = [g.nodes[-1].outputs[0], call.outputs[1]]
    return infer_graph(g)


def test_inline_subgraphs_on_a_hand_built_graph():
    g = _hand_built_call()
    assert g.value("call").desc.shape == (2, 3)          # inferred from the subgraph
    inline_subgraphs(g)
    assert [n.op_type for n in g.nodes] == ["Sub", "Const", "Mul", "Neg", "Identity"]
    assert [n.name for n in g.nodes[:3]] == ["call/diff", "call/three", "call/scaled"]
    sub = g.nodes[0]
    assert [v.name for v in sub.inputs] == ["x", "y"]   # Data index 1 → x, index 0 → y
    assert g.value("call").producer.op_type == "Mul"    # the call's output name survives
    assert [v.name for v in g.outputs] == ["neg", "call:1"]
    assert g.outputs[1].producer.inputs[0].name == "y"  # a passed-through input gets an Identity
    assert g.is_topologically_sorted()
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.ones((2, 3), np.float32)
    neg, passed = _run_model(compile_to_model(g), {"x": x, "y": y})
    np.testing.assert_allclose(neg, -(x - y) * 3)
    np.testing.assert_array_equal(passed, y)


def test_nested_calls_are_inlined_with_unique_names():
    g = Graph("main")
    x = g.add_input("x", TensorDesc("float32", (4,)))
    outer = g.add_node("PartitionedCall", [x], {"original_type": "Outer"}, "outer")
    body = Graph("outer_body")
    data = body.add_node("Data", [], {"index": 0}, "d", output_descs=[TensorDesc("float32")])
    inner = body.add_node("PartitionedCall", [data.outputs[0]], {"original_type": "Inner"}, "inner")
    inner_body = Graph("inner_body")
    inner_data = inner_body.add_node("Data", [], {"index": 0}, "d",
                                     output_descs=[TensorDesc("float32")])
    inner_body.outputs = inner_body.add_node("Exp", [inner_data.outputs[0]], name="exp").outputs
    inner.subgraphs["f"] = inner_body
    body.outputs = [body.add_node("Relu", [inner.outputs[0]], name="relu").outputs[0]]
    outer.subgraphs["f"] = body
    g.outputs = [outer.outputs[0]]
    infer_graph(g)
    inline_subgraphs(g)
    assert [(n.name, n.op_type) for n in g.nodes] == [("outer/inner/exp", "Exp"),
                                                      ("outer/relu", "Relu")]
    assert g.outputs[0].name == "outer"
    x_value = np.array([-1, 0, 1, 2], np.float32)
    np.testing.assert_allclose(_run_model(compile_to_model(g), {"x": x_value})[0], np.exp(x_value),
                               rtol=1e-6)


def test_bad_data_index_names_the_call():
    g = _hand_built_call()
    body = next(n for n in g.nodes if n.op_type == "PartitionedCall").subgraphs["f"]
    body.nodes[0].attrs["index"] = 5
    with pytest.raises(ConversionError, match="index 5") as info:
        infer_graph(g)
    assert info.value.node == "call"


def test_registration_builder_and_alias():
    def build(src, graph):
        graph.set_outputs([graph.data(0)])
    reg = register_op("PartitionedCall").origin_op_type("AddN").parse_op_to_graph_fn(build)
    assert reg.parse_op_to_graph_fn_ is build
    assert reg.parse_fn.__name__ == "parse_partitioned_call"   # sets original_type


def test_third_party_one_to_many_plugin_overrides_a_builtin(freeze, tmp_path):
    """A plugin file maps Softplus to PartitionedCall(log(exp(x) + 1)) with the default
    parse-params fn: original_type and the output count come without code."""
    import tensorflow as tf
    from tf2ir.parser.pipeline import convert_file
    from tf2ir.plugins import PluginManager
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "softplus_graph.py").write_text(textwrap.dedent('''
        import numpy as np
        from tf2ir.plugins import hookimpl, register_op

        def build(src, graph):
            e = graph.add_op("Exp", [graph.data(0)]).outputs[0]
            shifted = graph.add_op("Add", [e, graph.const(np.float32(1), "one")]).outputs[0]
            graph.set_outputs(graph.add_op("Log", [shifted]).outputs)

        @hookimpl
        def tf2ir_op_mappings():
            return [register_op("PartitionedCall").origin_op_type("Softplus")
                    .parse_op_to_graph_fn(build).with_priority(1)]
    '''))
    path, outputs = freeze(tf.nn.softplus, tf.TensorSpec([None, 3], tf.float32, name="x"))
    manager = PluginManager(plugin_dirs=[str(tmp_path / "plugins")])
    graph, report = convert_file(path, manager)
    call = next(n for n in graph.nodes if n.op_type == "PartitionedCall")
    assert call.attrs["original_type"] == "Softplus" and len(call.outputs) == 1
    assert os.path.join("plugins", "softplus_graph.py") in report.plugins_used.popitem()[0]
    x = np.random.RandomState(1).normal(size=(2, 3)).astype(np.float32)
    got = _run_model(compile_to_model(graph), {"x": x})[0]
    assert max_abs_error(got, run_frozen_graph(path, {"x": x}, outputs)[0]) <= 1e-5


def test_graph_fn_needs_the_partitioned_call_ir_type(freeze):
    import tensorflow as tf
    from tf2ir.parser.pipeline import convert_file
    from tf2ir.plugins import PluginManager
    path, _ = freeze(lambda a, b: tf.math.add_n([a, b]), _vector_specs("ab"))
    manager = PluginManager()
    reg = manager.registry["AddN"]
    manager.registry["AddN"] = register_op("Add").origin_op_type("AddN").parse_op_to_graph_fn(
        reg.parse_op_to_graph_fn_)
    with pytest.raises(ConversionError, match="must register IR op PartitionedCall"):
        convert_file(path, manager)
