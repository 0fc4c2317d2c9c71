""".tflite through every command: convert (--outputs, --inputs, --signature, --verify),
check (the framework shown, the verdict convert meets), verify and report (the LiteRT
interpreter as the reference), batch (a directory and a manifest of .tflite files) and plugins
(the framework column), and hostile files: one error line, the documented exit status, no
traceback, no output file."""

from __future__ import annotations

import copy
import json
import os

import numpy as np
import pytest

from tf2ir.tools.cli import main

tf = pytest.importorskip("tensorflow")
schema = pytest.importorskip("ai_edge_litert.schema_py_generated")


def _conv_mean(x):
    w = np.random.default_rng(1).standard_normal((3, 3, 3, 4)).astype(np.float32)
    return tf.reduce_mean(tf.nn.relu6(tf.nn.conv2d(x, w, 1, "SAME")), axis=[1, 2])


def _pack(model) -> bytes:
    import flatbuffers
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


@pytest.fixture(scope="session")
def models(tmp_path_factory):
    """Paths of tiny .tflite models: float, full int8 (int8 I/O), one whose MEAN became a
    custom op no plugin maps, one with two signatures (the second on a copy of the subgraph
    whose tensors are renamed), and a truncated one."""
    from tests.conformance.tflite_harness import spec, to_tflite
    root = tmp_path_factory.mktemp("tflite_cli")
    specs = [spec([None, 8, 8, 3], name="x")]
    data = {"float": to_tflite(_conv_mean, specs), "int8": to_tflite(_conv_mean, specs, "int8", io="int8")}
    model = schema.ModelT.InitFromPackedBuf(bytearray(data["float"]), 0)
    custom = copy.deepcopy(model)
    mean = next(c for c in custom.operatorCodes if c.builtinCode == schema.BuiltinOperator.MEAN)
    mean.builtinCode = mean.deprecatedBuiltinCode = schema.BuiltinOperator.CUSTOM
    mean.customCode = "MyTfliteOp"
    data["custom"] = _pack(custom)
    second = copy.deepcopy(model.subgraphs[0])
    for t in second.tensors:
        t.name = b"second_" + t.name
    model.subgraphs.append(second)
    sigs = []
    for key, index in (("serving_default", 0), ("second", 1)):
        sg = model.subgraphs[index]
        sig = schema.SignatureDefT()
        sig.signatureKey, sig.subgraphIndex = key, index
        sig.inputs, sig.outputs = [], []
        for names, tensors in ((sig.inputs, sg.inputs), (sig.outputs, sg.outputs)):
            for i in tensors:
                entry = schema.TensorMapT()
                entry.name, entry.tensorIndex = sg.tensors[i].name.decode(), i
                names.append(entry)
        sigs.append(sig)
    model.signatureDefs = sigs
    data["signatures"] = _pack(model)
    data["truncated"] = data["float"][:len(data["float"]) // 2]
    paths = {}
    for name, content in data.items():
        paths[name] = str(root / f"{name}.tflite")
        with open(paths[name], "wb") as f:
            f.write(content)
    return paths


def cli(capfd, *args):
    """(exit status, stdout, stderr) of the command line run in this process."""
    status = main([str(a) for a in args])
    out, err = capfd.readouterr()
    return status, out, err


def one_error(err: str, *needles: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tf2ir: error: "), err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def reference(path, feeds, outputs=None):
    from tf2ir.tools.tflite_reference import load_interpreter, run_tflite
    return run_tflite(path, feeds, outputs, interpreter=load_interpreter(path, preserve_all=True))


def onnx_run(path, feeds):
    import onnxruntime as ort
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))


X = np.random.default_rng(0).standard_normal((2, 8, 8, 3)).astype(np.float32)


# -- convert -----------------------------------------------------------------------------------
def test_convert_keeps_tflite_names_and_matches_the_interpreter(capfd, models, tmp_path):
    out = tmp_path / "m.onnx"
    status, _, err = cli(capfd, "convert", models["float"], "-o", out)
    assert status == 0, err
    got, want = onnx_run(str(out), {"x": X}), reference(models["float"], {"x": X})
    assert list(got) == list(want)   # the output keeps its TFLite tensor name
    name = next(iter(want))
    np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-5)


def test_convert_outputs_names_a_tflite_tensor(capfd, models, tmp_path):
    from tf2ir.parser.tflite_model import read_tflite
    sg = read_tflite(models["float"]).subgraphs[0]
    conv = next(sg.tensors[op.outputs[0]].name for op in sg.operators if op.op_type == "CONV_2D")
    out = tmp_path / "m.onnx"
    status, _, err = cli(capfd, "convert", models["float"], "-o", out, "--outputs", conv)
    assert status == 0, err
    got = onnx_run(str(out), {"x": X})
    assert list(got) == [conv]
    np.testing.assert_allclose(got[conv], reference(models["float"], {"x": X}, [conv])[conv],
                               rtol=1e-5, atol=1e-5)
    status, _, err = cli(capfd, "convert", models["float"], "-o", tmp_path / "bad.onnx",
                         "--outputs", "no_such_tensor")
    assert status == 2
    one_error(err, "no_such_tensor", "not a tensor of the TFLite model")
    assert not (tmp_path / "bad.onnx").exists()


