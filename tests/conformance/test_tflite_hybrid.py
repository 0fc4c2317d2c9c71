"""TFLite's hybrid (dynamic-range) kernels against the LiteRT interpreter: FULLY_CONNECTED
(asymmetric and symmetric run-time quantization of the input rows), CONV_2D (SAME, strides,
VALID with dilations, bias and fused activation) and DEPTHWISE_CONV_2D (multiplier 1 and 2).

TFLiteConverter's dynamic mode (Optimize.DEFAULT, no representative data) quantizes weights of
1,024 elements or more to int8 (per-channel scales) and leaves the activations float; TFLite's
kernels then quantize the input to int8 at run time. tf2ir maps those operators to HybridMatMul /
HybridConv2D (opp/hybrid.py), which do the same: the written ONNX holds MatMulInteger /
ConvInteger and no float MatMul / Conv.

Tolerances. Against TFLite's own kernels (the interpreter without its default XNNPACK
delegate) the outputs are bit-exact: the test asserts equality. Against the default
interpreter (XNNPACK runs FULLY_CONNECTED and CONV_2D: the same integers, its float rescale in
another order) they agree within atol 5e-5 + rtol 1e-5 (the largest difference seen is 1.1e-5 on
outputs of about +-20); the float computation tf2ir did before (the dequantized weights times
the float input) differs by 0.05-0.3 on these cases and fails them.
"""

import os

import numpy as np
import pytest

from tests.conformance.tflite_harness import (
    RESULTS, SEED, check_tflite, convert_tflite, sample, spec, to_tflite,
)
from tests.conformance.test_tflite_nn import OP, with_option

tf = pytest.importorskip("tensorflow")
ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")

TFLITE_TESTED = {
    "FULLY_CONNECTED": ("dynamic",),
    "CONV_2D": ("dynamic",),
    "DEPTHWISE_CONV_2D": ("dynamic",),
}

TIGHT = {"atol": 5e-5, "rtol": 1e-5}
RNG = np.random.default_rng(26)
F32 = np.float32
FW = RNG.standard_normal((64, 40)).astype(F32)            # 2,560 weights: quantized
FB = RNG.standard_normal(40).astype(F32)
CW = RNG.standard_normal((3, 3, 16, 24)).astype(F32)      # 3,456
CB = RNG.standard_normal(24).astype(F32)
DW = RNG.standard_normal((3, 3, 128, 1)).astype(F32)      # 1,152
DW2 = RNG.standard_normal((3, 3, 64, 2)).astype(F32)      # 1,152, multiplier 2


@tf.function
def fc_relu(x):
    return tf.nn.relu(tf.matmul(x, FW) + FB)


@tf.function
def conv_same_relu6(x):
    return tf.nn.relu6(tf.nn.conv2d(x, CW, 1, "SAME") + CB)


@tf.function
def conv_stride2(x):
    return tf.nn.conv2d(x, CW, 2, "SAME")


@tf.function
def conv_valid_dilated(x):
    return tf.nn.conv2d(x, CW, 1, "VALID", dilations=2) + CB


@tf.function
def depthwise(x):
    return tf.nn.depthwise_conv2d(x, DW, [1, 1, 1, 1], "SAME")


@tf.function
def depthwise_multiplier2(x):
    return tf.nn.relu(tf.nn.depthwise_conv2d(x, DW2, [1, 2, 2, 1], "SAME"))


CASES = {
    "fc_relu": (fc_relu, [None, 64], "MatMulInteger"),
    "conv_same_relu6": (conv_same_relu6, [None, 8, 8, 16], "ConvInteger"),
    "conv_stride2": (conv_stride2, [None, 9, 9, 16], "ConvInteger"),
    "conv_valid_dilated": (conv_valid_dilated, [None, 9, 9, 16], "ConvInteger"),
    "depthwise": (depthwise, [None, 6, 6, 128], "ConvInteger"),
    "depthwise_multiplier2": (depthwise_multiplier2, [None, 7, 7, 64], "ConvInteger"),
}
FLOAT_PRODUCT = {"MatMulInteger": {"MatMul", "Gemm"}, "ConvInteger": {"Conv"}}


