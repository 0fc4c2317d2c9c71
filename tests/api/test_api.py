"""tf2ir's Python API on models at paths and GraphDefs in memory: each source kind converts in
one call, runs in onnxruntime and matches TensorFlow on the same input; save() is atomic; the
errors are ConversionError subclasses carrying the command line's exit status; the export
options reach the model; the command line writes the very model the API makes; check and
verify return the commands' results; `import tf2ir` stays cheap."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import tf2ir
from tests.conftest import run_cli

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLE = os.path.join(ROOT, "tests", "data", "sample_cnn.pb")
X = np.random.RandomState(0).standard_normal((2, 8, 8, 3)).astype(np.float32)


@pytest.fixture(scope="module")
def tf():
    from tf2ir.parser.frozen import import_tensorflow
    return import_tensorflow()


@pytest.fixture(scope="module")
def models(tf, tmp_path_factory):
    """A small Keras CNN as every path kind `tf2ir convert` takes, and TF's output on X."""
    import keras
    from google.protobuf import text_format
    from tf2ir.tools.models import freeze_function
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.layers.Input((8, 8, 3)),
                              keras.layers.Conv2D(4, 3, activation="relu"),
                              keras.layers.GlobalAveragePooling2D(), keras.layers.Dense(2)])
    root = tmp_path_factory.mktemp("api_models")
    paths = {"keras": str(root / "model.keras"), "pb": str(root / "model.pb"),
             "pbtxt": str(root / "model.pbtxt"), "saved_model": str(root / "saved")}
    model.save(paths["keras"])
    spec = tf.TensorSpec((None, 8, 8, 3), tf.float32, name="x")
    freeze_function(lambda x: model(x, training=False), spec, paths["pb"])
    graph_def = tf.compat.v1.GraphDef.FromString(open(paths["pb"], "rb").read())
    with open(paths["pbtxt"], "w") as f:
        f.write(text_format.MessageToString(graph_def))
    module = tf.Module()
    module.model = model
    module.serve = tf.function(lambda x: {"y": model(x, training=False)}, input_signature=[spec])
    tf.saved_model.save(module, paths["saved_model"],
                        signatures={"serving_default": module.serve})
    return paths, graph_def, model(X, training=False).numpy()


def _run(result, x=X):
    """The result's first output for input x, run by onnxruntime on the model's bytes."""
    import onnxruntime as ort
    session = ort.InferenceSession(result.model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x})[0]


@pytest.mark.parametrize("kind", ["pb", "pbtxt", "saved_model", "keras"])
def test_every_path_kind_converts_and_matches_tensorflow(models, kind):
    paths, _, expected = models
    result = tf2ir.convert(paths[kind], quiet=True)
    assert isinstance(result, tf2ir.ConversionResult)
    np.testing.assert_allclose(_run(result), expected, rtol=1e-4, atol=1e-5)
    assert result.report.model == paths[kind] and result.report.ir_nodes > 0
    assert result.report.op_types.get("Conv2D") == 1
    assert set(result.report.phases) >= {"load", "mapping", "compile"}
    assert paths[kind] in repr(result) and "ONNX nodes" in repr(result)


def test_an_os_pathlike_is_a_path(models):
    import pathlib
    paths, _, expected = models
    np.testing.assert_allclose(_run(tf2ir.convert(pathlib.Path(paths["pb"]), quiet=True)),
                               expected, rtol=1e-4, atol=1e-5)


def test_graph_def_objects_and_bytes_convert(models):
    """TF's GraphDef class, tf2ir's own (TensorBoard's protos, another descriptor pool) and
    the serialized bytes: the same model."""
    from tf2ir.parser.graph_view import graph_def_class
    _, tf_graph_def, expected = models
    data = tf_graph_def.SerializeToString()
    for source, label in ((tf_graph_def, "<GraphDef>"),
                          (graph_def_class().FromString(data), "<GraphDef>"),
                          (data, "<GraphDef bytes>"), (bytearray(data), "<GraphDef bytes>")):
        result = tf2ir.convert(source, quiet=True)
        assert result.report.model == label
        np.testing.assert_allclose(_run(result), expected, rtol=1e-4, atol=1e-5)


