"""The one pipeline: `check` sees exactly what `convert` maps (same outputs, same pruning,
same fusions), function bodies go through it, and bad options fail before any work."""

from __future__ import annotations

import os

import numpy as np
import pytest
from tensorboard.compat.proto import graph_pb2

from tf2ir.ir import ConversionError
from tf2ir.parser.pipeline import Options, Pipeline
from tf2ir.tools.check import support_report

SAMPLE_CNN = os.path.join(os.path.dirname(__file__), "..", "data", "sample_cnn.pb")


def _placeholder(graph_def, name="x", dims=(2, 3)):
    node = graph_def.node.add(name=name, op="Placeholder")
    node.attr["dtype"].type = 1
    for d in dims:
        node.attr["shape"].shape.dim.add().size = d
    return node


def _unary(graph_def, name, op, src):
    node = graph_def.node.add(name=name, op=op, input=[src])
    node.attr["T"].type = 1
    return node


def pruned_graph():
    """x → Relu (the output) and x → Sin → an op no plugin maps, left dangling."""
    g = graph_pb2.GraphDef()
    _placeholder(g)
    _unary(g, "relu", "Relu", "x")
    _unary(g, "sin", "Sin", "x")
    _unary(g, "odd", "NoSuchTfOp", "sin")
    return g, ["relu"]


def unsupported_graph():
    g = graph_pb2.GraphDef()
    _placeholder(g)
    _unary(g, "odd", "NoSuchTfOp", "x")
    _unary(g, "relu", "Relu", "odd")
    return g, None


def gelu_graph(freeze):
    import tensorflow as tf
    path, outputs = freeze(lambda x: tf.nn.gelu(x * 2.0, approximate=False),
                           tf.TensorSpec((None, 8), tf.float32, name="x"), "gelu")
    from tf2ir.parser.load import load_graph_def
    return load_graph_def(path), outputs


def sample_cnn():
    from tf2ir.parser.load import load_graph_def
    return load_graph_def(SAMPLE_CNN), None


def _convert(graph_def, outputs):
    """What convert maps: op type → count, or the unsupported op types it reports."""
    try:
        _, report = Pipeline(options=Options(outputs=outputs)).convert_graph_def(graph_def, "m.pb")
    except ConversionError as exc:
        assert exc.exit_code == 3, exc
        return None, {part.split(" (")[0] for part in exc.message.split(": ", 1)[1].split(", ")
                      if "(" in part}
    return report.op_types, set()


@pytest.mark.parametrize("build", ["sample_cnn", "pruned", "unsupported", "gelu"])
def test_check_and_convert_agree(build, freeze):
    graph_def, outputs = {"sample_cnn": sample_cnn, "pruned": pruned_graph,
                          "unsupported": unsupported_graph,
                          "gelu": lambda: gelu_graph(freeze)}[build]()
    pipeline = Pipeline(options=Options(outputs=outputs))
    report = support_report(pipeline, graph_def, "m.pb", outputs)
    mapped, unsupported = _convert(graph_def, outputs)
    assert {r.op_type for r in report.unsupported} == unsupported
    assert report.supported == (not unsupported)
    if mapped is not None:
        # Every op type convert mapped is listed by check with the same count after fusion.
        after = {r.op_type: r for r in report.op_types if r.status != "fused"}
        for op_type, count in mapped.items():
            assert op_type in after, op_type
            if not after[op_type].fused_by:      # untouched by fusion: the same count
                assert after[op_type].count == count, op_type
        assert {op for op, row in after.items() if not row.fused_by} <= set(mapped)
    if build == "pruned":
        assert report.supported and "NoSuchTfOp" not in {r.op_type for r in report.op_types}
    if build == "gelu":
        assert report.fusions == {"gelu": 1} and "GeluFusion" in mapped


def test_bad_options_fail_before_any_work():
    for options, needle in ((Options(fusion="off:nope"), "--fusion names unknown pass"),
                            (Options(passes="sideways:cse"), "bad --passes value")):
        with pytest.raises(ConversionError, match=needle) as info:
            Pipeline(options=options)
        assert info.value.exit_code == 2


def test_check_passes_gives_the_same_model(tmp_path):
    """--check-passes checks the graph after every fusion, IR and ONNX pass; on a good
    model it changes nothing."""
    import onnx
    from tests.conftest import run_cli
    nodes = {}
    for check in ("", "--check-passes"):
        out = str(tmp_path / f"m{check}.onnx")
        result = run_cli("convert", SAMPLE_CNN, "-o", out, *([check] if check else []))
        assert result.returncode == 0, result.stderr
        model = onnx.load(out)
        onnx.checker.check_model(model, full_check=True)
        nodes[check] = [(n.op_type, list(n.input), list(n.output)) for n in model.graph.node]
    assert nodes["--check-passes"] == nodes[""]
