"""Prototypes belong to the pipeline (issue 22): each plugin manager owns its prototype table,
the graphs a pipeline makes read that table (inference, folding, lowering, the kernels that
run plugin ops), and two managers in one process never see each other's ops, however the
conversions interleave (as in a `batch` worker that holds several managers)."""

from __future__ import annotations

import os
import textwrap

import numpy as np
import onnx
import pytest
from tensorboard.compat.proto import graph_pb2

from tests.conftest import run_onnx
from tf2ir.ir import Graph, TensorDesc
from tf2ir.ir.infer import infer_graph
from tf2ir.ir.prototype import default_prototypes, prototypes_of
from tf2ir.parser.pipeline import Pipeline
from tf2ir.plugins import PluginManager

# Two plugin directories, each declaring IR op Foo (for TF's Sin) its own way: "sin" keeps
# the shape and lowers to ONNX Sin; "sum" infers a scalar and lowers to a ReduceSum.
# Each also declares FooK, lowered to a node of a custom domain that its numpy kernel runs.
PLUGIN = '''
import numpy as np
from tf2ir.ir import TensorDesc, op_prototype
from tf2ir.plugins import auto_mapping, hookimpl, register_op

KIND = {kind!r}
foo = op_prototype("Foo").input("x").output("y")
kfoo = op_prototype("FooK").input("x").output("y")


@foo.infer
def infer(node):
    desc = node.input_desc(0)
    return [TensorDesc(desc.dtype, desc.shape if KIND == "sin" else ())]


@foo.lower
def lower(ctx, node):
    if KIND == "sin":
        ctx.emit("Sin", [ctx.input(0)], [ctx.output(0)])
    else:
        ctx.emit("ReduceSum", [ctx.input(0)], [ctx.output(0)], keepdims=0)


@kfoo.infer
def kinfer(node):
    return [node.input_desc(0).copy()]


@kfoo.lower
def klower(ctx, node):
    ctx.emit("FooK", [ctx.input(0)], [ctx.output(0)], domain="test.foo")


@kfoo.kernel
def kernel(x):
    return (np.sin(x) if KIND == "sin" else np.cos(x)).astype(x.dtype)


@hookimpl
def tf2ir_op_prototypes():
    return [foo, kfoo]


@hookimpl
def tf2ir_op_mappings():
    return [register_op("Foo").origin_op_type("Sin").parse_params_fn(auto_mapping)
            .with_priority(1),
            register_op("FooK").origin_op_type("Cos").parse_params_fn(auto_mapping)
            .with_priority(1)]
'''

X = np.linspace(-2, 2, 5).astype(np.float32)
EXPECTED = {"sin": np.sin(X), "sum": np.float32(X.sum())}
KERNEL = {"sin": np.sin(X), "sum": np.cos(X)}


def plugin_dir(root, kind: str) -> str:
    path = os.path.join(str(root), kind)
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "plugin.py"), "w") as f:
        f.write(textwrap.dedent(PLUGIN.format(kind=kind)))
    return path


def model(path: str, op: str) -> str:
    """A frozen graph x[5] → `op` (Sin maps to Foo, Cos to FooK)."""
    g = graph_pb2.GraphDef()
    x = g.node.add(name="x", op="Placeholder")
    x.attr["dtype"].type = 1
    x.attr["shape"].shape.dim.add().size = 5
    node = g.node.add(name="y", op=op, input=["x"])
    node.attr["T"].type = 1
    with open(path, "wb") as f:
        f.write(g.SerializeToString())
    return path


@pytest.fixture
def managers(tmp_path):
    """Manager "sin", then manager "sum" (made last: the one a process-wide table would hold)."""
    dirs = {kind: plugin_dir(tmp_path / "plugins", kind) for kind in ("sin", "sum")}
    return {kind: PluginManager(plugin_dirs=[d], use_env=False) for kind, d in dirs.items()}, dirs


def test_each_pipeline_lowers_its_own_managers_op(tmp_path, managers):
    managers, _ = managers
    pb = model(str(tmp_path / "sin.pb"), "Sin")
    for step, kind in enumerate(("sin", "sum", "sin")):   # interleaved: a, b, a
        pipeline = Pipeline(managers[kind])
        graph, _ = pipeline.convert_file(pb)
        assert graph.prototypes is managers[kind].prototype_table is pipeline.prototypes
        assert prototypes_of(graph).get("Foo").plugin.startswith(os.path.join(str(tmp_path), "plugins", kind))
        [y] = graph.outputs
        assert y.desc.shape == ((5,) if kind == "sin" else ())   # its own inference
        out = str(tmp_path / f"{step}_{kind}.onnx")
        pipeline.compile(graph, out)
        [result] = run_onnx(out, {"x": X})
        np.testing.assert_allclose(result, EXPECTED[kind], rtol=1e-6)
    # A graph built by hand reads the default table, which neither manager replaced.
    assert not default_prototypes().has("Foo")
    assert prototypes_of(Graph()) is default_prototypes()