def test_bad_bytes_are_one_conversion_error():
    with pytest.raises(tf2ir.ConversionError) as info:
        tf2ir.convert(b"\x0a\xff\xff\xff garbage", quiet=True)
    assert type(info.value) is tf2ir.ConversionError and info.value.exit_code == 1
    assert str(info.value).startswith("model <GraphDef bytes>: not a GraphDef")
    with pytest.raises(tf2ir.ConversionError, match="no nodes"):
        tf2ir.convert(b"", quiet=True)


def test_save_writes_the_model_and_is_atomic(tmp_path, monkeypatch):
    import onnx
    from tf2ir.ir.onnx import writer
    result = tf2ir.convert(SAMPLE, quiet=True)
    path = tmp_path / "model.onnx"
    assert result.save(path) == str(path)
    saved = onnx.load(str(path))
    assert saved == result.model   # the weights included, as the in-memory model has them
    before = path.read_bytes()

    def rejects(file, locate=None):
        raise tf2ir.ConversionError("the ONNX model fails onnx.checker, nothing was written: x")
    monkeypatch.setattr(writer, "check_file", rejects)
    with pytest.raises(tf2ir.ConversionError, match="onnx.checker"):
        result.save(path)
    assert path.read_bytes() == before                       # the existing file untouched
    with pytest.raises(tf2ir.ConversionError):
        result.save(tmp_path / "new.onnx")
    assert sorted(os.listdir(tmp_path)) == ["model.onnx"]    # no partial or temporary file
    monkeypatch.undo()
    result.save(tmp_path / "again.onnx")                     # the result is still whole
    assert onnx.load(str(tmp_path / "again.onnx")) == result.model


def test_save_refuses_a_directory_and_the_source(tmp_path):
    result = tf2ir.convert(SAMPLE, quiet=True)
    with pytest.raises(tf2ir.UsageError, match="is a directory"):
        result.save(tmp_path)
    with pytest.raises(tf2ir.UsageError, match="is the input"):
        result.save(SAMPLE)


def test_the_command_line_writes_the_model_the_api_makes(tmp_path):
    """One path: `tf2ir convert` and tf2ir.convert make the same file, byte for byte."""
    cli = tmp_path / "cli.onnx"
    done = run_cli("convert", SAMPLE, "-o", str(cli), "--opset", "17", "-q")
    assert done.returncode == 0, done.stderr
    api = tf2ir.convert(SAMPLE, opset=17, quiet=True).save(tmp_path / "api.onnx")
    assert cli.read_bytes() == open(api, "rb").read()


def test_error_subclasses_carry_the_exit_status(tmp_path):
    from tf2ir.ir.errors import ConversionError, ExitStatus
    with pytest.raises(tf2ir.UsageError) as info:
        tf2ir.convert(SAMPLE, opset=3)
    assert info.value.exit_code == ExitStatus.USAGE == 2
    assert isinstance(info.value, tf2ir.ConversionError)
    with pytest.raises(tf2ir.UsageError, match="not a Placeholder"):
        tf2ir.convert(SAMPLE, inputs={"nope": (1, 2)})
    with pytest.raises(tf2ir.UsageError, match="bad dimension"):
        tf2ir.convert(SAMPLE, inputs={"input": (1, "x")})
    with pytest.raises(tf2ir.UsageError, match="precision"):
        tf2ir.convert(SAMPLE, precision="fp8")
    # unsupported op types: exit status 3
    from tf2ir.parser.graph_view import graph_def_class
    graph_def = graph_def_class()()
    x = graph_def.node.add(name="x", op="Placeholder")
    x.attr["dtype"].type = 1
    graph_def.node.add(name="y", op="NoSuchOpAnywhere", input=["x"])
    with pytest.raises(tf2ir.UnsupportedOpsError) as info:
        tf2ir.convert(graph_def, quiet=True)
    assert info.value.exit_code == 3 and "NoSuchOpAnywhere" in str(info.value)
    # any ConversionError with a subclass's status is that subclass, however raised
    assert type(ConversionError("m", exit_code=4)) is tf2ir.VerificationMismatch
    assert type(ConversionError("m", exit_code=1)) is ConversionError
    assert tf2ir.UsageError("m").exit_code == 2