def test_convert_inputs_fixes_a_dynamic_dim(capfd, models, tmp_path):
    import onnx
    out = tmp_path / "m.onnx"
    status, _, err = cli(capfd, "convert", models["float"], "-o", out, "--inputs", "x:2,8,8,3")
    assert status == 0, err
    dims = onnx.load(str(out)).graph.input[0].type.tensor_type.shape.dim
    assert [d.dim_value for d in dims] == [2, 8, 8, 3]
    status, _, err = cli(capfd, "convert", models["float"], "-o", tmp_path / "b.onnx",
                         "--inputs", "nope:1,8,8,3")
    assert status == 2
    one_error(err, "'nope'")


def test_convert_signature_chooses_the_subgraph(capfd, models, tmp_path):
    out = tmp_path / "m.onnx"
    status, _, err = cli(capfd, "convert", models["signatures"], "-o", out, "--signature", "second")
    assert status == 0, err
    got = onnx_run(str(out), {"second_x": X})
    assert all(name.startswith("second_") for name in got)
    status, _, err = cli(capfd, "convert", models["signatures"], "-o", tmp_path / "d.onnx")
    assert status == 0, err    # serving_default: subgraph 0
    assert not any(name.startswith("second_") for name in onnx_run(str(tmp_path / "d.onnx"),
                                                                     {"x": X}))
    status, _, err = cli(capfd, "convert", models["signatures"], "-o", tmp_path / "b.onnx",
                         "--signature", "third")
    assert status == 2
    one_error(err, "signature 'third'", "serving_default, second")
    assert not (tmp_path / "b.onnx").exists()


def test_convert_unsupported_op_names_the_tflite_op(capfd, models, tmp_path):
    out = tmp_path / "m.onnx"
    status, _, err = cli(capfd, "convert", models["custom"], "-o", out)
    assert status == 3
    one_error(err, "MyTfliteOp")
    assert not out.exists() and not list(tmp_path.iterdir())


@pytest.mark.parametrize("kind", ["truncated", "fifo", "directory", "missing"])
def test_hostile_files_are_one_error(capfd, models, tmp_path, kind):
    path = tmp_path / "bad.tflite"
    if kind == "truncated":
        path = models["truncated"]
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    out = tmp_path / "m.onnx"
    for command in (["convert", path, "-o", out], ["check", path], ["verify", path]):
        status, stdout, err = cli(capfd, *command)
        assert status == 1, (command, err)
        one_error(err, "bad.tflite" if kind != "truncated" else "truncated.tflite")
        assert not out.exists()


def test_convert_verify_int8(capfd, models, tmp_path):
    status, out, err = cli(capfd, "convert", models["int8"], "-o", tmp_path / "m.onnx", "--verify")
    assert status == 0, err
    assert "verification passed" in out and "quantized: within 1 step" in out
    assert "XNNPACK" not in err   # the interpreter's C++ notice is silenced


# -- check -----------------------------------------------------------------------------------
def test_check_shows_the_framework_and_predicts_convert(capfd, models, tmp_path):
    status, out, err = cli(capfd, "check", models["float"], "--json")
    assert status == 0, err
    report = json.loads(out)
    rows = {r["op_type"]: r for r in report["op_types"]}
    assert rows["CONV_2D"]["framework"] == "TFLITE" and rows["CONV_2D"]["status"] == "mapped"
    assert rows["CONV_2D"]["plugin"] == "builtin_tflite_conv"
    assert rows["MEAN"]["plugin"].startswith("builtin_tflite")
    assert report["framework"] == "TFLITE" and report["exit_status"] == 0
    status, text, _ = cli(capfd, "check", models["float"])
    assert status == 0
    assert text.splitlines()[0].startswith("FRAMEWORK OP TYPE")
    assert any(line.startswith("TFLITE    CONV_2D") for line in text.splitlines())
    assert "TFLite nodes" in text and "convert would succeed" in text
    assert not list(tmp_path.iterdir())


def test_check_lists_unsupported_tflite_ops(capfd, models):
    status, out, err = cli(capfd, "check", models["custom"], "--json")
    assert status == 3, err
    report = json.loads(out)
    assert [r["op_type"] for r in report["unsupported"]] == ["MyTfliteOp"]
    assert report["unsupported"][0]["framework"] == "TFLITE"
    rows = {r["op_type"]: r for r in report["op_types"]}
    assert rows["CONV_2D"]["status"] == "mapped"
    status, text, _ = cli(capfd, "check", models["custom"])
    assert status == 3 and "unsupported: MyTfliteOp (1x" in text


