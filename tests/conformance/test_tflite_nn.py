"""TFLite NN ops against the LiteRT interpreter: FULLY_CONNECTED (bias, fused activation,
keep_num_dims, an input of rank 3 flattened), SOFTMAX (beta), LOG_SOFTMAX, the activations,
PRELU, GELU, L2_NORMALIZATION, LOCAL_RESPONSE_NORMALIZATION.

Ops or options TF's converter never writes (RELU_0_TO_1, SOFTMAX's beta other than 1, a rank-3
FULLY_CONNECTED input without keep_num_dims) are reached by patching a converted model's
flatbuffer in place (`with_opcode`, `with_option`): the interpreter runs the patched model as
the reference, so the mapping of that op or option is what the case checks."""

import os
import struct

import numpy as np
import pytest

from tests.conformance.tflite_harness import (
    RESULTS, SEED, check_tflite, convert_tflite, sample, spec, to_tflite,
)

tf = pytest.importorskip("tensorflow")
tflite = pytest.importorskip("tflite")

TFLITE_TESTED = {
    "FULLY_CONNECTED": ("float", "dynamic", "int8"),
    "SOFTMAX": ("float", "dynamic", "int8"),
    "LOG_SOFTMAX": ("float", "int8"),
    "RELU": ("float", "dynamic", "int8"),
    "RELU6": ("float", "dynamic", "int8"),
    "RELU_N1_TO_1": ("float", "dynamic", "int8"),
    "RELU_0_TO_1": ("float",),
    "LOGISTIC": ("float", "dynamic", "int8"),
    "TANH": ("float", "dynamic", "int8"),
    "HARD_SWISH": ("float", "dynamic", "int8"),
    "LEAKY_RELU": ("float", "dynamic", "int8"),
    "ELU": ("float", "dynamic", "int8"),
    "PRELU": ("float", "int8"),
    "GELU": ("float",),
    "L2_NORMALIZATION": ("float",),
    "LOCAL_RESPONSE_NORMALIZATION": ("float",),
}

RNG = np.random.default_rng(5)
# Dynamic-range quantization leaves weights under 1,024 elements float: these have more.
FW = RNG.standard_normal((64, 17)).astype(np.float32)
FB = RNG.standard_normal(17).astype(np.float32)
FW3 = RNG.standard_normal((48, 24)).astype(np.float32)
MODES = ["float", "dynamic", "int8"]
# TFLite's hybrid (dynamic-range) FULLY_CONNECTED quantizes its input to int8 per row at run
# time; tf2ir's HybridMatMul does the same (tests/conformance/test_tflite_hybrid.py): the same
# integers, the rescale within a few float32 ulps of XNNPACK's (the float product with the
# dequantized weights was 0.1 away).
HYBRID = {"atol": 5e-5, "rtol": 1e-5}


def tolerance(mode):
    return HYBRID if mode == "dynamic" else {}
OP = tflite.BuiltinOperator


# -- patching a converted model's flatbuffer in place ---------------------------------------------
def _model(buf):
    return tflite.Model.GetRootAsModel(buf, 0)


def with_opcode(data: bytes, old: int, new: int) -> bytes:
    """`data` with every operator code `old` made `new` (both code fields rewritten)."""
    buf = bytearray(data)
    model, found = _model(buf), False
    for i in range(model.OperatorCodesLength()):
        code = model.OperatorCodes(i)
        if code.BuiltinCode() != old:
            continue
        tab = code._tab
        deprecated, full = tab.Offset(4), tab.Offset(10)
        assert deprecated and full, "the converter wrote no builtin_code field to patch"
        struct.pack_into("<b", buf, tab.Pos + deprecated, min(new, 127))
        struct.pack_into("<i", buf, tab.Pos + full, new)
        found = True
    assert found, f"no operator code {old}"
    return bytes(buf)


def with_option(data: bytes, op_code: int, slot: int, fmt: str, value) -> bytes:
    """`data` with field `slot` (vtable offset: 4 + 2 * field index) of the builtin options of
    every `op_code` operator set to `value` (struct format `fmt`); the field must be stored."""
    buf = bytearray(data)
    model, found = _model(buf), False
    graph = model.Subgraphs(0)
    for j in range(graph.OperatorsLength()):
        op = graph.Operators(j)
        if model.OperatorCodes(op.OpcodeIndex()).BuiltinCode() != op_code:
            continue
        table = op.BuiltinOptions()
        offset = table.Offset(slot)
        assert offset, "the option is not stored (its default): nothing to patch"
        struct.pack_into(fmt, buf, table.Pos + offset, value)
        found = True
    assert found, f"no operator {op_code}"
    return bytes(buf)


def check_patched(tmp_path, fn, specs, patch, name, batches=(1, 3), atol=None):
    """check_tflite for the float model of `fn` rewritten by `patch(bytes) -> bytes`."""
    from tests.conformance.tflite_harness_run import compare_runs
    path = os.path.join(str(tmp_path), f"{name}.tflite")
    with open(path, "wb") as f:
        f.write(patch(to_tflite(fn, specs)))
    onnx_path = path[:-len(".tflite")] + ".onnx"
    convert_tflite(path, onnx_path)
    rng = np.random.default_rng(SEED + 1)
    feeds = [[sample(s, rng, batch=b) for s in specs] for b in batches]
    outcome = compare_runs(path, onnx_path, feeds, "float", 1, atol, None, name)
    RESULTS.append(outcome)
    return outcome


