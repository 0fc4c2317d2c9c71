"""Whole keras.applications models: freeze with TF, convert with the CLI, run in
onnxruntime, compare with TensorFlow on the same random input."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from tests.conftest import max_abs_error, run_cli, run_onnx
from tf2ir.tools.models import run_frozen_graph

MODELS = [
    "ResNet50",
    "MobileNetV2",
    pytest.param("EfficientNetB0", marks=pytest.mark.slow),
]


def _reference(model, x):
    return run_frozen_graph(model.path, {model.input_name: x}, model.output_names)[0]


@pytest.mark.parametrize("name", MODELS)
def test_converts_and_matches_tensorflow(keras_app, tmp_path, name):
    model = keras_app(name)
    out = str(tmp_path / f"{name}.onnx")
    result = run_cli("convert", model.path, "-o", out)
    assert result.returncode == 0, result.stderr
    onnx.checker.check_model(out, full_check=True)
    # The passes leave one NHWC->NCHW Transpose (the input's) and fold every batch norm
    # (FusedBatchNormV3 or Keras 3's Mul/Add form) into the convolutions.
    op_types = [n.op_type for n in onnx.load(out, load_external_data=False).graph.node]
    assert op_types.count("Transpose") == 1, op_types
    assert "BatchNormalization" not in op_types
    if name != "EfficientNetB0":       # its Muls are swish and squeeze-excitation
        assert "Mul" not in op_types and "Sub" not in op_types, op_types

    rng = np.random.RandomState(1)
    for batch in (1, 4):   # the batch dim stays symbolic: one model, two batch sizes
        x = rng.uniform(0, 1, (batch,) + model.input_shape).astype(np.float32)
        expected = _reference(model, x)
        # The randomized batch norms make the output far from uniform, and the error must
        # also be small against the spread of the output: a broken conversion cannot hide
        # behind 1/1000 everywhere.
        spread = float(np.ptp(expected))
        assert spread > 5e-4
        got = run_onnx(out, {"input": x})[0]
        assert max_abs_error(got, expected) <= min(1e-4, 0.01 * spread)


def test_ir_round_trip_then_compile(keras_app, tmp_path):
    """convert --emit ir, then compile the saved IR: same numbers as TF."""
    model = keras_app("MobileNetV2")
    ir_path, onnx_path = str(tmp_path / "m.ir"), str(tmp_path / "m.onnx")
    result = run_cli("convert", model.path, "--emit", "ir", "-o", ir_path)
    assert result.returncode == 0, result.stderr
    text = open(ir_path).read()
    assert "DepthwiseConv2D(" in text and "HWCN" in text and "NHWC" in text
    result = run_cli("compile", ir_path, "-o", onnx_path)
    assert result.returncode == 0, result.stderr
    onnx.checker.check_model(onnx_path, full_check=True)
    x = np.random.RandomState(2).uniform(0, 1, (2,) + model.input_shape).astype(np.float32)
    assert max_abs_error(run_onnx(onnx_path, {"input": x})[0], _reference(model, x)) <= 1e-4


def test_inputs_option_fixes_the_shape(keras_app, tmp_path):
    model = keras_app("MobileNetV2")
    out = str(tmp_path / "fixed.onnx")
    result = run_cli("convert", model.path, "-o", out, "--inputs", "input:1,224,224,3")
    assert result.returncode == 0, result.stderr
    graph = onnx.load(out, load_external_data=False).graph
    dims = [d.dim_value for d in graph.input[0].type.tensor_type.shape.dim]
    assert dims == [1, 224, 224, 3]
    assert [d.dim_value for d in graph.output[0].type.tensor_type.shape.dim] == [1, 1000]


def test_shipped_sample_model(tmp_path):
    """The model README's set-up command converts: shipped in tests/data, run against TF."""
    import os
    path = os.path.join(os.path.dirname(__file__), "..", "data", "sample_cnn.pb")
    out = str(tmp_path / "sample.onnx")
    result = run_cli("convert", path, "-o", out)
    assert result.returncode == 0, result.stderr
    onnx.checker.check_model(out, full_check=True)
    x = np.random.RandomState(3).uniform(0, 1, (4, 32, 32, 3)).astype(np.float32)
    expected = run_frozen_graph(path, {"input": x}, ["Identity:0"])[0]
    assert np.ptp(expected) > 0.03   # a softmax over 10 classes, far from uniform
    assert max_abs_error(run_onnx(out, {"input": x})[0], expected) <= 1e-5
