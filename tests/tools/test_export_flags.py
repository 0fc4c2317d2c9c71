"""The written-model flags of `convert` and `compile` (tools/options.py, ir/export.py): good
values reach the model, bad ones are one usage line (exit 2) before any output exists."""

import os
import subprocess
import sys

import onnx
import pytest

from tf2ir.ir.errors import ConversionError
from tf2ir.ir.export import ExportOptions, parse_renames

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "sample_cnn.pb")


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "tf2ir.tools.cli", *args],
                          capture_output=True, text=True)


def test_parse_renames_keeps_tensor_ports_and_refuses_bad_items():
    assert parse_renames("input:0:image, logits:scores", "--rename-inputs") == {
        "input:0": "image", "logits": "scores"}
    assert parse_renames(None, "--rename-inputs") == {}
    for bad, why in (("input", "expected OLD:NEW"), ("a:b,a:c", "renames 'a' twice"),
                     (":x", "expected OLD:NEW")):
        with pytest.raises(ConversionError, match=why) as info:
            parse_renames(bad, "--rename-inputs")
        assert info.value.exit_code == 2


@pytest.mark.parametrize("options, message", [
    (ExportOptions(precision="bf16"), "precision 'bf16' is not one of fp32, fp16"),
    (ExportOptions(quantized="int4"), "quantized 'int4' is not one of exact, qdq"),
    (ExportOptions(opset="18"), "opset '18' is not an integer"),
    (ExportOptions(io_precision="fp16"), "--io-precision fp16 needs --precision fp16"),
    (ExportOptions(rename_outputs={"a": "x", "b": "x"}), "the same new name"),
])
def test_export_options_refuse_bad_values(options, message):
    with pytest.raises(ConversionError, match=message) as info:
        options.check()
    assert info.value.exit_code == 2


def test_compile_takes_an_opset_and_convert_refuses_one_out_of_range(tmp_path):
    ir = str(tmp_path / "m.ir")
    assert _cli("convert", DATA, "-o", ir, "-q").returncode == 0
    done = _cli("compile", ir, "-o", str(tmp_path / "m.onnx"), "--opset", "14")
    assert done.returncode == 0, done.stderr
    assert [o.version for o in onnx.load(str(tmp_path / "m.onnx")).opset_import if not o.domain] == [14]
    newest = onnx.defs.onnx_opset_version()
    out = tmp_path / "bad.onnx"
    done = _cli("convert", DATA, "-o", str(out), "--opset", str(newest + 1))
    assert done.returncode == 2
    assert done.stderr == (f"tf2ir: error: opset {newest + 1} is not one tf2ir writes: choose 13 "
                           f"to {newest} (the newest the installed onnx defines)\n")
    assert not out.exists()
    done = _cli("convert", DATA, "-o", str(out), "--rename-outputs", "nocolon")
    assert done.returncode == 2 and "bad --rename-outputs value 'nocolon'" in done.stderr
    assert not out.exists()


def test_check_predicts_convert_at_an_opset(tmp_path):
    """`tf2ir check --opset N` lowers for opset N: an op opset N cannot hold is the error
    convert meets there (exit 1, the same line), and at an opset that holds it, success."""
    tf = pytest.importorskip("tensorflow")
    from tf2ir.tools.models import freeze_function
    pb = str(tmp_path / "band.pb")
    freeze_function(lambda a, b: tf.bitwise.bitwise_and(a, b),
                    [tf.TensorSpec((3,), tf.int32, name="a"),
                     tf.TensorSpec((3,), tf.int32, name="b")], pb)
    checked = _cli("check", pb, "--opset", "17")
    converted = _cli("convert", pb, "-o", str(tmp_path / "band.onnx"), "--opset", "17")
    assert checked.returncode == converted.returncode == 1
    line = "ONNX BitwiseAnd needs opset 18 or newer; asked for opset 17"
    assert line in checked.stdout and line in converted.stderr
    assert _cli("check", pb, "--opset", "18").returncode == 0
