"""`--quantized qdq` (opp/quantize_qdq.py, ir/onnx/passes/qdq.py) against TensorFlow, op by op:
FakeQuantWithMinMaxArgs/Vars/VarsPerChannel and QuantizeAndDequantizeV2/V3/V4 become
QuantizeLinear/DequantizeLinear pairs whose results are within one quantization step of TF's
(each case says how many are bit-exact: ties round half up in TF, half to even in ONNX);
constant inputs (weights) become int8 initializers read through DequantizeLinear, TF's values
to the bit; what cannot be Q/DQ (num_bits other than 8, min/max computed at run time, a
range measured at run time) keeps the exact arithmetic, TF's to the bit, with a warning; and
the ONNX passes leave the form onnxruntime fuses (DequantizeLinear -> Conv, no Transpose or
bias Add between)."""

import logging
import os

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from tests.conformance.harness import spec
from tf2ir.ir.export import ExportOptions

tf = pytest.importorskip("tensorflow")
raw = tf.raw_ops


def convert(fn, specs, folder, quantized="qdq"):
    """Freeze `fn` over `specs`, convert it with `quantized` → (ONNX model, its path)."""
    from tf2ir.ir.onnx.compile import compile_to_file
    from tf2ir.parser.pipeline import convert_file
    from tf2ir.tools.models import freeze_function
    pb = os.path.join(folder, "op.pb")
    freeze_function(fn, list(specs), pb)
    graph, _ = convert_file(pb)
    path = os.path.join(folder, "op.onnx")
    compile_to_file(graph, path, model_name=pb, export=ExportOptions(quantized=quantized))
    return onnx.load(path), path


def run(path, inputs, names=("x0",)):
    """onnxruntime's outputs of the model at `path` fed `inputs` by `names` (TF's tracing
    may order a function's placeholders otherwise)."""
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return session.run(None, dict(zip(names, inputs)))


def op_types(model):
    return [n.op_type for n in model.graph.node]


def within_a_step(got, want, step, inside=None):
    """Assert |got - want| <= one step (per channel when `step` is a vector); return the
    share of bit-exact values (of those where `inside` holds, when given)."""
    step = np.broadcast_to(np.asarray(step, np.float32), want.shape)
    assert np.all(np.abs(got - want) <= step * (1 + 1e-5)), np.abs(got - want).max()
    same = got == want
    return float(np.mean(same if inside is None else same[inside]))


def data(seed=0, shape=(16, 40), scale=4.0):
    return np.random.default_rng(seed).normal(0, scale, shape).astype(np.float32)


def fake_quant_step(low, high, narrow=False):
    return (np.float32(high) - np.float32(low)) / np.float32(254 if narrow else 255)


# -- activations: Q/DQ pairs within one step ------------------------------------------------------
@pytest.mark.parametrize("narrow", [False, True])
@pytest.mark.parametrize("low,high", [(-5.3, 6.1), (0.0, 6.0), (-4.0, -0.5), (0.3, 3.0)])
def test_fake_quant_activation_within_one_step(tmp_path, low, high, narrow):
    x = data()
    fn = lambda x: [  # noqa: E731
        raw.FakeQuantWithMinMaxArgs(inputs=x, min=low, max=high, narrow_range=narrow),
        raw.FakeQuantWithMinMaxVars(inputs=x, min=tf.constant(low), max=tf.constant(high),
                                    narrow_range=narrow)]
    model, path = convert(fn, [spec(x.shape)], str(tmp_path))
    types = op_types(model)
    # (the two equal QuantizeLinear are one after CSE); the exact form's arithmetic is gone
    assert set(types) == {"QuantizeLinear", "DequantizeLinear"}
    zero_types = {i.data_type for i in model.graph.initializer if "zero_point" in i.name}
    assert zero_types == {onnx.TensorProto.INT8 if narrow else onnx.TensorProto.UINT8}
    want = fn(tf.constant(x))
    step = fake_quant_step(low, high, narrow)
    lowest = fn(tf.constant([[-1e6]]))[0].numpy()     # TF's nudged min
    inside = x >= lowest + step   # narrow_range: below its range ONNX saturates a step lower
    for got, w in zip(run(path, [x]), want):
        exact = within_a_step(got, w.numpy(), step, inside if narrow else None)
        assert exact > 0.99          # measured: 100% but for ties