def test_export_options_reach_the_model(models):
    paths, _, expected = models
    for opset in (13, 17):
        result = tf2ir.convert(paths["pb"], opset=opset, quiet=True)
        assert [o.version for o in result.model.opset_import if o.domain == ""] == [opset]
        np.testing.assert_allclose(_run(result), expected, rtol=1e-4, atol=1e-5)
    # inputs: a mapping or the command line's strings, the same shapes
    by_dict = tf2ir.convert(paths["pb"], inputs={"x": (2, 8, 8, 3)}, quiet=True)
    by_text = tf2ir.convert(paths["pb"], inputs=["x:2,8,8,3"], quiet=True)
    for result in (by_dict, by_text):
        dims = [d.dim_value for d in result.model.graph.input[0].type.tensor_type.shape.dim]
        assert dims == [2, 8, 8, 3]


def test_check_returns_what_check_json_prints(tmp_path):
    import dataclasses
    report = tf2ir.check(SAMPLE)
    assert isinstance(report, tf2ir.SupportReport)
    assert report.exit_status == 0 and report.supported and not report.unsupported
    done = run_cli("check", SAMPLE, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == json.loads(json.dumps(dataclasses.asdict(report)))


def test_check_names_the_unsupported_ops_of_a_graph_def():
    from tf2ir.parser.graph_view import graph_def_class
    graph_def = graph_def_class()()
    x = graph_def.node.add(name="x", op="Placeholder")
    x.attr["dtype"].type = 1
    graph_def.node.add(name="y", op="NoSuchOpAnywhere", input=["x"])
    report = tf2ir.check(graph_def)
    assert report.exit_status == 3
    assert [row.op_type for row in report.unsupported] == ["NoSuchOpAnywhere"]


def test_verify_passes_and_a_mismatch_is_a_result_not_an_exception(models, tmp_path):
    paths, tf_graph_def, _ = models
    result = tf2ir.verify(tf_graph_def, quiet=True, onnx=tmp_path / "v.onnx")
    assert result.passed and result.exit_status == 0
    assert [row.name for row in result.outputs] == ["Identity"]
    assert os.path.getsize(tmp_path / "v.onnx") > 0
    assert "verification passed" in str(result)
    given = tf2ir.verify(paths["pb"], inputs_data={"x": X}, quiet=True)
    assert given.passed and given.inputs["x"] is not None and given.inputs["x"].shape == X.shape
    # no tolerance at all: float arithmetic of two runtimes differs in the last bits
    strict = tf2ir.verify(paths["pb"], inputs_data={"x": X * 100}, rtol=0.0, atol=0.0,
                          quiet=True)
    assert not strict.passed and strict.exit_status == 4
    assert strict.outputs[0].max_abs > 0 and "verification FAILED" in strict.text()
    with pytest.raises(tf2ir.VerificationMismatch) as info:
        tf2ir.verify(paths["pb"], inputs_data={"x": X * 100}, rtol=0.0, atol=0.0,
                     raise_on_mismatch=True, quiet=True)
    assert info.value.exit_code == 4 and "verification FAILED" in str(info.value)


def test_importing_tf2ir_loads_neither_onnx_nor_tensorflow():
    code = ("import sys, tf2ir; heavy = [m for m in ('onnx', 'onnxruntime', 'tensorflow', "
            "'numpy', 'tf2ir.tools.api') if m in sys.modules]; print(heavy)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stdout + done.stderr


def test_every_public_name_resolves():
    for name in tf2ir.__all__:
        assert getattr(tf2ir, name) is not None, name
    assert callable(tf2ir.convert) and issubclass(tf2ir.UsageError, tf2ir.ConversionError)
    with pytest.raises(AttributeError):
        tf2ir.no_such_name   # noqa: B018


def test_the_api_modules_type_check():
    """mypy (the project's configuration) finds nothing in the public API's modules."""
    from tests.test_typecheck import run_mypy
    modules = ["tf2ir", "tf2ir.tools.api", "tf2ir.tools.api_core", "tf2ir.tools.api_result",
               "tf2ir.tools.api_verify"]
    _, output = run_mypy(*[arg for m in modules for arg in ("-m", m)])
    mine = [line for line in output.splitlines()
            if ": error:" in line and ("tools/api" in line or "tf2ir/__init__" in line)]
    assert not mine, output
    # "Success: no issues found in 5 source files", or with errors elsewhere in what the
    # modules import "Found N errors in M files (checked 5 source files)"
    assert re.search(r"(checked|found in) 5 source files", output), output


def test_past_the_protobuf_limit_the_weights_stay_aside_and_save_writes_external_data(
        tf, tmp_path, monkeypatch):
    """With protobuf's limit lowered to 1 MB + 4 KB: `.model` keeps the small initializers
    only (the big ones in `.initializers`), and save() writes OUT.onnx and OUT.onnx.data,
    which onnxruntime runs to the model's values."""
    import onnx
    from tf2ir.ir.onnx import writer
    weights = np.random.RandomState(1).standard_normal((64, 64)).astype(np.float32)
    x = tf.TensorSpec((1, 64), tf.float32, name="x")
    concrete = tf.function(lambda x: tf.matmul(x, weights) + 1.0).get_concrete_function(x)
    result = tf2ir.convert(concrete.graph.as_graph_def(), quiet=True)
    feed = np.ones((1, 64), np.float32)
    expected = feed @ weights + 1.0
    monkeypatch.setattr(writer, "PROTOBUF_LIMIT", (1 << 20) + 4096)
    result._model = None   # made again under the lowered limit
    sizes = {a.nbytes for _, a in result.initializers}
    assert weights.nbytes in sizes
    kept = {t.name for t in result.model.graph.initializer}
    assert all(a.nbytes < writer.EXTERNAL_MIN_BYTES for n, a in result.initializers if n in kept)
    assert len(kept) < len(result.initializers)
    path = tmp_path / "big.onnx"
    result.save(path)
    assert sorted(os.listdir(tmp_path)) == ["big.onnx", "big.onnx.data"]
    import onnxruntime as ort
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (actual,) = session.run(None, {session.get_inputs()[0].name: feed})
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-4)
    assert onnx.load(str(path)).graph.initializer   # the external tensors are named there


def test_lowering_warnings_are_in_the_report_and_printed_unless_quiet(tf, tmp_path, caplog):
    """A PlaceholderWithDefault whose default is computed: the model has no input for it,
    a warning the user must see, kept in the report. Where the application configured
    logging (pytest has) it goes to its handlers, unless quiet; where nothing is configured
    it is printed as `tf2ir: note: ...` (logging's last resort would have, before)."""
    import logging
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
        p = tf.compat.v1.placeholder_with_default(x * 2.0, [2], name="p")
        tf.identity(p + 1.0, name="out")
    path = tmp_path / "default.pb"
    path.write_bytes(graph.as_graph_def().SerializeToString())
    why = "PlaceholderWithDefault p: default is computed"
    with caplog.at_level(logging.WARNING, logger="tf2ir"):
        loud = tf2ir.convert(path)
    assert [w for w in loud.report.warnings if w.startswith(why)]
    assert why in caplog.text and why in str(loud.report)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="tf2ir"):
        quiet = tf2ir.convert(path, quiet=True)
    assert quiet.report.warnings == loud.report.warnings and why not in caplog.text
    code = f"import tf2ir; tf2ir.convert({str(path)!r}{{}})"
    for quiet_arg, shown in (("", True), (", quiet=True", False)):
        done = subprocess.run([sys.executable, "-c", code.format(quiet_arg)], cwd=ROOT,
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert (f"tf2ir: note: {why}" in done.stderr) is shown, done.stderr


def test_inference_session_takes_a_path_a_model_or_its_bytes(tmp_path):
    """tf2ir.InferenceSession takes what onnxruntime's does: a path (str or PathLike), a
    ModelProto, or the serialized bytes (which failed with an AttributeError before)."""
    import pathlib
    result = tf2ir.convert(SAMPLE, quiet=True)
    path = result.save(str(tmp_path / "m.onnx"))
    x = np.random.default_rng(0).uniform(size=(1, 32, 32, 3)).astype(np.float32)
    outs = [tf2ir.InferenceSession(m).run(None, {"input": x})[0]
            for m in (path, pathlib.Path(path), result.model, result.model.SerializeToString())]
    assert all(np.array_equal(outs[0], o) for o in outs[1:])
