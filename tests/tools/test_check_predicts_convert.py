"""`check` is a dry run of `convert` (issue 20): it exits 0 exactly when `convert` succeeds,
with `convert`'s status otherwise, and names the node and op type `convert`'s error names.

Hand-made models put each kind of failure where the old `check` (the front half only) could
not see it: an op no plugin maps inside a while body, an If branch and a function called from
a loop body, a dtype refusal (MaxPool on int64), a shape refusal (GatherV2's batch_dims over
indices of unknown rank), a fusion refusal (`--fusion on:layer_norm` on GroupNorm over time);
each runs through both
command lines. A sample of the conformance suite (one case per module, and one refusal case
per module that has one) runs under `tools.checkagree`, which compares both in process on every
graph the harness converts; `python -m tf2ir.tools.checkagree conformance|zoo` runs them all."""

from __future__ import annotations

import importlib
import inspect
import json
import os
import zlib

import pytest

from tests.conftest import run_cli
from tf2ir.tools.checkagree import agreeing_every_conversion, summary

CONFORMANCE = os.path.join(os.path.dirname(__file__), "..", "conformance")
PREFIX = "tf2ir: error: "


# -- the hand-made models ----------------------------------------------------------------------
def _while_body(x):
    import tensorflow as tf

    def body(i, a):
        return i + 1, a + tf.math.special.dawsn(a)      # Dawsn: no plugin maps it
    return tf.while_loop(lambda i, a: i < 3, body, [tf.constant(0), x])[1]


def _if_branch(x, p):
    import tensorflow as tf
    return tf.cond(p, lambda: tf.math.special.dawsn(x), lambda: x * 2.0)


def _maxpool_int64(x):
    import tensorflow as tf
    return tf.nn.max_pool2d(x, 2, 2, "VALID")


def _gather_unknown_rank(x, shape):
    import tensorflow as tf
    indices = tf.reshape(tf.constant([0, 1, 1, 0]), shape)
    return tf.gather(tf.reshape(x, [2, -1]), indices, batch_dims=1)


def _two_lowering_refusals(x, shape):
    import tensorflow as tf
    pooled = tf.nn.max_pool2d(tf.cast(tf.reshape(x, [1, 4, 4, 1]), tf.int64), 2, 2, "VALID")
    indices = tf.reshape(tf.constant([0, 1, 1, 0]), shape)
    # (the Mul reads the refused MaxPool: its lowering is fine and must not be listed)
    return tf.gather(tf.reshape(x, [2, -1]), indices, batch_dims=1), pooled * 2


def _call_in_loop_body(path):
    """The while body's Dawsn moved into a library function the body calls (PartitionedCall):
    the call is inlined when the body is converted."""
    from tensorboard.compat.proto import graph_pb2
    graph_def = graph_pb2.GraphDef()
    with open(path, "rb") as f:
        graph_def.ParseFromString(f.read())
    body = next(f for f in graph_def.library.function if "body" in f.signature.name)
    node = next(n for n in body.node_def if n.op == "Dawsn")
    inner = graph_def.library.function.add()
    inner.signature.name = "dawsn_fn"
    inner.signature.input_arg.add(name="a", type=1)
    inner.signature.output_arg.add(name="out", type=1)
    inner.node_def.add(name="d", op="Dawsn", input=["a"]).attr["T"].type = 1
    inner.ret["out"] = "d:y:0"
    node.op = "PartitionedCall"
    del node.attr["T"]
    node.attr["f"].func.name = "dawsn_fn"
    node.attr["Tin"].list.type.append(1)
    node.attr["Tout"].list.type.append(1)
    for other in body.node_def:
        other.input[:] = [ref.replace(f"{node.name}:y:0", f"{node.name}:output:0")
                          for ref in other.input]
    with open(path, "wb") as f:
        f.write(graph_def.SerializeToString())
    return path


def _group_norm_over_time(x):
    from tests.plugins.test_fusion_decline import group_norm_over_time
    return group_norm_over_time(x)


def _spec(shape, dtype="float32", name="x"):
    import tensorflow as tf
    return tf.TensorSpec(shape, tf.as_dtype(dtype), name=name)


MODELS = {
    # name: (function, specs, options, convert's exit status, op type convert names)
    "while-body": (_while_body, lambda: _spec([None, 4]), (), 3, "StatelessWhile"),
    "if-branch": (_if_branch, lambda: [_spec([None, 4]), _spec([], "bool", "p")], (), 3,
                  "StatelessIf"),
    "call-in-loop-body": (_while_body, lambda: _spec([None, 4]), (), 3, "StatelessWhile"),
    "maxpool-int64": (_maxpool_int64, lambda: _spec([1, 4, 4, 1], "int64"), (), 1, "MaxPool"),
    "gather-unknown-rank": (_gather_unknown_rank,
                            lambda: [_spec([None]), _spec([None], "int32", "s")], (), 1,
                            "GatherV2"),
    "fusion-refusal": (_group_norm_over_time, lambda: _spec([None, 5, 4]),
                       ("--fusion", "on:layer_norm"), 1, None),
}


def _both(path, tmp_path, *options):
    out = tmp_path / "m.onnx"
    converted = run_cli("convert", path, "-o", str(out), *options)
    checked = run_cli("check", path, "--json", *options)
    return converted, checked, out


