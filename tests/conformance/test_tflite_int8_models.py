"""Whole full-int8 models against the LiteRT interpreter, and the per-layer audit
(tools/tflite_audit.py) that finds where a converted model's int8 tensors leave the
interpreter's.

Single ops match the interpreter within a step (most bit-exact: test_tflite_quantize.py);
here several layers compound: a small CNN (CONV_2D -> DEPTHWISE_CONV_2D -> ADD -> MEAN ->
FULLY_CONNECTED -> SOFTMAX) and a tiny BERT-style encoder (FULLY_CONNECTED, BATCH_MATMUL,
SOFTMAX, layer norm, GELU) must stay within STEPS of the interpreter on their outputs; both
are bit-exact on the inputs drawn here. What remains between tf2ir's QDQ model and the
interpreter on larger models is TFLite's fixed-point double rounding (the accumulator scaled
to 2^-shift of a step, then rounded again), which onnxruntime's float requantization in
QLinearConv/QGemm cannot reproduce: rare 1-step differences that later layers amplify.
"""

import numpy as np
import pytest

from tests.conformance.tflite_harness import check_tflite, spec, to_tflite

tf = pytest.importorskip("tensorflow")

TFLITE_TESTED = {"CONV_2D": ("int8",), "DEPTHWISE_CONV_2D": ("int8",), "ADD": ("int8",),
                 "MEAN": ("int8",), "FULLY_CONNECTED": ("int8",), "SOFTMAX": ("int8",),
                 "BATCH_MATMUL": ("int8",), "GELU": ("int8",)}

STEPS = 1       # the outputs' bound, in quantization steps (measured: 0 on both models)

RNG = np.random.default_rng(2611)
W1 = RNG.standard_normal((3, 3, 3, 8)).astype(np.float32) * 0.4
DW = RNG.standard_normal((3, 3, 8, 1)).astype(np.float32) * 0.4
FC = RNG.standard_normal((8, 10)).astype(np.float32)
FB = RNG.standard_normal(10).astype(np.float32) * 0.1
WIDTH, HEADS = 16, 2
WQKV = RNG.standard_normal((3, WIDTH, WIDTH)).astype(np.float32) / 4
W_UP = RNG.standard_normal((WIDTH, 2 * WIDTH)).astype(np.float32) / 4
W_DOWN = RNG.standard_normal((2 * WIDTH, WIDTH)).astype(np.float32) / 4


@tf.function
def cnn(x):
    y = tf.nn.relu6(tf.nn.conv2d(x, W1, 1, "SAME") + 0.1)
    z = tf.nn.relu6(tf.nn.depthwise_conv2d(y, DW, [1, 1, 1, 1], "SAME"))
    pooled = tf.reduce_mean(y + z, axis=[1, 2])
    return tf.nn.softmax(tf.matmul(pooled, FC) + FB)


def _layer_norm(x):
    mean = tf.reduce_mean(x, -1, keepdims=True)
    var = tf.reduce_mean(tf.math.squared_difference(x, mean), -1, keepdims=True)
    return (x - mean) * tf.math.rsqrt(var + 1e-6)


