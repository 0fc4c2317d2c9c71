"""Quantized TFLite models (QDQ) against the LiteRT interpreter: small conv / dense / add
models in modes int8 (float, int8 and uint8 io), int16 (16x8), float16 and dynamic-range,
within one quantization step; the optimized onnxruntime graph holds int8 kernels; the IR ops
QuantizeLinear/DequantizeLinear (opp/quantize_linear.py) against ONNX's own definition.

The module's last test prints how many quantized cases were bit-exact."""

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from tests.conformance.tflite_harness import check_tflite, convert_tflite, spec, to_tflite

tf = pytest.importorskip("tensorflow")

TFLITE_TESTED = {"QUANTIZE": ("int8", "int16"), "DEQUANTIZE": ("int8", "int16", "float16"),
                 "CONV_2D": ("int8", "int16", "float16", "dynamic"),
                 "FULLY_CONNECTED": ("int8", "int16", "float16", "dynamic"),
                 "ADD": ("int8", "int16", "float16")}

RNG = np.random.default_rng(26)
W = RNG.standard_normal((3, 3, 3, 4)).astype(np.float32)
D = RNG.standard_normal((12, 5)).astype(np.float32)


@tf.function
def conv(x):
    return tf.nn.relu6(tf.nn.conv2d(x, W, 1, "SAME") + 0.5)


@tf.function
def dense(x):
    return tf.nn.relu(tf.matmul(x, D) + 0.25)


@tf.function
def add(x, y):
    return x + y


CASES = {"conv": (conv, [spec([1, 8, 8, 3])]), "dense": (dense, [spec([None, 12])]),
         "add": (add, [spec([None, 4]), spec([None, 4])])}
MODES = [("int8", "float"), ("int8", "int8"), ("int8", "uint8"), ("int16", "float"),
         ("float16", "float"), ("dynamic", "float")]


@pytest.mark.parametrize("mode,io", MODES, ids=[f"{m}-{io}" for m, io in MODES])
@pytest.mark.parametrize("case", sorted(CASES))
def test_quantized_model(tmp_path, case, mode, io):
    fn, specs = CASES[case]
    check_tflite(tmp_path, fn, specs, mode=mode, io=io, name=f"{case}_{io}")


def _optimized_ops(path, tmp_path):
    options = ort.SessionOptions()
    options.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    return [n.op_type for n in onnx.load(options.optimized_model_filepath).graph.node]


@pytest.mark.parametrize("case,io,kernels", [
    ("conv", "float", {"QLinearConv"}), ("conv", "uint8", {"QLinearConv"}),
    ("conv", "int8", {"QLinearConv"}),
    ("dense", "float", {"QGemm", "QLinearMatMul", "MatMulInteger"}),
    ("add", "int8", {"QLinearAdd"})])
def test_onnxruntime_runs_int8_kernels(tmp_path, case, io, kernels):
    """The full-int8 model as tf2ir writes it: int8 weights read through DequantizeLinear
    (not folded into float), and onnxruntime's optimized graph computes with an int8 kernel.
    An int8 graph input/output too (onnxruntime on x86 fuses int8 activations only from
    Q -> DQ pairs it turns to uint8: the qdq_io pass gives them theirs), its results within
    a step of the interpreter."""
    fn, specs = CASES[case]
    path = tmp_path / f"{case}.tflite"
    path.write_bytes(to_tflite(fn, specs, "int8", io))
    onnx_path = str(tmp_path / f"{case}.onnx")
    convert_tflite(str(path), onnx_path)
    model = onnx.load(onnx_path)
    initializers = {i.name: i for i in model.graph.initializer}
    if case != "add":      # the weight: an int8 initializer through DequantizeLinear
        weights = [n for n in model.graph.node if n.op_type == "DequantizeLinear"
                   and n.input[0] in initializers
                   and initializers[n.input[0]].data_type == onnx.TensorProto.INT8]
        assert weights, [n.op_type for n in model.graph.node]
    producers = {o: n.op_type for n in model.graph.node for o in n.output}
    for node in model.graph.node:      # DequantizeLinear feeds the op itself (qdq_hoist: the
        if node.op_type in ("Conv", "Gemm"):    # layout's Transpose above it)
            assert [producers.get(i) for i in node.input] == ["DequantizeLinear"] * len(node.input)
    ops = _optimized_ops(onnx_path, tmp_path)
    assert kernels & set(ops), ops
    assert "Conv" not in ops and "Gemm" not in ops, ops
    if case == "dense":   # the int32 bias is the Gemm's C (qdq rewrite 3): no float Add left
        assert "Add" not in ops, ops
    if io == "int8":
        (tmp_path / "check").mkdir()
        check_tflite(tmp_path / "check", fn, specs, mode="int8", io=io, name=f"{case}_kernels")


