"""TFLite's binary arithmetic (ADD, SUB, MUL, DIV with fused activations, FLOOR_DIV,
FLOOR_MOD, POW, MAXIMUM, MINIMUM, SQUARED_DIFFERENCE, ATAN2, ADD_N, BATCH_MATMUL) against the
LiteRT interpreter: each case is converted by TF's TFLiteConverter, the model is checked to
hold the op under test (the converter did not fold or rewrite it), then tf2ir's conversion
runs beside the interpreter."""

import os

import numpy as np
import pytest

from tests.conformance.tflite_harness import check_tflite, spec

tf = pytest.importorskip("tensorflow")

QUANTIZED = ("float", "dynamic", "int8")
TFLITE_TESTED = {
    "ADD": QUANTIZED, "SUB": QUANTIZED, "MUL": QUANTIZED, "DIV": ("float",),
    "FLOOR_DIV": ("float",), "FLOOR_MOD": ("float",), "POW": ("float",),
    "MAXIMUM": QUANTIZED, "MINIMUM": QUANTIZED, "SQUARED_DIFFERENCE": QUANTIZED,
    "ATAN2": ("float",), "ADD_N": ("float",), "BATCH_MATMUL": QUANTIZED,
}


def run_case(tmp_path, name, fn, specs, expect, mode="float", feeds=None, **kw):
    """check_tflite on `fn`, then a check that TF's converter put every op of `expect` into
    the model (the op under test is there, not folded away) and, in int8 mode, that each
    computes on int8 (TFLite's integer kernel is what tf2ir's QDQ model was compared with).
    Returns the model's operators."""
    from tf2ir.parser.tflite_model import read_tflite
    check_tflite(tmp_path, fn, specs, mode=mode, feeds=feeds, name=name, **kw)
    sg = read_tflite(os.path.join(str(tmp_path), f"{name}_{mode}.tflite")).subgraphs[0]
    ops = sorted({op.op_type for op in sg.operators})
    missing = [op for op in expect if op not in ops]
    assert not missing, f"{name}: the converter emitted {ops}, not {missing}"
    if mode == "int8":
        integer = {op.op_type for op in sg.operators
                   if any(i >= 0 and sg.tensors[i].dtype == "int8" for i in op.inputs)}
        assert set(expect) <= integer, f"{name}: {sorted(set(expect) - integer)} not on int8"
    return sg.operators


def away_from_zero(rng, shape, low=0.5, high=2.0, dtype=np.float32):
    """Values of either sign, |v| in [low, high): divisors that are never (nearly) zero."""
    signs = rng.choice([-1, 1], shape)
    return (signs * rng.uniform(low, high, shape)).astype(dtype)


F2 = [spec([None, 3]), spec([None, 3])]
ROW = [spec([None, 2, 3]), spec([3])]          # a row broadcast along the batch and rows
B = np.array([0.5, -1.0, 2.0], np.float32)     # a constant operand


def _binary_cases():
    return {
        # fused activations: NONE, RELU, RELU6, RELU_N1_TO_1 (folded from a clip)
        "add_relu": (lambda a, b: tf.nn.relu(a + b), ROW, ["ADD"]),
        "add_const": (lambda a: a + B, [spec([None, 2, 3])], ["ADD"]),
        "sub": (lambda a, b: a - b, ROW, ["SUB"]),
        "sub_relu6": (lambda a, b: tf.nn.relu6(b - a), ROW, ["SUB"]),
        "mul_relu_n1_to_1": (lambda a, b: tf.clip_by_value(a * b, -1.0, 1.0), F2, ["MUL"]),
        "mul_const": (lambda a: a * B, [spec([None, 2, 3])], ["MUL"]),
        "maximum": (lambda a, b: tf.maximum(a, b), ROW, ["MAXIMUM"]),
        "minimum": (lambda a, b: tf.minimum(a, b), ROW, ["MINIMUM"]),
        "squared_difference": (lambda a, b: tf.math.squared_difference(a, b), ROW,
                               ["SQUARED_DIFFERENCE"]),
        "batch_matmul": (lambda a, b: tf.matmul(a, b), [spec([None, 2, 3]), spec([None, 3, 4])],
                         ["BATCH_MATMUL"]),
    }


@pytest.mark.parametrize("mode", QUANTIZED)
@pytest.mark.parametrize("case", sorted(_binary_cases()))
def test_binary(tmp_path, case, mode):
    fn, specs, expect = _binary_cases()[case]
    operators = run_case(tmp_path, case, fn, specs, expect, mode)
    if case == "mul_relu_n1_to_1" and mode == "float":
        # the clip is fused into MUL's activation, so that activation is what is checked
        (mul,) = [op for op in operators if op.op_type == "MUL"]
        assert mul.options["fused_activation_function"] == "RELU_N1_TO_1"


