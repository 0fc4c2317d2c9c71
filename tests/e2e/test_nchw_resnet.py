"""ResNet50 converted with --inputs-as-nchw keeps no Transpose at all (the layout pass cancels
the input's against the first convolution's) and computes what TensorFlow computes on the
channels-last input; renamed input and output on the same model."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from tests.conftest import max_abs_error, run_cli, run_onnx
from tf2ir.tools.models import freeze_function, randomize_batch_norms, run_frozen_graph

tf = pytest.importorskip("tensorflow")

SHAPE = (64, 64, 3)


@pytest.fixture(scope="module")
def resnet(tmp_path_factory):
    """keras.applications.ResNet50 (weights=None, random batch norms) at 64x64, frozen."""
    import keras
    keras.utils.set_random_seed(0)
    model = keras.applications.ResNet50(weights=None, input_shape=SHAPE)
    randomize_batch_norms(model, 0)
    path = str(tmp_path_factory.mktemp("nchw") / "resnet50.pb")
    outputs = freeze_function(lambda x: model(x, training=False),
                              tf.TensorSpec((None,) + SHAPE, tf.float32, name="input"), path)
    return path, outputs[0]


def test_resnet50_channels_first_has_no_transpose_and_matches_tensorflow(resnet, tmp_path):
    path, output = resnet
    out = str(tmp_path / "nchw.onnx")
    result = run_cli("convert", path, "-o", out, "--inputs-as-nchw", "input:0",
                     "--rename-inputs", "input:image", "--rename-outputs",
                     f"{output.split(':')[0]}:probs")
    assert result.returncode == 0, result.stderr
    onnx.checker.check_model(out, full_check=True)
    graph = onnx.load(out).graph
    op_types = [n.op_type for n in graph.node]
    assert "Transpose" not in op_types, op_types
    assert op_types.count("Conv") == 53
    assert [i.name for i in graph.input] == ["image"] and [o.name for o in graph.output] == ["probs"]
    dims = [d.dim_value or d.dim_param for d in graph.input[0].type.tensor_type.shape.dim]
    assert dims[1:] == [3, 64, 64]

    x = np.random.RandomState(3).uniform(0, 1, (1,) + SHAPE).astype(np.float32)
    expected = run_frozen_graph(path, {"input": x}, [output])[0]
    assert float(np.ptp(expected)) > 5e-4          # a broken model cannot hide in a flat output
    got = run_onnx(out, {"image": x.transpose(0, 3, 1, 2)})[0]
    assert max_abs_error(got, expected) <= 1e-4
    # the same model without the option takes NHWC through one Transpose
    plain = str(tmp_path / "nhwc.onnx")
    assert run_cli("convert", path, "-o", plain).returncode == 0
    plain_types = [n.op_type for n in onnx.load(plain).graph.node]
    assert plain_types.count("Transpose") == 1 and len(plain_types) == len(op_types) + 1