def _onnx_ops(path):
    return {node.op_type for node in onnx.load(path).graph.node}


def _builtin_kernels(data, x):
    """The model run by TFLite's own kernels (no XNNPACK delegate)."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    it = Interpreter(model_content=data,
                     experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    index = it.get_input_details()[0]["index"]
    it.resize_tensor_input(index, x.shape)
    it.allocate_tensors()
    it.set_tensor(index, x)
    it.invoke()
    return it.get_tensor(it.get_output_details()[0]["index"])


def _within_ulps(got, want, ulps):
    """|got - want| <= `ulps` float32 ulps of the largest output (the rescale's rounding, with
    the bias added after it); one integer off in the product is worth about 1e-4 here, tens of
    those ulps."""
    bound = ulps * np.spacing(np.abs(want).max())
    assert got.shape == want.shape and np.abs(got - want).max() <= bound, \
        (np.abs(got - want).max(), bound)


def _convert(tmp_path, name, data):
    path = os.path.join(str(tmp_path), f"{name}.tflite")
    with open(path, "wb") as f:
        f.write(data)
    onnx_path = path[:-len(".tflite")] + ".onnx"
    convert_tflite(path, onnx_path)
    return onnx_path


def _bit_exact(tmp_path, name, data, shape, integer_op, maxulp=0):
    onnx_path = _convert(tmp_path, name, data)
    ops = _onnx_ops(onnx_path)
    assert integer_op in ops and not ops & FLOAT_PRODUCT[integer_op], sorted(ops)
    session = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(SEED + 2)
    for batch in (1, 3):
        x = rng.uniform(-2, 2, [batch, *shape[1:]]).astype(F32)
        x[-1] = np.abs(x[-1])                  # a row/image without negatives: zero point -128
        if batch > 1:
            x[0] = 0                           # a zero row/image: scale 1, zero point 0
        got = session.run(None, {session.get_inputs()[0].name: x})[0]
        want = _builtin_kernels(data, x)
        if maxulp:
            _within_ulps(got, want, maxulp)
            assert batch > 1 or np.array_equal(got, want), f"{name}: batch 1 not bit-exact"
        else:
            np.testing.assert_array_equal(got, want, err_msg=f"{name} batch {batch}")


@pytest.mark.parametrize("name", list(CASES))
def test_hybrid_against_interpreter(tmp_path, name):
    """Within TIGHT of the default interpreter (XNNPACK); the written ONNX multiplies in int8."""
    fn, shape, integer_op = CASES[name]
    check_tflite(tmp_path, fn, [spec(shape)], mode="dynamic", name=name, **TIGHT)
    ops = _onnx_ops(os.path.join(str(tmp_path), f"{name}_dynamic.onnx"))
    assert integer_op in ops and not ops & FLOAT_PRODUCT[integer_op], sorted(ops)


@pytest.mark.parametrize("name", list(CASES))
def test_hybrid_bit_exact(tmp_path, name):
    """TFLite's own hybrid kernels' outputs, zero and all-positive inputs included: bit-equal
    for a batch of 1; within 2 float32 ulps for a batch of 3 (TFLite's optimized kernels
    rescale some rows/images of a batch in another float order; an integer off by one would
    be tens of ulps)."""
    fn, shape, integer_op = CASES[name]
    _bit_exact(tmp_path, name, to_tflite(fn, [spec(shape)], "dynamic"), shape, integer_op, 2)


def _operator(data, op_type):
    """(operator, tensors) of the first `op_type` operator of a .tflite's bytes."""
    from tf2ir.parser.tflite_model import parse_tflite
    graph = parse_tflite(data, "model").subgraphs[0]
    return [op for op in graph.operators if op.op_type == op_type][0], graph.tensors