def test_fake_quant_per_channel_activation(tmp_path):
    x = data(shape=(6, 5, 3))
    low, high = np.float32([-3.1, 0.0, -1]), np.float32([2.7, 4, 0.1])
    fn = lambda x: raw.FakeQuantWithMinMaxVarsPerChannel(  # noqa: E731
        inputs=x, min=tf.constant(low), max=tf.constant(high))
    model, path = convert(fn, [spec(x.shape)], str(tmp_path))
    quantize = [n for n in model.graph.node if n.op_type == "QuantizeLinear"]
    assert len(quantize) == 1 and onnx.helper.get_attribute_value(quantize[0].attribute[0]) == 2
    got, = run(path, [x])
    exact = within_a_step(got, fn(tf.constant(x)).numpy(), fake_quant_step(low, high))
    assert exact > 0.99


def test_fake_quant_ties_differ_by_one_step(tmp_path):
    """A value halfway between two steps: TF rounds it up, ONNX to the even step."""
    step = 1 / 64                                     # max 255 / 64: exact in binary
    x = np.float32([[2.5 * step, 3.5 * step, 1.0]])
    fn = lambda x: raw.FakeQuantWithMinMaxArgs(inputs=x, min=0.0, max=255 / 64)  # noqa: E731
    _, path = convert(fn, [spec(x.shape)], str(tmp_path))
    got, = run(path, [x])
    want = fn(tf.constant(x)).numpy()
    assert within_a_step(got, want, step) < 1.0
    np.testing.assert_array_equal(want, [[3 * step, 4 * step, 1.0]])     # half up
    np.testing.assert_array_equal(got, [[2 * step, 4 * step, 1.0]])      # half to even


def qdq_step(low, high, signed, narrow):
    """TF's step for 8 bits: the scale from the side of the range that fits."""
    q_min, q_max = (-128 + int(narrow), 127) if signed else (0, 255)
    with np.errstate(divide="ignore", invalid="ignore"):
        from_min = np.where(q_min * low > 0, q_min / low, np.inf)
        from_max = np.where(q_max * high > 0, q_max / high, np.inf)
    return np.float32(1 / np.minimum(from_min, from_max))


QDQ_CASES = [dict(), dict(signed_input=False), dict(narrow_range=True),
             dict(round_mode="HALF_UP"), dict(axis=1)]


@pytest.mark.parametrize("version,kw", [(v, k) for v in ("V2", "V3", "V4") for k in QDQ_CASES
                                        if v == "V3" or "axis" not in k],   # (TF: V2/V4 take
                         ids=str)                                           # a given range per
def test_quantize_and_dequantize_given_range(tmp_path, version, kw):        # tensor only)
    x = data(shape=(8, 6))
    count = (6,) if kw.get("axis") == 1 else ()
    low, high = np.full(count, -3.0, np.float32), np.full(count, 2.0, np.float32)
    if not kw.get("signed_input", True):
        low = np.zeros(count, np.float32)
    args = dict(kw, range_given=True)
    if version == "V3":
        args["num_bits"] = tf.constant(8)
        args.pop("round_mode", None)
    op = getattr(raw, "QuantizeAndDequantize" + version)
    fn = lambda x: op(input=x, input_min=tf.constant(low), input_max=tf.constant(high),  # noqa
                      **args)
    model, path = convert(fn, [spec(x.shape)], str(tmp_path))
    assert op_types(model) == ["QuantizeLinear", "DequantizeLinear"]
    got, = run(path, [x])
    want = fn(tf.constant(x)).numpy()
    step = qdq_step(low, high, kw.get("signed_input", True), kw.get("narrow_range", False))
    if kw.get("axis") == 1:
        step = step.reshape(1, -1)
    inside = x >= low + step      # narrow_range: below its range ONNX saturates a step lower
    exact = within_a_step(got, want, step, inside)
    assert exact > 0.99