# -- verify and report -------------------------------------------------------------------------
def test_verify_against_the_interpreter(capfd, models):
    status, out, err = cli(capfd, "verify", models["float"], "--batch", "3")
    assert status == 0, err
    assert "verification passed" in out and "x [3, 8, 8, 3] float32" in out
    status, out, err = cli(capfd, "verify", models["int8"])
    assert status == 0, err
    assert "x [1, 8, 8, 3] int8" in out and "quantized: within 1 step" in out
    status, out, err = cli(capfd, "verify", models["signatures"], "--signature", "second")
    assert status == 0, err
    assert "second_x" in out


def test_verify_names_the_first_diverging_operator(capfd, models, tmp_path):
    """A plugin that maps MEAN to ReduceMax (priority over the built-in) diverges there."""
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "wrong_mean.py").write_text(
        "from tf2ir.plugins import hookimpl\n"
        "from tf2ir.plugins.tflite import tflite_op\n\n"
        "def keep(src, op):\n"
        "    op.set_attr('keep_dims', bool(src.attr('keep_dims', False)))\n\n"
        "@hookimpl\n"
        "def tf2ir_op_mappings():\n"
        "    return [tflite_op('ReduceMax', 'MEAN').parse_params_fn(keep).with_priority(5)]\n")
    status, out, err = cli(capfd, "verify", models["float"], "--plugin-dir", plugins)
    assert status == 4, err
    assert "verification FAILED" in out
    line = next(line for line in out.splitlines() if line.startswith("first divergence"))
    assert "(op MEAN, plugin" in line and "wrong_mean" in line


def test_report_shows_the_tflite_graph(capfd, models, tmp_path):
    page = tmp_path / "r.html"
    status, _, err = cli(capfd, "report", models["int8"], "-o", page, "--verify")
    assert status == 0, err
    text = page.read_text()
    assert '"op":"CONV_2D"' in text and "builtin_tflite_conv" in text
    assert '"op":"TFLiteQuantize"' in text and "quantized: within 1 step" in text


# -- batch and plugins -------------------------------------------------------------------------
def test_batch_directory_and_manifest_of_tflite(capfd, models, tmp_path):
    import shutil
    source = tmp_path / "models"
    source.mkdir()
    for name in ("float", "int8", "custom"):
        shutil.copy(models[name], source / f"{name}.tflite")
    status, out, err = cli(capfd, "batch", source, "-o", tmp_path / "out", "-j", "1", "-q")
    assert status == 3, err    # the custom op is unsupported; the others converted
    assert (tmp_path / "out" / "float.onnx").is_file() and (tmp_path / "out" / "int8.onnx").is_file()
    assert not (tmp_path / "out" / "custom.onnx").exists()
    manifest = tmp_path / "models.json"
    from tf2ir.parser.tflite_model import read_tflite
    sg = read_tflite(models["float"]).subgraphs[0]
    output = sg.tensors[sg.outputs[0]].name
    manifest.write_text(json.dumps([{"path": "models/float.tflite", "output": "f.onnx",
                                     "outputs": [output]}]))
    status, _, err = cli(capfd, "batch", manifest, "-o", tmp_path / "out2", "-j", "1", "-q",
                         "--verify")
    assert status == 0, err
    assert list(onnx_run(str(tmp_path / "out2" / "f.onnx"), {"x": X})) == [output]


def test_plugins_show_the_framework(capfd):
    status, out, _ = cli(capfd, "plugins", "--json")
    assert status == 0
    rows = [r for r in json.loads(out) if r["kind"] == "op_mapping"]
    conv = [r for r in rows if r["origin_op_type"] == "CONV_2D"]
    assert len(conv) == 1 and conv[0]["framework"] == "TFLITE"
    assert not any(":" in r["origin_op_type"] for r in rows if r["framework"] == "TFLITE")
    assert next(r for r in rows if r["origin_op_type"] == "Conv2D")["framework"] == "TENSORFLOW"
    status, text, _ = cli(capfd, "plugins")
    lines = text.splitlines()
    assert lines[0].split()[:4] == ["ORIGIN", "OP", "TYPE", "FRAMEWORK"]
    assert any(line.split()[:2] == ["CONV_2D", "TFLITE"] for line in lines)
    assert not any(line.startswith("TFLITE:") for line in lines)


def test_fallback_tf_is_refused_for_tflite(capfd, models, tmp_path):
    """TensorFlow cannot run TFLite operators: a usage error, not an internal one."""
    for command in (["convert", models["custom"], "-o", tmp_path / "m.onnx"], ["check", models["custom"]]):
        status, _, err = cli(capfd, *command, "--fallback", "tf")
        assert status == 2, err
        one_error(err, "--fallback tf takes TensorFlow models")
    assert not list(tmp_path.iterdir())
