"""TFLite recurrent ops against the LiteRT interpreter. TF's converter fuses a tf_keras (Keras 2)
LSTM into UNIDIRECTIONAL_SEQUENCE_LSTM (a Bidirectional one into two of them and REVERSE_V2);
Keras 3 LSTMs, GRUs and SimpleRNNs become WHILE loops (test_tflite_control.py's mapping).
Float and dynamic-range (int8 weights, float activations: the interpreter's hybrid kernel
quantizes the activations on the fly, hence the looser tolerance), and full int8 (TFLite's
integer kernel: int8 input and output state, int16 cell state) within 1 quantization step."""

import numpy as np
import pytest

from tests.conformance.tflite_harness import RESULTS, SEED, convert_tflite, output_scales

tf = pytest.importorskip("tensorflow")
keras2 = pytest.importorskip("tf_keras")

TFLITE_TESTED = {"UNIDIRECTIONAL_SEQUENCE_LSTM": ("float", "dynamic", "int8")}


def _check(tmp_path, model, mode, name, feeds, ops=("UNIDIRECTIONAL_SEQUENCE_LSTM",), atol=1e-5,
           steps=1, amplitude=1.0):
    from tests.conformance.tflite_harness_run import compare_runs
    from tf2ir.parser.tflite_model import read_tflite
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    if mode in ("dynamic", "int8"):
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    if mode == "int8":       # full integer: calibrated on draws from a fixed seed, float I/O
        def data():
            for feed in _random_feeds(model, 16, -amplitude, amplitude, SEED + 7):
                yield feed
        converter.representative_dataset = data
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    path = tmp_path / f"{name}_{mode}.tflite"
    path.write_bytes(converter.convert())
    sg = read_tflite(str(path)).subgraphs[0]
    found = [op.op_type for op in sg.operators]
    for op in ops:
        assert op in found, found
    if mode == "dynamic":     # the weights really are int8
        assert any(t.dtype == "int8" and t.data is not None for t in sg.tensors)
    onnx_path = str(path)[:-len(".tflite")] + ".onnx"
    graph, _ = convert_tflite(str(path), onnx_path)
    outcome = compare_runs(str(path), onnx_path, feeds, mode, steps, atol, atol, name)
    RESULTS.append(outcome)
    return outcome


def _random_feeds(model, count=2, low=-1.0, high=1.0, seed=SEED):
    rng = np.random.default_rng(seed)
    shapes = [[int(d) for d in x.shape] for x in model.inputs]
    return [[rng.uniform(low, high, s).astype(np.float32) for s in shapes] for _ in range(count)]


@pytest.mark.slow     # TF's converter takes ~10 s an LSTM here
def test_bidirectional_lstm_float(tmp_path):
    """Bidirectional: two UNIDIRECTIONAL_SEQUENCE_LSTMs around REVERSE_V2, each fused to the
    IR's LSTM."""
    keras2.utils.set_random_seed(0)
    x = keras2.Input((5, 3), batch_size=2)
    model = keras2.Model(x, keras2.layers.Bidirectional(
        keras2.layers.LSTM(4, return_sequences=True))(x))
    _check(tmp_path, model, "float", "lstm", _random_feeds(model),
           ops=("UNIDIRECTIONAL_SEQUENCE_LSTM", "REVERSE_V2"))


def test_lstm_dynamic_range(tmp_path):
    # weights of 32 x 4 gates x 40 inputs: over the converter's 1,024-element quantization floor
    keras2.utils.set_random_seed(1)
    x = keras2.Input((3, 40), batch_size=2)
    model = keras2.Model(x, keras2.layers.LSTM(32, return_sequences=True)(x))
    _check(tmp_path, model, "dynamic", "lstm_dynamic", _random_feeds(model), atol=2e-2)