@tf.function
def encoder(x):
    seq = tf.shape(x)[1]
    q, k, v = (tf.reshape(tf.matmul(x, WQKV[i]), [1, seq, HEADS, WIDTH // HEADS])
               for i in range(3))
    q, k, v = (tf.transpose(t, [0, 2, 1, 3]) for t in (q, k, v))
    scores = tf.nn.softmax(tf.matmul(q, k, transpose_b=True) / np.sqrt(WIDTH / HEADS))
    attended = tf.reshape(tf.transpose(tf.matmul(scores, v), [0, 2, 1, 3]), [1, seq, WIDTH])
    h = _layer_norm(x + attended)
    up = tf.nn.gelu(tf.matmul(h, W_UP))
    return _layer_norm(h + tf.matmul(up, W_DOWN))


MODELS = {"cnn": (cnn, [spec([1, 12, 12, 3])]), "encoder": (encoder, [spec([1, 8, WIDTH])])}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_int8_model_within_steps_of_interpreter(tmp_path, name):
    fn, specs = MODELS[name]
    outcome = check_tflite(tmp_path, fn, specs, mode="int8", steps=STEPS, name=f"{name}_model")
    assert outcome.worst <= STEPS


@pytest.fixture(scope="module")
def cnn_model(tmp_path_factory):
    fn, specs = MODELS["cnn"]
    path = tmp_path_factory.mktemp("audit") / "cnn.tflite"
    path.write_bytes(to_tflite(fn, specs, "int8"))
    return str(path)


def _tie_input(path):
    """An input every element of which quantizes to an exact half step (x = (k + 0.5) * s):
    the interpreter's QUANTIZE rounds fl(x * (1 / s)) half to even, onnxruntime's
    QuantizeLinear fl(x / s), so the two differ on a share of them."""
    from tf2ir.parser.tflite_model import read_tflite
    sg = read_tflite(path).subgraphs[0]
    quantize = next(op for op in sg.operators if op.op_type == "QUANTIZE")
    scale = np.float32(sg.tensors[quantize.outputs[0]].quantization.scale[0])
    k = np.random.default_rng(5).integers(-60, 60, (1, 12, 12, 3))
    name = sg.tensors[sg.inputs[0]].name
    return {name: ((k + 0.5) * scale).astype(np.float32)}


def test_audit_of_an_exact_model(cnn_model):
    """Every quantized operator output of the CNN is audited (its op types in the table) and
    equal to the interpreter's on a random input: no tensor differs, the output neither."""
    from tf2ir.tools.tflite_audit import audit_tflite, table
    audit = audit_tflite(cnn_model)
    types = {r["op_type"] for r in table(audit)}
    assert {"QUANTIZE", "CONV_2D", "DEPTHWISE_CONV_2D", "ADD", "MEAN", "FULLY_CONNECTED",
            "SOFTMAX"} <= types, types
    assert audit.consistent and not audit.missing
    assert all(r.differ == 0 for r in audit.rows), [r for r in audit.rows if r.differ]
    assert all(v == 0 for v in audit.outputs.values()), audit.outputs


def test_audit_tells_introduced_from_inherited(cnn_model):
    """On inputs of exact ties the QUANTIZE of the float input differs (introduced there: its
    input is the model's), and the CONV_2D reading it differs because of it (inherited)."""
    from tf2ir.tools.tflite_audit import audit_tflite, table
    audit = audit_tflite(cnn_model, _tie_input(cnn_model))
    first = {r.op_type: r for r in audit.rows}
    assert first["QUANTIZE"].differ and first["QUANTIZE"].introduced
    assert first["QUANTIZE"].worst == 1
    assert first["CONV_2D"].differ and not first["CONV_2D"].introduced
    rows = {r["op_type"]: r for r in table(audit)}
    assert rows["QUANTIZE"]["introduced"] == 1 and rows["CONV_2D"]["introduced"] == 0
    assert rows["CONV_2D"]["worst_inherited"] >= 1


def test_audit_command_line(cnn_model, tmp_path, capsys):
    """python -m tf2ir.tools.tflite_audit: the markdown table, --json, and an .npz of inputs."""
    import json
    from tf2ir.tools.tflite_audit import main
    assert main([cnn_model]) == 0
    text = capsys.readouterr().out
    assert "| CONV_2D | 1 | 0 | 0 |" in text and "debug run consistent: True" in text
    feeds = tmp_path / "ties.npz"
    np.savez(feeds, in0=next(iter(_tie_input(cnn_model).values())))
    assert main([cnn_model, "--inputs", str(feeds), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    quantize = next(r for r in report["table"] if r["op_type"] == "QUANTIZE")
    assert quantize["differ"] == 1 and quantize["introduced"] == 1