@pytest.mark.parametrize("asymmetric", [True, False])
def test_fully_connected_quantize_inputs(tmp_path, asymmetric):
    """asymmetric_quantize_inputs (FullyConnectedOptions field 3): the converter writes true;
    false (patched in place) quantizes each row symmetrically in [-127, 127], as TFLite's own
    kernel does (compared with it: the default interpreter's XNNPACK delegate quantizes rows
    asymmetrically whatever the option says, 0.13 away on this case)."""
    data = to_tflite(fc_relu, [spec([None, 64])], "dynamic")
    if not asymmetric:
        data = with_option(data, OP.FULLY_CONNECTED, 10, "<B", 0)
    assert _operator(data, "FULLY_CONNECTED")[0].options["asymmetric_quantize_inputs"] == asymmetric
    name = f"fc_{'asymmetric' if asymmetric else 'symmetric'}"
    _bit_exact(tmp_path, name, data, [None, 64], "MatMulInteger", maxulp=2)


@pytest.mark.parametrize("op_type", ["FULLY_CONNECTED", "CONV_2D", "DEPTHWISE_CONV_2D"])
def test_kernels(op_type):
    """The IR ops' numpy kernels (constant folding, tf2ir.InferenceSession) are TFLite's
    hybrid kernels too: bit-equal on a converted model's weights."""
    from tf2ir.opp import hybrid
    fn, shape = {"FULLY_CONNECTED": (fc_relu, [None, 64]),
                 "CONV_2D": (conv_stride2, [None, 9, 9, 16]),
                 "DEPTHWISE_CONV_2D": (depthwise_multiplier2, [None, 7, 7, 64])}[op_type]
    rng = np.random.default_rng(3)
    x = rng.uniform(-2, 2, [3, *shape[1:]]).astype(F32)
    x[1] = np.abs(x[1])
    for asymmetric in ((True, False) if op_type == "FULLY_CONNECTED" else (True,)):
        data = to_tflite(fn, [spec(shape)], "dynamic")
        if not asymmetric:
            data = with_option(data, OP.FULLY_CONNECTED, 10, "<B", 0)
        op, tensors = _operator(data, op_type)
        w, b = tensors[op.inputs[1]], tensors[op.inputs[2]]
        for batch in (x[:1], x):
            args = (batch, np.asarray(w.data), np.asarray(b.data))
            if op_type == "FULLY_CONNECTED":
                got = hybrid._matmul_kernel(*args, weight_scale=w.quantization.scale,
                                            asymmetric=asymmetric)
            else:
                stride = op.options["stride_h"]
                got = hybrid._conv_kernel(*args, strides=[1, stride, stride, 1], padding="SAME",
                                          depthwise=op_type == "DEPTHWISE_CONV_2D",
                                          weight_scale=w.quantization.scale)
            if op.options["fused_activation_function"] == "RELU":
                got = np.maximum(got, 0)
            assert got.dtype == F32
            want = _builtin_kernels(data, batch)
            if len(batch) == 1:
                np.testing.assert_array_equal(got, want)
            _within_ulps(got, want, 2)


def _tie_rows(rng, count, size, low):
    """Rows over [low, low + 3.984375] (scale 1/64, inverse 64: zero point 0 for low -2, -64
    for low -1) whose values times the inverse are halves: every one a rounding tie."""
    x = ((rng.integers(-120, 120, (count, size)) + 0.5) / 64).astype(F32)
    x = np.clip(x, low, low + 3.9)
    x[:, 0], x[:, 1] = low, low + 3.984375
    return x


def test_rounding(tmp_path):
    """Halves round away from zero before the zero point is added (a float rounding of the
    sum, or halves to even, fails every row here), and the product rounds exactly (image 2 of
    this conv batch has x * inverse 126.4999994, 126.5 in float32: TFLite gives 126 - 1)."""
    rng = np.random.default_rng(11)
    data = to_tflite(fc_relu, [spec([None, 64])], "dynamic")
    session = ort.InferenceSession(_convert(tmp_path, "ties", data),
                                   providers=["CPUExecutionProvider"])
    x = np.concatenate([_tie_rows(rng, 8, 64, -2.0), _tie_rows(rng, 8, 64, -1.0)])
    _within_ulps(session.run(None, {session.get_inputs()[0].name: x})[0],
                 _builtin_kernels(data, x), 2)
    data = to_tflite(conv_stride2, [spec([None, 9, 9, 16])], "dynamic")
    session = ort.InferenceSession(_convert(tmp_path, "exact", data),
                                   providers=["CPUExecutionProvider"])
    x = np.random.default_rng(3).uniform(-2, 2, (3, 9, 9, 16)).astype(F32)
    x[1] = np.abs(x[1])
    _within_ulps(session.run(None, {session.get_inputs()[0].name: x})[0],
                 _builtin_kernels(data, x), 2)