# -- weights: int8 initializers, TF's values to the bit -------------------------------------------
def test_fake_quant_weights_are_int8_and_exact(tmp_path):
    w = data(1, (3, 3, 4, 8), 0.3)
    m = np.abs(w).reshape(-1, 8).max(0)
    x = data(2, (1, 6, 6, 4), 1.0)
    fn = lambda x: [  # noqa: E731
        tf.nn.conv2d(x, raw.FakeQuantWithMinMaxVarsPerChannel(
            inputs=tf.constant(w), min=tf.constant(-m), max=tf.constant(m), narrow_range=True),
            1, "SAME"),
        raw.FakeQuantWithMinMaxVars(inputs=tf.constant(w), min=tf.constant(-0.9),
                                    max=tf.constant(0.7))]
    model, path = convert(fn, [spec(x.shape)], str(tmp_path))
    dq = [n for n in model.graph.node if n.op_type == "DequantizeLinear"]
    inits = {i.name: i for i in model.graph.initializer}
    assert len(dq) == 2 and all(inits[n.input[0]].data_type == onnx.TensorProto.INT8 for n in dq)
    # the pass applied the HWIO -> OIHW Transpose to the initializer: DQ feeds the Conv
    conv = next(n for n in model.graph.node if n.op_type == "Conv")
    assert conv.input[1] == dq[0].output[0]
    assert not any(n.op_type == "Transpose" and n.input[0] in (dq[0].output[0], dq[1].output[0])
                   for n in model.graph.node)
    assert onnx.helper.get_attribute_value(dq[0].attribute[0]) == 0       # axis: O of OIHW
    got = run(path, [x])
    want = fn(tf.constant(x))
    np.testing.assert_array_equal(got[1], want[1].numpy())         # the weight itself
    np.testing.assert_allclose(got[0], want[0].numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kw", [dict(), dict(axis=0, narrow_range=True),
                                dict(signed_input=False, round_mode="HALF_UP")])
def test_quantize_and_dequantize_constant_is_exact(tmp_path, kw):
    w = data(3, (5, 7), 1.0)
    if not kw.get("signed_input", True):
        w = np.abs(w)
    count = (5,) if "axis" in kw else ()
    fn = lambda x: x + raw.QuantizeAndDequantizeV2(  # noqa: E731
        input=tf.constant(w), input_min=tf.constant(np.zeros(count, np.float32)),
        input_max=tf.constant(np.zeros(count, np.float32)), **kw)
    model, path = convert(fn, [spec(w.shape)], str(tmp_path))
    assert "QuantizeLinear" not in op_types(model) and "DequantizeLinear" in op_types(model)
    zeros = np.zeros_like(w)
    np.testing.assert_array_equal(run(path, [zeros])[0], fn(tf.constant(zeros)).numpy())