def test_int16_at_opset_21_is_quantize_linear(tmp_path):
    """16x8: int16 activations are ONNX QuantizeLinear/DequantizeLinear at opset 21; below it
    (tf2ir's default) the same arithmetic in float (Round, Clip, Cast), both within a step."""
    fn, specs = CASES["conv"]
    check_tflite(tmp_path, fn, specs, mode="int16", name="conv_opset21", opset=21)
    model = onnx.load(str(tmp_path / "conv_opset21_int16.onnx"))
    assert model.opset_import[0].version == 21
    zero_points = [i for i in model.graph.initializer if i.data_type == onnx.TensorProto.INT16]
    assert zero_points and any(n.op_type == "QuantizeLinear" for n in model.graph.node)
    default = tmp_path / "default"
    default.mkdir()
    check_tflite(default, fn, specs, mode="int16", name="conv_default")
    ops = {n.op_type for n in onnx.load(str(default / "conv_default_int16.onnx")).graph.node}
    assert "QuantizeLinear" not in ops and {"Round", "Clip"} <= ops


def test_float16_weights_are_dequantized_once(tmp_path):
    """The float16 flavour's weights (float16 constants through DEQUANTIZE) are float32
    initializers in the written model: no Cast runs per inference."""
    fn, specs = CASES["conv"]
    check_tflite(tmp_path, fn, specs, mode="float16", name="conv_f16")
    model = onnx.load(str(tmp_path / "conv_f16_float16.onnx"))
    assert "Cast" not in {n.op_type for n in model.graph.node}
    assert all(i.data_type != onnx.TensorProto.FLOAT16 for i in model.graph.initializer)


# -- the IR ops against ONNX's definition ---------------------------------------------------------
@pytest.mark.parametrize("dtype,axis", [("int8", None), ("uint8", None), ("int8", 1),
                                        ("uint8", 0)])
def test_kernels_match_onnx_reference(dtype, axis):
    from onnx import helper, numpy_helper
    from onnx.reference import ReferenceEvaluator
    from tf2ir.opp.quantize_linear import dequantize, quantize
    x = RNG.uniform(-3, 3, (3, 4, 5)).astype(np.float32)
    x[0, 0, :3] = [0.25, 0.75, -0.25]          # ties, at scale 0.5: half to even
    size = 1 if axis is None else x.shape[axis]
    scale = np.float32(0.5) if axis is None else RNG.uniform(0.01, 0.5, size).astype(np.float32)
    low = 0 if dtype == "uint8" else -10
    zero = np.array(RNG.integers(low, 10, size) if axis is not None else 3, dtype)
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], axis=axis or 0),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=axis or 0)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", 1, None)],
                              [helper.make_tensor_value_info("q", 0, None),
                               helper.make_tensor_value_info("y", 1, None)],
                              [numpy_helper.from_array(np.asarray(scale), "s"),
                               numpy_helper.from_array(zero, "z")])
    q_ref, y_ref = ReferenceEvaluator(helper.make_model(graph)).run(None, {"x": x})
    q = quantize(x, scale, zero.astype(np.int64), axis, dtype)
    np.testing.assert_array_equal(q, q_ref)
    np.testing.assert_array_equal(dequantize(q, scale, zero.astype(np.int64), axis), y_ref)
