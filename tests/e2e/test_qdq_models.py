"""`tf2ir convert --quantized qdq` on quantization-aware graphs (tools/qdq_bench.py's: a CNN
with batch norm, strided and depthwise convs, and an attention block with an MLP, written with
the FakeQuant ops tf.quantization inserts; and tensorflow-model-optimization's quantize_model
of a Keras CNN where tfmot imports): onnxruntime runs the model with int8 kernels (its
optimized graph holds QLinearConv / QGemm / QLinearMatMul), the output is within a
quantization step or two of TF's fake-quant output (each intermediate activation within one;
a one-step difference early moves the layers after it), and the default conversion of the
same graph stays exact arithmetic without Q/DQ."""

import os

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from tf2ir.tools import qdq_bench
from tf2ir.tools.cli import main

tf = pytest.importorskip("tensorflow")

INT8 = set(qdq_bench.INT8_KERNELS)


def freeze(name, folder):
    from tf2ir.tools.models import freeze_function
    fn, spec = qdq_bench.build(name, "qat")
    pb = os.path.join(folder, f"{name}.pb")
    freeze_function(fn, spec, pb)
    return pb


def convert(pb, out, *options):
    assert main(["convert", pb, "-o", out, "-q", *options]) == 0
    return onnx.load(out)


def outputs(path, inputs):
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return [session.run(None, {"x": x})[0] for x in inputs]


# (model, int8 kernels onnxruntime must run, most output steps from TF over the inputs)
CASES = [("qat_cnn", {"QLinearConv", "QGemm"}, 1), ("qat_mlp", {"QGemm", "QLinearMatMul"}, 2)]


@pytest.mark.parametrize("name,kernels,steps", CASES, ids=[c[0] for c in CASES])
def test_qdq_model_runs_int8_near_tf(tmp_path, name, kernels, steps):
    pb = freeze(name, str(tmp_path))
    path = str(tmp_path / "qdq.onnx")
    model = convert(pb, path, "--quantized", "qdq")
    assert {"QuantizeLinear", "DequantizeLinear"} <= {n.op_type for n in model.graph.node}
    options = ort.SessionOptions()
    options.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    ran = {n.op_type for n in onnx.load(options.optimized_model_filepath).graph.node}
    assert kernels <= ran, ran & INT8
    inputs = [qdq_bench.sample_input(name, seed) for seed in range(1, 4)]
    step = qdq_bench.output_step(pb)
    assert step is not None
    exact = []
    for x, got in zip(inputs, outputs(path, inputs)):
        want = qdq_bench.tf_output(pb, x)
        assert np.abs(got - want).max() <= steps * step * (1 + 1e-4)
        exact.append(np.mean(got == want))
    assert np.mean(exact) >= 0.5        # measured: cnn 90-100%, mlp ~90% of outputs bit-exact


def test_default_stays_exact(tmp_path):
    pb = freeze("qat_cnn", str(tmp_path))
    path = str(tmp_path / "exact.onnx")
    model = convert(pb, path)
    assert not {"QuantizeLinear", "DequantizeLinear"} & {n.op_type for n in model.graph.node}
    x = qdq_bench.sample_input("qat_cnn")
    want = qdq_bench.tf_output(pb, x)
    got, = outputs(path, [x])
    # bit-exact op by op (tests/conformance/test_quantize.py); a float conv's summation order
    # may move a value across a rounding boundary, one step
    assert np.abs(got - want).max() <= qdq_bench.output_step(pb) * (1 + 1e-4)


def test_tfmot_quantize_model(tmp_path):
    """tensorflow-model-optimization's quantize_model (where it imports beside this TF:
    it needs tf-keras) of a small Keras CNN."""
    pytest.importorskip("tensorflow_model_optimization")
    pytest.importorskip("tf_keras")
    found = qdq_bench.tfmot_models(str(tmp_path), names=("tfmot_cnn",))
    qat_pb, _, x = found["tfmot_cnn"]
    path = str(tmp_path / "tfmot.onnx")
    convert(qat_pb, path, "--quantized", "qdq")
    options = ort.SessionOptions()
    options.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    ran = {n.op_type for n in onnx.load(options.optimized_model_filepath).graph.node}
    assert {"QLinearConv", "QGemm"} <= ran
    got, = outputs(path, [x])
    step = qdq_bench.output_step(qat_pb)
    assert np.abs(got - qdq_bench.tf_output(qat_pb, x)).max() <= 2 * step * (1 + 1e-4)


def test_without_the_qdq_pass_onnxruntime_runs_float_convs(tmp_path):
    """The pass `qdq` is what lets onnxruntime fuse: without it the filters' transposes and
    the bias Adds sit between DequantizeLinear and Conv, and no QLinearConv is made."""
    pb = freeze("qat_cnn", str(tmp_path))
    ran = {}
    for switch in ("on:qdq", "off:qdq"):
        path = str(tmp_path / f"{switch[:-4]}.onnx")
        convert(pb, path, "--quantized", "qdq", "--passes", switch)
        options = ort.SessionOptions()
        options.optimized_model_filepath = str(tmp_path / f"{switch[:-4]}_optimized.onnx")
        ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        ran[switch] = [n.op_type for n in onnx.load(options.optimized_model_filepath).graph.node]
    assert ran["on:qdq"].count("QLinearConv") == 4 and "Conv" not in ran["on:qdq"]
    assert "QLinearConv" not in ran["off:qdq"] and ran["off:qdq"].count("Conv") == 4