# -- --quantized qdq: the fast forms --------------------------------------------------------------
def _qdq_onnx(tmp_path, name, data):
    """The .tflite bytes converted with quantized="qdq" (the API's --quantized qdq) → ONNX path."""
    import tf2ir
    path = os.path.join(str(tmp_path), f"{name}.tflite")
    with open(path, "wb") as f:
        f.write(data)
    onnx_path = path[:-len(".tflite")] + "_qdq.onnx"
    tf2ir.convert(path, quantized="qdq", quiet=True).save(onnx_path)
    return onnx_path


def _doubles(path):
    """Every float64 in an ONNX model: initializers, Cast targets and inferred value types."""
    model = onnx.shape_inference.infer_shapes(onnx.load(path))
    double = onnx.TensorProto.DOUBLE
    found = [t.name for t in model.graph.initializer if t.data_type == double]
    found += [n.name for n in model.graph.node if n.op_type == "Cast" and
              any(a.name == "to" and a.i == double for a in n.attribute)]
    found += [v.name for v in model.graph.value_info if v.type.tensor_type.elem_type == double]
    return found


def _input_steps(x, per):
    """TFLite's quantization step of each row (FC) or image (conv) of `x`: (max - min) / 255
    of the range widened to hold 0."""
    flat = x.reshape(len(x), -1) if per == "image" else x.reshape(-1, x.shape[-1])
    return (np.maximum(flat.max(1), 0) - np.minimum(flat.min(1), 0)) / 255


def _qdq_bound(data, x, op_type):
    """Per output element, the most the qdq form can differ from TFLite's hybrid kernel:
    step * sum |w| over the output channel's dequantized weights, `step` the largest step
    either quantization of the input uses (each input element is off by at most half a step in
    each; the conv form's float product is off by TFLite's half step alone)."""
    op, tensors = _operator(data, op_type)
    w = tensors[op.inputs[1]]
    scale = np.asarray(w.quantization.scale, F32)
    weights = np.asarray(w.data, np.float64)
    if op_type == "DEPTHWISE_CONV_2D":
        per_channel = np.abs(weights).sum(axis=(0, 1, 2)) * scale
    else:
        per_channel = np.abs(weights).reshape(len(weights), -1).sum(1) * scale
    per = "row" if op_type == "FULLY_CONNECTED" else "image"
    return _input_steps(x, per).max() * per_channel


QDQ_CASES = {"fc_relu": "FULLY_CONNECTED", "conv_same_relu6": "CONV_2D",
             "conv_stride2": "CONV_2D", "conv_valid_dilated": "CONV_2D",
             "depthwise": "DEPTHWISE_CONV_2D", "depthwise_multiplier2": "DEPTHWISE_CONV_2D"}