def test_plugin_kernels_run_by_the_table_of_the_pipeline(tmp_path, managers):
    import tf2ir
    managers, _ = managers
    pb = model(str(tmp_path / "cos.pb"), "Cos")
    outs = {}
    for kind in ("sin", "sum"):
        pipeline = Pipeline(managers[kind])
        graph, _ = pipeline.convert_file(pb)
        outs[kind] = str(tmp_path / f"{kind}.onnx")
        pipeline.compile(graph, outs[kind])
        table = prototypes_of(graph)
        [result] = tf2ir.InferenceSession(outs[kind], prototypes=table).run(None, {"x": X})
        np.testing.assert_allclose(result, KERNEL[kind], rtol=1e-6)
    for kind in ("sin", "sum", "sin"):   # by manager, interleaved
        session = tf2ir.InferenceSession(outs[kind], manager=managers[kind])
        np.testing.assert_allclose(session.run(None, {"x": X})[0], KERNEL[kind], rtol=1e-6)


def test_a_batch_worker_holding_several_managers(tmp_path, managers):
    from tf2ir.tools.batch import Job, _plugin_manager, convert_one
    _, dirs = managers
    pb = model(str(tmp_path / "sin.pb"), "Sin")
    for step, kind in enumerate(("sin", "sum", "sin", "sum")):
        out = str(tmp_path / "out" / f"{step}.onnx")
        result = convert_one(Job(f"m{step}", pb, out), plugin_dirs=(dirs[kind],))
        assert result.status == "ok", result.message
        [y] = run_onnx(out, {"x": X})
        np.testing.assert_allclose(y, EXPECTED[kind], rtol=1e-6)
        assert onnx.load(out).graph.node[-1].op_type == ("Sin" if kind == "sin" else "ReduceSum")
    # the worker held both managers at once (its cache), each with its own table
    held = [_plugin_manager((dirs[kind],)) for kind in ("sin", "sum")]
    assert held[0].prototype_table.get("Foo") is not held[1].prototype_table.get("Foo")


def test_subgraphs_and_clones_keep_the_graph_table(managers):
    from tf2ir.ir.graph import clone_graph
    managers, _ = managers
    table = managers["sum"].prototype_table
    outer = Graph("outer", table)
    x = outer.add_input("x", TensorDesc("float32", (5,)))
    body = Graph("body")   # built by a plugin without a table: it takes its owner's
    inner = Graph("inner")
    arg = body.add_node("Data", [], {"index": 0}, "d", output_descs=[TensorDesc("float32", (5,))])
    call = body.add_node("PartitionedCall", [arg.outputs[0]], {"f": inner})
    body.outputs = [call.outputs[0]]
    node = outer.add_node("PartitionedCall", [x], {"f": body})
    assert node.subgraphs["f"].prototypes is table
    assert call.subgraphs["f"].prototypes is table   # nested ones too
    assert clone_graph(outer).prototypes is table
    assert clone_graph(outer).nodes[0].subgraphs["f"].prototypes is table


def test_a_graph_infers_with_its_own_table(managers):
    managers, _ = managers
    for kind, shape in (("sin", (5,)), ("sum", ()), ("sin", (5,))):
        graph = Graph("g", managers[kind].prototype_table)
        foo = graph.add_node("Foo", [graph.add_input("x", TensorDesc("float32", (5,)))])
        graph.outputs = [foo.outputs[0]]
        infer_graph(graph)
        assert foo.outputs[0].desc.shape == shape
    with pytest.raises(Exception, match="no op prototype"):   # the default table has no Foo
        graph = Graph()
        graph.outputs = [graph.add_node("Foo", [graph.add_input("x", TensorDesc("float32", (5,)))]).outputs[0]]
        infer_graph(graph)


def test_compile_of_saved_ir_reads_the_plugin_dirs_table(tmp_path, managers):
    """`tf2ir compile --plugin-dir`: the IR loaded from text takes its pipeline's table."""
    from tests.conftest import run_cli
    _, dirs = managers
    pb = model(str(tmp_path / "sin.pb"), "Sin")
    ir_path, out = str(tmp_path / "m.ir"), str(tmp_path / "m.onnx")
    for command in (("convert", pb, "-o", ir_path), ("compile", ir_path, "-o", out)):
        result = run_cli(*command, "--plugin-dir", dirs["sum"])
        assert result.returncode == 0, result.stderr
    [y] = run_onnx(out, {"x": X})
    np.testing.assert_allclose(y, EXPECTED["sum"], rtol=1e-6)
