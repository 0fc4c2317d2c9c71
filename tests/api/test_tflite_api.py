"""The Python API with TFLite models: tf2ir.convert / check / verify take a .tflite path or
its bytes (told apart from a GraphDef's by the TFL3 identifier); a signature selects the
subgraph; malformed bytes are one ConversionError."""

from __future__ import annotations

import numpy as np
import pytest

import tf2ir

tf = pytest.importorskip("tensorflow")
pytest.importorskip("ai_edge_litert")


def _conv_mean(x):
    w = np.random.default_rng(2).standard_normal((3, 3, 3, 4)).astype(np.float32)
    return tf.reduce_mean(tf.nn.relu(tf.nn.conv2d(x, w, 1, "SAME")), axis=[1, 2])


@pytest.fixture(scope="session")
def tflite_models():
    from tests.conformance.tflite_harness import spec, to_tflite
    specs = [spec([None, 8, 8, 3], name="x")]
    return {"float": to_tflite(_conv_mean, specs),
            "int8": to_tflite(_conv_mean, specs, "int8", io="int8")}


def _interpreter(data: bytes, feeds):
    from tf2ir.tools.tflite_reference import load_interpreter, run_tflite
    return run_tflite("<bytes>", feeds, interpreter=load_interpreter("<bytes>", content=data))


def _onnx(result, tmp_path, feeds):
    import onnxruntime as ort
    path = str(tmp_path / "m.onnx")
    result.save(path)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))


@pytest.mark.parametrize("as_bytes", [False, True])
def test_convert_path_or_bytes(tflite_models, tmp_path, as_bytes):
    data = tflite_models["float"]
    path = tmp_path / "m.tflite"
    path.write_bytes(data)
    result = tf2ir.convert(data if as_bytes else str(path), quiet=True)
    x = np.random.default_rng(0).standard_normal((2, 8, 8, 3)).astype(np.float32)
    got, want = _onnx(result, tmp_path, {"x": x}), _interpreter(data, {"x": x})
    assert list(got) == list(want)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-5)
    assert ("<TFLite bytes>" if as_bytes else "m.tflite") in repr(result)
    assert result.report.framework == "TFLITE" and " TFLite nodes" in str(result.report)


def test_bytes_with_inputs_and_outputs(tflite_models):
    from tf2ir.parser.tflite_model import parse_tflite
    sg = parse_tflite(tflite_models["float"], "m").subgraphs[0]
    inner = next(sg.tensors[op.outputs[0]].name for op in sg.operators if op.op_type == "CONV_2D")
    result = tf2ir.convert(tflite_models["float"], inputs={"x": [1, 8, 8, 3]}, outputs=[inner],
                           quiet=True)
    model = result.model
    assert [o.name for o in model.graph.output] == [inner]
    assert [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim] == [1, 8, 8, 3]


def test_check_and_verify_bytes(tflite_models):
    report = tf2ir.check(tflite_models["int8"])
    assert report.exit_status == 0 and report.framework == "TFLITE"
    assert {r.op_type: r.framework for r in report.op_types}["CONV_2D"] == "TFLITE"
    result = tf2ir.verify(tflite_models["int8"], quiet=True)
    assert result.passed and result.inputs["x"].dtype == np.int8
    assert all("quantized" in row.note for row in result.outputs)


def test_bad_bytes_and_signature_are_one_error(tflite_models):
    data = tflite_models["float"]
    with pytest.raises(tf2ir.ConversionError) as info:
        tf2ir.convert(data[:len(data) // 3], quiet=True)
    assert info.value.exit_code == 1 and "<TFLite bytes>" in str(info.value)
    assert "\n" not in str(info.value)
    with pytest.raises(tf2ir.ConversionError) as info:
        tf2ir.convert(data, signature="nope", quiet=True)
    assert info.value.exit_code == 2 and "signature 'nope'" in str(info.value)
