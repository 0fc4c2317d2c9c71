"""Verification of a model converted with a changed interface (renamed, channels-first or
float16 inputs and outputs): compile records the options in the model's metadata, and verify
feeds TensorFlow the original names and layouts and compares in the written layout."""

import os
import subprocess
import sys

import onnx

from tf2ir.ir.export import ExportOptions, record, recorded

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "sample_cnn.pb")


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "tf2ir.tools.cli", *args],
                          capture_output=True, text=True)


def test_the_options_travel_in_the_model_metadata(tmp_path):
    export = ExportOptions(inputs_as_nchw=("input",), rename_outputs={"Identity": "probs"},
                           precision="fp16")
    model = record(onnx.ModelProto(), export)
    assert recorded(model) == export
    assert not record(onnx.ModelProto(), ExportOptions(opset=13)).metadata_props
    bad = onnx.ModelProto()
    bad.metadata_props.add(key="tf2ir.export", value='{"precision": "fp64"}')
    assert recorded(bad) == ExportOptions()   # a value that does not check counts as none


def test_convert_verify_feeds_tf_the_original_names_and_layout(tmp_path):
    out = tmp_path / "m.onnx"
    done = _cli("convert", DATA, "-o", str(out), "--inputs-as-nchw", "input",
                "--rename-inputs", "input:image", "--rename-outputs", "Identity:probs",
                "--verify")
    assert done.returncode == 0, done.stderr
    assert "probs   [1, 10]" in done.stdout
    assert "inputs: image [1, 3, 32, 32] float32" in done.stdout
    model = onnx.load(str(out))
    assert [i.name for i in model.graph.input] == ["image"]
    assert [o.name for o in model.graph.output] == ["probs"]


def test_convert_verify_of_a_float16_interface(tmp_path):
    done = _cli("convert", DATA, "-o", str(tmp_path / "h.onnx"), "--precision", "fp16",
                "--io-precision", "fp16", "--verify")
    assert done.returncode == 0, done.stderr + done.stdout
    assert "input [1, 32, 32, 3] float16" in done.stdout


def test_convert_verify_takes_verify_inputs_and_tolerances(tmp_path):
    out = tmp_path / "m.onnx"
    done = _cli("convert", DATA, "-o", str(out), "--verify", "--rtol", "1e-2", "--atol", "1e-3",
                "--seed", "3")
    assert done.returncode == 0, done.stderr
    assert "rtol=0.01 atol=0.001" in done.stdout and "seed 3" in done.stdout
    for flags in (["--rtol", "1e-2"], ["--batch", "2"], ["--inputs-data", "x.npz"]):
        done = _cli("convert", DATA, "-o", str(tmp_path / "n.onnx"), *flags)
        assert done.returncode == 2
        assert done.stderr == f"tf2ir: error: {flags[0]} needs --verify (it sets up the " \
                              "comparison with TensorFlow)\n"
        assert not (tmp_path / "n.onnx").exists()