# -- what stays exact, with a warning -------------------------------------------------------------
def test_fallbacks_keep_exact_arithmetic_with_a_note(tmp_path, caplog):
    x = data()
    fn = lambda x, a, b: [  # noqa: E731
        raw.FakeQuantWithMinMaxArgs(inputs=x, min=-3.0, max=3.0, num_bits=4),
        raw.FakeQuantWithMinMaxVars(inputs=x, min=a, max=b),
        raw.QuantizeAndDequantizeV2(input=x, input_min=a, input_max=b, range_given=False)]
    specs = [spec(x.shape), spec((), name="a"), spec((), name="b")]
    with caplog.at_level(logging.INFO):
        model, path = convert(fn, specs, str(tmp_path))
    assert "QuantizeLinear" not in op_types(model)
    notes = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    for why in ("num_bits is 4, not 8", "min or max is computed at run time",
                "range is measured at run time"):
        assert any(why in n and "kept as exact float arithmetic" in n for n in notes), why
    feeds = [x, np.array(-2.5, np.float32), np.array(3.5, np.float32)]
    for got, want in zip(run(path, feeds, ("x0", "a", "b")),
                         fn(*[tf.constant(f) for f in feeds])):
        np.testing.assert_array_equal(got, want.numpy())


def test_exact_is_the_default(tmp_path):
    x = data()
    fn = lambda x: raw.FakeQuantWithMinMaxArgs(inputs=x, min=-3.0, max=3.0)  # noqa: E731
    model, path = convert(fn, [spec(x.shape)], str(tmp_path), quantized="exact")
    assert "QuantizeLinear" not in op_types(model)
    np.testing.assert_array_equal(run(path, [x])[0], fn(tf.constant(x)).numpy())


# -- the passes keep the form onnxruntime fuses ---------------------------------------------------
def test_conv_bias_and_scale_fold_into_the_quantized_conv(tmp_path):
    """Conv -> BiasAdd -> (batch norm's) Mul -> Add -> Relu -> FakeQuant: the per-channel
    arithmetic goes into the Conv's bias and the weight's scale, the layout's Transposes
    through Q/DQ, so onnxruntime runs QLinearConv."""
    rng = np.random.default_rng(4)
    w = rng.normal(0, 0.3, (3, 3, 3, 8)).astype(np.float32)
    m = np.abs(w).reshape(-1, 8).max(0)
    bias, scale, shift = (rng.normal(0, 0.1, 8).astype(np.float32),
                          rng.uniform(0.5, 1.5, 8).astype(np.float32),
                          rng.normal(0, 0.1, 8).astype(np.float32))

    def fn(x):
        x = raw.FakeQuantWithMinMaxVars(inputs=x, min=tf.constant(-1.0), max=tf.constant(1.0))
        wq = raw.FakeQuantWithMinMaxVarsPerChannel(inputs=tf.constant(w), min=tf.constant(-m),
                                                   max=tf.constant(m), narrow_range=True)
        y = tf.nn.bias_add(tf.nn.conv2d(x, wq, 1, "SAME"), bias) * scale + shift
        y = raw.FakeQuantWithMinMaxVars(inputs=tf.nn.relu(y), min=tf.constant(0.0),
                                        max=tf.constant(3.0))
        return tf.nn.conv2d(y, tf.constant(np.ones((3, 3, 8, 1), np.float32)), 1, "SAME")
    x = rng.uniform(-1, 1, (1, 8, 8, 3)).astype(np.float32)
    model, path = convert(fn, [spec(x.shape)], str(tmp_path))
    types = op_types(model)
    assert "Mul" not in types and "Add" not in types
    assert types.count("Transpose") == 2    # the input's and the output's: none between
    conv = next(n for n in model.graph.node if n.op_type == "Conv")
    producers = {o: n.op_type for n in model.graph.node for o in n.output}
    # x: its NHWC -> NCHW Transpose above its Q -> DQ pair (the qdq_hoist pass), so that the
    # DequantizeLinear feeds the Conv
    assert [producers.get(name) for name in conv.input] == ["DequantizeLinear",
                                                            "DequantizeLinear", None]
    options = ort.SessionOptions()
    options.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    assert "QLinearConv" in op_types(onnx.load(options.optimized_model_filepath))
    got, = run(path, [x])
    want = fn(tf.constant(x)).numpy()
    # a step (3/255) of the quantized activation, through the float conv of ones (3x3x8)
    assert np.abs(got - want).max() <= 3 / 255 * 72 * 1.01
