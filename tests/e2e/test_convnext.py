"""keras.applications.ConvNeXtTiny: its grouped convolutions stay StatefulPartitionedCall
nodes after freezing (Keras 3 compiles them with XLA), so converting it needs the function
library inlined, plus GatherV2, Prod, Erfc and the tensordot shape arithmetic."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from tests.conftest import max_abs_error, run_cli, run_onnx
from tf2ir.parser.load import load_graph_def
from tf2ir.tools.models import run_frozen_graph


@pytest.mark.slow
def test_convnext_tiny_converts_and_matches_tensorflow(keras_app, tmp_path):
    model = keras_app("ConvNeXtTiny")
    graph_def = load_graph_def(model.path)
    calls = [n for n in graph_def.node if n.op == "StatefulPartitionedCall"]
    assert len(calls) == 18
    assert all(n.attr["f"].func.name.startswith("__inference__conv_xla_frozen_") for n in calls)

    out = str(tmp_path / "convnext.onnx")
    result = run_cli("convert", model.path, "-o", out)
    assert result.returncode == 0, result.stderr
    onnx.checker.check_model(out, full_check=True)
    # Keras 3's Dense on 4-D tensors is a tensordot (run-time shape arithmetic around a 2-D
    # MatMul); the reshape pass makes each one broadcast MatMul.
    op_types = [n.op_type for n in onnx.load(out, load_external_data=False).graph.node]
    assert op_types.count("MatMul") == 36 and "Shape" not in op_types and "Reshape" not in op_types

    x = np.random.RandomState(1).uniform(0, 1, (2,) + model.input_shape).astype(np.float32)
    expected = run_frozen_graph(model.path, {model.input_name: x}, model.output_names)[0]
    spread = float(np.ptp(expected))
    assert spread > 5e-4                 # randomized batch norms: far from uniform
    got = run_onnx(out, {"input": x})[0]
    assert max_abs_error(got, expected) <= min(1e-4, 0.01 * spread)