@pytest.mark.parametrize("name", list(MODELS))
def test_check_predicts_convert_on_a_hidden_failure(name, freeze, tmp_path):
    fn, specs, options, status, op_type = MODELS[name]
    path, _ = freeze(fn, specs(), name)
    if name == "call-in-loop-body":
        _call_in_loop_body(path)
    converted, checked, out = _both(path, tmp_path, *options)
    assert converted.returncode == status, converted.stderr
    assert checked.returncode == status, checked.stdout + checked.stderr
    assert not out.exists()
    line = converted.stderr.strip().splitlines()[-1]
    assert line.startswith(PREFIX)
    report = json.loads(checked.stdout)
    assert report["supported"] is False and report["exit_status"] == status
    assert report["convert_error"] == line[len(PREFIX):]     # the same line, node and op type
    if op_type is not None:
        assert report["error_op_type"] == op_type and f"op {op_type}" in line
    assert report["error_node"] and f"node '{report['error_node']}'" in line
    kinds = {p["kind"] for p in report["errors"]}
    if status == 3:
        # the op no plugin maps is listed with its node inside the function, and where that is
        dawsn = [p for p in report["errors"] if p["op_type"] == "Dawsn"]
        assert len(dawsn) == 1 and dawsn[0]["kind"] == "unsupported op type"
        assert dawsn[0]["within"] == [report["error_node"]] and dawsn[0]["function"]
        assert dawsn[0]["example"] in line
        assert [r["op_type"] for r in report["unsupported"]] == ["Dawsn"]
        assert "Dawsn" in {r["op_type"] for r in report["function_op_types"]}
    elif name == "maxpool-int64":
        assert kinds == {"dtype"} and report["stage"] == "lowering"
    elif name == "gather-unknown-rank":
        assert kinds == {"shape"} and report["stage"] == "lowering"
    else:
        assert kinds == {"fusion"} and report["stage"] == "front"
        assert "declines this match" in report["convert_error"]
        assert report["op_types"]      # the op types of the graph as loaded


def test_the_text_report_names_the_function_and_says_what_convert_would_do(freeze, tmp_path):
    path, _ = freeze(_while_body, _spec([None, 4]), "loop")
    result = run_cli("check", path)
    assert result.returncode == 3 and result.stderr == ""
    assert "-- in function bodies" in result.stdout
    assert "convert would fail (exit 3) at mapping: model " in result.stdout
    assert "unsupported op type  Dawsn (1x, e.g. '" in result.stdout
    assert "' in function while_body_" in result.stdout and " of 'while'" in result.stdout
    ok, _ = freeze(lambda x: tf_relu(x), _spec([None, 4]), "ok")
    result = run_cli("check", ok)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "convert would succeed" in result.stdout


def tf_relu(x):
    import tensorflow as tf
    return tf.nn.relu(x)


def test_every_failing_lowering_is_listed_convert_names_the_first(freeze, tmp_path):
    path, _ = freeze(_two_lowering_refusals, [_spec([16]), _spec([None], "int32", "s")], "two")
    converted, checked, _ = _both(path, tmp_path)
    assert converted.returncode == checked.returncode == 1, checked.stdout + checked.stderr
    report = json.loads(checked.stdout)
    assert report["convert_error"] == converted.stderr.strip().splitlines()[-1][len(PREFIX):]
    listed = {p["op_type"]: p["kind"] for p in report["errors"]}
    assert listed == {"MaxPool": "dtype", "GatherV2": "shape"}
    assert report["errors"][0]["op_type"] == report["error_op_type"]   # convert's, first


# -- a sample of the conformance suite ---------------------------------------------------------
REFUSALS = ("refus", "reject", "error", "raise", "fail", "unsupported")


def _sample():
    """Per conformance module, of its plain (parameterless) test functions, the one whose name
    hashes lowest, and the same among those about a refusal (where the module has one)."""
    cases = []
    for file in sorted(os.listdir(CONFORMANCE)):
        if not file.startswith("test_") or file == "test_harness.py":
            continue
        module = f"tests.conformance.{file[:-3]}"
        with open(os.path.join(CONFORMANCE, file)) as f:
            names = [line.split("(")[0][4:] for line in f.read().splitlines()
                     if line.startswith("def test_") and "():" in line]
        for group in ([n for n in names if not any(w in n for w in REFUSALS)],
                      [n for n in names if any(w in n for w in REFUSALS)]):
            if group:
                cases.append((module, min(group, key=lambda n: zlib.crc32(n.encode()))))
    return cases


@pytest.mark.parametrize("module, name", _sample())
def test_check_agrees_with_convert_on_conformance_graphs(module, name):
    function = getattr(importlib.import_module(module), name)
    assert not inspect.signature(function).parameters
    with agreeing_every_conversion(results := []):
        function()
    if not results:
        pytest.skip(f"{name} converts no graph through the pipeline")
    assert all(r.agrees for r in results), summary(results)


def test_a_disagreement_is_caught(monkeypatch):
    """The agreement check fails when check and convert part: here a check that always says
    the model converts, on a graph convert refuses."""
    from tf2ir.ir.errors import ExitStatus
    from tf2ir.tools import check as check_module
    from tests.conformance.harness import convert_function
    import tempfile

    def optimistic(pipeline, graph_def, model, outputs=None, dry_run=True):
        report = original(pipeline, graph_def, model, outputs, dry_run=False)
        report.exit_status = ExitStatus.OK
        return report
    original = check_module.support_report
    monkeypatch.setattr(check_module, "support_report", optimistic)
    with agreeing_every_conversion(results := []), tempfile.TemporaryDirectory() as d:
        with pytest.raises(Exception):
            convert_function(_maxpool_int64, [_spec([1, 4, 4, 1], "int64")], d)
    assert len(results) == 1 and not results[0].agrees
    assert "DISAGREE" in summary(results) and "1 disagree" in summary(results)