def test_fused_activations_are_checked(tmp_path):
    """The float cases hold ADD with RELU and SUB with RELU6: the activations are exercised."""
    seen = set()
    for case in ("add_relu", "sub_relu6"):
        fn, specs, expect = _binary_cases()[case]
        operators = run_case(tmp_path, case, fn, specs, expect)
        seen |= {(op.op_type, op.options.get("fused_activation_function")) for op in operators}
    assert {("ADD", "RELU"), ("SUB", "RELU6")} <= seen


def test_batch_matmul_adjoint(tmp_path):
    """adj_x and adj_y both set: each operand's last two dims are swapped."""
    fn = lambda a, b: tf.matmul(a, b, adjoint_a=True, adjoint_b=True)   # noqa: E731
    operators = run_case(tmp_path, "bmm_adj", fn, [spec([None, 3, 2]), spec([None, 4, 3])],
                         ["BATCH_MATMUL"])
    (bmm,) = [op for op in operators if op.op_type == "BATCH_MATMUL"]
    assert bmm.options["adj_x"] and bmm.options["adj_y"]


def _division_feeds(dtype=np.float32):
    rng = np.random.default_rng(7)
    feeds = []
    for batch in (1, 3):
        if dtype == np.float32:
            a = rng.uniform(-4, 4, (batch, 3)).astype(dtype)
        else:
            a = rng.integers(-9, 10, (batch, 3)).astype(dtype)
        b = away_from_zero(rng, (batch, 3), 1 if dtype != np.float32 else 0.5, 4, dtype)
        feeds.append([a, b])
    return feeds


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_divisions(tmp_path, dtype):
    """DIV (true division for floats, truncating for int32), FLOOR_DIV and FLOOR_MOD with
    operands of both signs: the integers' quotients and remainders are exact."""
    fn = lambda a, b: (a / b if dtype == "float32" else tf.truncatediv(a, b),   # noqa: E731
                       tf.math.floordiv(a, b), tf.math.floormod(a, b))
    specs = [spec([None, 3], dtype), spec([None, 3], dtype)]
    run_case(tmp_path, f"divisions_{dtype}", fn, specs, ["DIV", "FLOOR_DIV", "FLOOR_MOD"],
             feeds=_division_feeds(np.dtype(dtype).type))


def test_pow_atan2_add_n(tmp_path):
    fn = lambda a, b: (tf.pow(a, b), tf.math.atan2(a - 1.0, b), tf.add_n([a, b, a]))  # noqa: E731
    run_case(tmp_path, "pow_atan2_add_n", fn, F2, ["POW", "ATAN2", "ADD_N"], low=0.1, high=2.0)


def test_integer_arithmetic(tmp_path):
    """int32 ADD, SUB, MUL, MAXIMUM, MINIMUM and POW: exact."""
    fn = lambda a, b: (a + b, a - b, a * b, tf.maximum(a, b), tf.minimum(a, b),  # noqa: E731
                       tf.pow(a, b))
    run_case(tmp_path, "integer_arithmetic", fn, [spec([None, 3], "int32")] * 2,
             ["ADD", "SUB", "MUL", "MAXIMUM", "MINIMUM", "POW"])


GAMMA = np.array([1.5, 0.5, -1.0, 2.0], np.float32)
BETA = np.array([0.1, -0.2, 0.0, 0.3], np.float32)


def layer_norm_attention(x):
    """Keras LayerNormalization and a dot-product attention score as TF's converter emits
    them for a BERT-style encoder: MEAN, SQUARED_DIFFERENCE, RSQRT, MUL, SUB, ADD, NEG,
    BATCH_MATMUL."""
    mean = tf.reduce_mean(x, -1, keepdims=True)
    var = tf.reduce_mean(tf.math.squared_difference(x, mean), -1, keepdims=True)
    y = (x - mean) * tf.math.rsqrt(var + 1e-3) * GAMMA + BETA
    return tf.matmul(y, y, transpose_b=True) * 0.5, -y


@pytest.mark.parametrize("mode", QUANTIZED)
def test_layer_norm_attention(tmp_path, mode):
    expect = ["MEAN", "SQUARED_DIFFERENCE", "RSQRT", "MUL", "BATCH_MATMUL"]
    run_case(tmp_path, "layer_norm_attention", layer_norm_attention, [spec([None, 3, 4])],
             expect, mode)