@pytest.mark.parametrize("name", list(QDQ_CASES))
def test_qdq_within_quantization_bound(tmp_path, name):
    """--quantized qdq: FULLY_CONNECTED as DynamicQuantizeLinear + MatMulInteger (one scale for
    the whole input), convolutions as float Conv over the dequantized filter. Against TFLite's
    own kernels within the input-quantization bound of _qdq_bound (+ rtol 1e-5 for the float
    rescale); a single FC row quantizes as TFLite does: within TIGHT. The product of the float
    input and the float weights (no input quantization at all) would be in the bound too: the
    bound catches a wrong layout, scale or zero point (whole units), not that."""
    fn, shape, _ = CASES[name]
    op_type = QDQ_CASES[name]
    data = to_tflite(fn, [spec(shape)], "dynamic")
    session = ort.InferenceSession(_qdq_onnx(tmp_path, name, data),
                                   providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(SEED + 5)
    for batch in (1, 3):
        x = rng.uniform(-2, 2, [batch, *shape[1:]]).astype(F32)
        x[-1] = np.abs(x[-1])
        got = session.run(None, {session.get_inputs()[0].name: x})[0]
        want = _builtin_kernels(data, x)
        error = np.abs(got - want)
        bound = _qdq_bound(data, x, op_type) + 1e-5 * np.abs(want)
        assert np.all(error <= bound), (name, batch, float(error.max()), float(bound.min()))
        if op_type == "FULLY_CONNECTED" and batch == 1:
            np.testing.assert_allclose(got, want, **TIGHT)


QDQ_FORMS = {  # op types the written ONNX must hold / must not hold, per product
    "FULLY_CONNECTED": ({"DynamicQuantizeLinear", "MatMulInteger"}, {"MatMul", "Gemm"}),
    "CONV_2D": ({"Conv"}, {"ConvInteger", "DynamicQuantizeLinear"}),
    "DEPTHWISE_CONV_2D": ({"Conv"}, {"ConvInteger", "DynamicQuantizeLinear"}),
}


CW2 = RNG.standard_normal((1, 1, 24, 64)).astype(F32)      # 1,536
DW3 = RNG.standard_normal((3, 3, 64, 2)).astype(F32)       # 1,152


@tf.function
def conv_chain(x):
    y = tf.nn.relu6(tf.nn.conv2d(x, CW, 1, "SAME") + CB)
    y = tf.nn.relu(tf.nn.conv2d(y, CW2, 1, "SAME"))
    return tf.nn.depthwise_conv2d(y, DW3, [1, 1, 1, 1], "SAME")



def test_qdq_forms(tmp_path):
    """The qdq forms' ONNX: FULLY_CONNECTED reads DynamicQuantizeLinear into MatMulInteger,
    which onnxruntime's optimized graph fuses into one DynamicQuantizeMatMul; convolutions are
    float Convs whose filter is a float32 initializer; no float64 anywhere (the exact form has
    it: the check can fail); three hybrid convolutions in a row keep NCHW between them (the
    layout pass cancels the Transposes: one in, one out)."""
    for name, (fn, shape) in {"fc_relu": (fc_relu, [None, 64]),
                              "conv_chain": (conv_chain, [None, 8, 8, 16])}.items():
        data = to_tflite(fn, [spec(shape)], "dynamic")
        exact = _convert(tmp_path, name, data)
        assert _doubles(exact), "the exact form computes the parameters in float64"
        integer = [n.op_type for n in onnx.load(exact).graph.node if n.op_type.endswith("Integer")]
        assert len(integer) == (3 if name == "conv_chain" else 1), integer     # all hybrid
        path = _qdq_onnx(tmp_path, name, data)
        model = onnx.load(path)
        ops = [node.op_type for node in model.graph.node]
        assert not _doubles(path), _doubles(path)
        op_types = [op.op_type for op in _operator_list(data)]
        for op_type in set(op_types) & set(QDQ_FORMS):
            held, absent = QDQ_FORMS[op_type]
            assert held <= set(ops) and not absent & set(ops), (op_type, sorted(set(ops)))
        initializers = {t.name: t for t in model.graph.initializer}
        for node in model.graph.node:
            if node.op_type == "Conv":
                assert initializers[node.input[1]].data_type == onnx.TensorProto.FLOAT
        if name == "conv_chain":
            assert op_types.count("CONV_2D") + op_types.count("DEPTHWISE_CONV_2D") == 3
            assert ops.count("Conv") == 3 and ops.count("Transpose") == 2, ops
        else:
            options = ort.SessionOptions()
            options.optimized_model_filepath = os.path.join(str(tmp_path), "optimized.onnx")
            ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
            fused = [n.op_type for n in onnx.load(options.optimized_model_filepath).graph.node]
            assert "DynamicQuantizeMatMul" in fused and "MatMulInteger" not in fused, fused


def _operator_list(data):
    from tf2ir.parser.tflite_model import parse_tflite
    return parse_tflite(data, "model").subgraphs[0].operators
