"""Half precision end to end: a small Keras CNN (conv, batch norm, relu, pooling, dense,
softmax) frozen to a .pb (converting the .keras file costs a TensorFlow import per command),
converted by the command line with --precision fp16 and with
--weights fp16, run in onnxruntime and compared with Keras itself.

Tolerance: the softmax output is at most 1; float16 rounds each tensor to 2^-11 of its value
and the CNN chains about ten of them, so 5e-3 bounds the fp16 model (measured: ~3e-4) and
2e-3 the float16-stored weights (measured: ~5e-5)."""

from __future__ import annotations

import os

import numpy as np
import onnx
import pytest

from tests.conftest import run_cli, run_onnx
from tf2ir.tools.models import freeze_function

tf = pytest.importorskip("tensorflow")
keras = tf.keras


@pytest.fixture(scope="module")
def keras_cnn(tmp_path_factory):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([
        keras.layers.Input((32, 32, 3), name="image"),
        keras.layers.Conv2D(16, 3, padding="same"),
        keras.layers.BatchNormalization(),
        keras.layers.ReLU(),
        keras.layers.MaxPooling2D(),
        keras.layers.Conv2D(32, 3, padding="same", activation="relu"),
        keras.layers.GlobalAveragePooling2D(),
        keras.layers.Dense(10, activation="softmax"),
    ])
    # batch norm statistics that are not the identity
    bn = model.layers[1]
    rng = np.random.default_rng(0)
    bn.set_weights([rng.uniform(0.5, 1.5, 16), rng.normal(0, 0.2, 16),
                    rng.normal(0, 0.2, 16), rng.uniform(0.5, 2, 16)])
    folder = tmp_path_factory.mktemp("keras")
    path, full = str(folder / "cnn.pb"), str(folder / "full.onnx")
    freeze_function(lambda image: model(image), [tf.TensorSpec((None, 32, 32, 3), tf.float32,
                                                               name="image")], path)
    result = run_cli("convert", path, "-o", full, "-q")
    assert result.returncode == 0, result.stderr
    x = rng.uniform(0, 1, (2, 32, 32, 3)).astype(np.float32)
    return path, full, x, np.asarray(model(x))


@pytest.mark.parametrize("flags, tolerance", [(["--precision", "fp16"], 5e-3),
                                              (["--weights", "fp16"], 2e-3)])
def test_keras_cnn_half_precision(keras_cnn, tmp_path, flags, tolerance):
    path, full, x, want = keras_cnn
    half = str(tmp_path / "half.onnx")
    result = run_cli("convert", path, "-o", half, "-q", *flags)
    assert result.returncode == 0, result.stderr
    model = onnx.load(half)
    onnx.checker.check_model(model, full_check=True)
    assert [i.type.tensor_type.elem_type for i in model.graph.input] == [onnx.TensorProto.FLOAT]
    assert os.path.getsize(half) < 0.6 * os.path.getsize(full)
    name = model.graph.input[0].name
    got = run_onnx(half, {name: x})[0]
    err = float(np.abs(got - want).max())
    assert err <= tolerance, err
    assert err > float(np.abs(run_onnx(full, {name: x})[0] - want).max())