def test_lstm_cell_clip(tmp_path):
    """TFLite clips the cell state at cell_clip (10 from TF's converter); ONNX's LSTM cannot.
    Input and forget gates held open (bias 10), the cell input tanh(3 * sum(x)) ~ +-1: the
    cell state climbs 1 a step for 12 steps (clipped at 10) then falls for 8. Unclipped it
    would end at 4, clipped it ends at 2: tanh of the two differ by 0.035 in the output."""
    units, width, steps = 2, 2, 20
    kernel = np.zeros((width, 4 * units), np.float32)
    kernel[:, 2 * units:3 * units] = 3.0                      # Keras gate order i, f, c, o
    bias = np.zeros(4 * units, np.float32)
    bias[:2 * units] = 10.0
    layer = keras2.layers.LSTM(units, return_sequences=True, unit_forget_bias=False,
                               kernel_initializer=keras2.initializers.Constant(kernel),
                               recurrent_initializer="zeros",
                               bias_initializer=keras2.initializers.Constant(bias))
    x = keras2.Input((steps, width), batch_size=1)
    model = keras2.Model(x, layer(x))
    pattern = np.where(np.arange(steps) < 12, 1.0, -1.0).astype(np.float32)
    feed = np.repeat(pattern[None, :, None], width, axis=2)
    _check(tmp_path, model, "float", "lstm_clip", [[feed]])


def _cell_scale(path) -> float:
    from tf2ir.parser.tflite_model import read_tflite
    sg = read_tflite(str(path)).subgraphs[0]
    op = next(o for o in sg.operators if o.op_type == "UNIDIRECTIONAL_SEQUENCE_LSTM")
    state, cell = sg.tensors[op.inputs[18]], sg.tensors[op.inputs[19]]
    assert (state.dtype, cell.dtype) == ("int8", "int16"), (state.dtype, cell.dtype)
    return float(cell.quantization.scale[0])


def _int8_lstm(tmp_path, units, steps, width, amplitude, name):
    """A tf_keras LSTM (seed 0) in full int8, calibrated and fed on draws in +-amplitude."""
    keras2.utils.set_random_seed(0)
    x = keras2.Input((steps, width), batch_size=1)
    model = keras2.Model(x, keras2.layers.LSTM(units, return_sequences=True)(x))
    outcome = _check(tmp_path, model, "int8", name, _random_feeds(model, 3, -amplitude, amplitude),
                     steps=1, amplitude=amplitude)
    return outcome, _cell_scale(tmp_path / f"{name}_int8.tflite")


def test_lstm_int8(tmp_path):
    """Full int8 (cell scale 2^-14): the output state variable starts at its zero point (real
    0; read as zeros it was (0 - zp) * scale), the hidden state is quantized to int8 at every
    step (its range clips it), the cell state to int16, the gate pre-activations to Q3.12.
    Within 1 step of the interpreter (measured: at most 1)."""
    outcome, cell_scale = _int8_lstm(tmp_path, 4, 6, 3, 3.0, "lstm_int8")
    assert cell_scale == 2.0 ** -14, cell_scale
    assert outcome.worst < 1.01, outcome


def test_lstm_int8_fine_cell_scale(tmp_path, caplog):
    """A cell state calibrated under 0.5 gets the scale 2^-16, for which LiteRT's int16 tanh
    (15 + log2(scale) = -1 integer bits) writes nothing and its kernel multiplies the output
    gate by the input gate instead. tf2ir computes the LSTM, says so in a warning, and stays
    within a few steps of the float Keras model the int8 one quantizes (measured: 1.2)."""
    from tf2ir.tools.runtime import InferenceSession
    keras2.utils.set_random_seed(0)
    x = keras2.Input((8, 4), batch_size=1)
    model = keras2.Model(x, keras2.layers.LSTM(16, return_sequences=True)(x))
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.representative_dataset = lambda: iter(_random_feeds(model, 16, -1.0, 1.0, SEED + 7))
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    path = tmp_path / "lstm_fine.tflite"
    path.write_bytes(converter.convert())
    assert _cell_scale(path) == 2.0 ** -16
    onnx_path = str(tmp_path / "lstm_fine.onnx")
    with caplog.at_level("WARNING", logger="tf2ir"):
        convert_tflite(str(path), onnx_path)
    assert "skips tanh(cell)" in caplog.text
    session = InferenceSession(onnx_path)
    (scale,) = output_scales(str(path)).values()
    for (feed,) in _random_feeds(model, 3, -1.0, 1.0):
        want = model.predict(feed, verbose=0)
        (got,) = session.run(None, {session.get_inputs()[0].name: feed})
        assert np.abs(got - want).max() / scale <= 3, np.abs(got - want).max() / scale