# -- FULLY_CONNECTED ------------------------------------------------------------------------------
@tf.function
def fc_bias_relu(x):
    return tf.nn.relu(tf.matmul(x, FW) + FB)


@tf.function
def fc_rank3(x):
    return tf.matmul(x, FW3)


@pytest.mark.parametrize("mode", MODES)
def test_fully_connected(tmp_path, mode):
    check_tflite(tmp_path, fc_bias_relu, [spec([None, 64])], mode=mode, **tolerance(mode))


@pytest.mark.parametrize("mode", MODES)
def test_fully_connected_keep_num_dims(tmp_path, mode):
    check_tflite(tmp_path, fc_rank3, [spec([None, 4, 48])], mode=mode, **tolerance(mode))


def test_fully_connected_flattens(tmp_path):
    """keep_num_dims false: TFLite flattens the [b, 4, 48] input to [b * 4, 48] rows."""
    def patch(data):     # FullyConnectedOptions.keep_num_dims: field 2
        return with_option(data, OP.FULLY_CONNECTED, 8, "<B", 0)
    check_patched(tmp_path, fc_rank3, [spec([None, 4, 48])], patch, "fc_flatten")


# -- SOFTMAX, LOG_SOFTMAX --------------------------------------------------------------------------
@tf.function
def softmax(x):
    return tf.nn.softmax(x)


@tf.function
def log_softmax(x):
    return tf.nn.log_softmax(x)


@pytest.mark.parametrize("mode", MODES)
def test_softmax(tmp_path, mode):
    check_tflite(tmp_path, softmax, [spec([None, 3, 6])], mode=mode)


def test_softmax_beta(tmp_path):
    def patch(data):     # SoftmaxOptions.beta: field 0
        return with_option(data, OP.SOFTMAX, 4, "<f", 0.375)
    check_patched(tmp_path, softmax, [spec([None, 3, 6])], patch, "softmax_beta")


@pytest.mark.parametrize("mode", ["float", "int8"])
def test_log_softmax(tmp_path, mode):
    check_tflite(tmp_path, log_softmax, [spec([None, 3, 6])], mode=mode)


# -- activations --------------------------------------------------------------------------------
def relu(x):
    return tf.nn.relu(x)


def relu6(x):
    return tf.nn.relu6(x)


def relu_n1_to_1(x):
    return tf.clip_by_value(x, -1.0, 1.0)


def logistic(x):
    return tf.sigmoid(x)


def tanh(x):
    return tf.tanh(x)


def hard_swish(x):
    return x * tf.nn.relu6(x + 3.0) / 6.0


def leaky_relu(x):
    return tf.nn.leaky_relu(x, 0.3)


def elu(x):
    return tf.nn.elu(x)


ACTIVATIONS = [relu, relu6, relu_n1_to_1, logistic, tanh, hard_swish, leaky_relu, elu]


@tf.function
def all_activations(x):
    return [f(x) for f in ACTIVATIONS]


@pytest.mark.parametrize("fn", ACTIVATIONS, ids=lambda f: f.__name__)
def test_activation(tmp_path, fn):
    check_tflite(tmp_path, tf.function(fn), [spec([None, 4, 4, 3])], low=-4, high=4,
                 name=fn.__name__)


@pytest.mark.parametrize("mode", ["dynamic", "int8"])
def test_activations_quantized(tmp_path, mode):
    check_tflite(tmp_path, all_activations, [spec([None, 4, 4, 3])], mode=mode, low=-4, high=4)


def test_relu_0_to_1(tmp_path):
    check_patched(tmp_path, tf.function(relu), [spec([None, 4, 3])],
                  lambda data: with_opcode(data, OP.RELU, OP.RELU_0_TO_1), "relu_0_to_1")


PRELU = tf.keras.layers.PReLU(shared_axes=[1, 2])
PRELU.build([None, 4, 4, 3])
PRELU.set_weights([np.array([[[0.1, -0.2, 0.3]]], np.float32)])


@tf.function
def prelu(x):
    return PRELU(x)


@pytest.mark.parametrize("mode", ["float", "int8"])
def test_prelu(tmp_path, mode):
    check_tflite(tmp_path, prelu, [spec([None, 4, 4, 3])], mode=mode)


@tf.function
def gelu_tanh(x):
    return tf.nn.gelu(x, approximate=True)


@tf.function
def gelu_erf(x):
    return tf.nn.gelu(x, approximate=False)


@pytest.mark.parametrize("fn", [gelu_tanh, gelu_erf], ids=lambda f: f.__name__)
def test_gelu(tmp_path, fn):
    check_tflite(tmp_path, fn, [spec([None, 3, 8])], low=-4, high=4)


# -- normalizations ---------------------------------------------------------------------------------
@tf.function
def l2_normalize(x):
    return tf.math.l2_normalize(x, -1)


@tf.function
def l2_normalize_tiny(x):
    """Norms under TFLite's epsilon (1e-6): x / max(norm, 1e-6) is 0.1 x here."""
    return tf.math.l2_normalize(x * 1e-7, -1)


@tf.function
def lrn(x):
    return tf.nn.local_response_normalization(x, 2, 1.5, 0.5, 0.7)


@pytest.mark.parametrize("fn", [l2_normalize, l2_normalize_tiny], ids=lambda f: f.__name__)
def test_l2_normalization(tmp_path, fn):
    check_tflite(tmp_path, fn, [spec([None, 3, 5])])


def test_local_response_normalization(tmp_path):
    check_tflite(tmp_path, lrn, [spec([None, 3, 4, 7])])
