"""Keras recurrent layers end to end: each model is frozen (tools.models.freeze_function, control
flow kept functional) and exported as a SavedModel (model.export), converted by tf2ir from both,
and run by onnxruntime against Keras on two input sets of different batch (1 and 3) and
sequence length. Standard LSTM / GRU / SimpleRNN layers must fuse into ONNX LSTM / GRU / RNN
(plugins/builtin/rnn.py); masked, convolutional and other loops convert as ONNX Loops over
sequences (opp/lists.py)."""

from __future__ import annotations

import os
from collections import Counter

import numpy as np
import pytest

from tests.conformance.harness import assert_close

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")
L = keras.layers
FEATURES = 4

# name → (layer builder(return_sequences), fused ONNX op types expected, or "Loop")
LAYERS = {
    "lstm": (lambda seq: L.LSTM(5, return_sequences=seq), {"LSTM": 1}),
    "gru": (lambda seq: L.GRU(5, return_sequences=seq), {"GRU": 1}),
    "gru_reset_before": (lambda seq: L.GRU(5, return_sequences=seq, reset_after=False),
                         {"GRU": 1}),
    "simple_rnn": (lambda seq: L.SimpleRNN(5, return_sequences=seq), {"RNN": 1}),
    "bidirectional": (lambda seq: L.Bidirectional(L.LSTM(4, return_sequences=seq)), {"LSTM": 2}),
    "bidirectional_gru_sum": (lambda seq: L.Bidirectional(L.GRU(3, return_sequences=seq),
                                                          merge_mode="sum"), {"GRU": 2}),
    "masked_lstm": (lambda seq: [L.Masking(), L.LSTM(5, return_sequences=seq)], {"Loop": 1}),
    "conv_lstm": (lambda seq: L.ConvLSTM2D(3, 3, padding="same", return_sequences=seq),
                  {"Loop": 1}),
    # Keras 3 hard_sigmoid is relu6(x + 3) / 6: no ONNX LSTM activation computes it
    "hard_sigmoid_lstm": (lambda seq: L.LSTM(3, return_sequences=seq,
                                             recurrent_activation="hard_sigmoid"), {"Loop": 1}),
}
INPUT_SHAPES = {"conv_lstm": (6, 6, 2)}


def _model(name: str, return_sequences: bool):
    keras.utils.set_random_seed(7)
    build, _ = LAYERS[name]
    inputs = keras.Input((None,) + INPUT_SHAPES.get(name, (FEATURES,)))
    layers = build(return_sequences)
    x = inputs
    for layer in layers if isinstance(layers, list) else [layers]:
        x = layer(x)
    return keras.Model(inputs, x)


def _inputs(model, masked: bool = False):
    """Batch 1 of 7 steps and batch 3 of 2 steps; masked inputs get all-zero steps."""
    rng = np.random.default_rng(11)
    features = tuple(model.input_shape[2:])
    sets = [rng.uniform(-1, 1, (1, 7) + features).astype(np.float32),
            rng.uniform(-1, 1, (3, 2) + features).astype(np.float32)]
    if masked:
        sets[0][0, 5:] = 0.0      # padding at the end
        sets[1][1, 0] = 0.0       # a masked first step
    return sets


def convert(model, directory: str, route: str):
    """The model through tf2ir by `route` ("freeze" or "saved_model") → the ONNX path."""
    from tf2ir.ir.onnx.compile import compile_to_file
    from tf2ir.parser.pipeline import convert_file
    from tf2ir.tools.models import freeze_function
    if route == "freeze":
        source = os.path.join(directory, "model.pb")
        spec = tf.TensorSpec((None,) + tuple(model.input_shape[1:]), tf.float32, name="x")
        freeze_function(lambda x: model(x, training=False), spec, source)
    else:
        source = os.path.join(directory, "saved_model")
        model.export(source, verbose=False)
    graph, _ = convert_file(source)
    path = os.path.join(directory, "model.onnx")
    compile_to_file(graph, path, model_name=source)
    return path


def check_model(model, tmp_path, route: str, masked: bool = False) -> Counter:
    """Convert `model` by `route`, compare with Keras on both input sets; the ONNX op counts."""
    import onnx
    import onnxruntime as ort
    path = convert(model, str(tmp_path), route)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    for x in _inputs(model, masked):
        want = [np.asarray(t) for t in tf.nest.flatten(model(x, training=False))]
        got = session.run(None, {names[0]: x})
        assert len(got) == len(want)
        for k, (w, g) in enumerate(zip(want, got)):
            assert_close(w, g, atol=2e-5, rtol=2e-5, what=f"output {k} for {x.shape}")
    return Counter(n.op_type for n in onnx.load(path).graph.node)


def _expect_ops(ops: Counter, expected: dict) -> None:
    for op_type, count in expected.items():
        assert ops[op_type] == count, dict(ops)
    if "Loop" not in expected:
        assert not ops & Counter({"Loop": 1, "SequenceAt": 1, "SplitToSequence": 1}), dict(ops)


@pytest.mark.parametrize("return_sequences", [True, False], ids=["sequences", "last"])
@pytest.mark.parametrize("name", list(LAYERS))
def test_layer_frozen(name, return_sequences, tmp_path):
    model = _model(name, return_sequences)
    ops = check_model(model, tmp_path, "freeze", masked=name.startswith("masked"))
    _expect_ops(ops, LAYERS[name][1])


@pytest.mark.parametrize("return_sequences", [True, False], ids=["sequences", "last"])
@pytest.mark.parametrize("name", list(LAYERS))
def test_layer_saved_model(name, return_sequences, tmp_path):
    model = _model(name, return_sequences)
    ops = check_model(model, tmp_path, "saved_model", masked=name.startswith("masked"))
    _expect_ops(ops, LAYERS[name][1])


def test_fused_lstm_is_the_whole_layer(tmp_path):
    """LSTM(return_sequences=True): time-major transpose, LSTM, drop the directions dim,
    transpose back; nothing of the loop is left. The IR's text form keeps the fused op."""
    from tf2ir.ir import text
    from tf2ir.parser.pipeline import convert_file
    ops = check_model(_model("lstm", True), tmp_path, "freeze")
    assert ops == Counter({"Transpose": 2, "LSTM": 1, "Squeeze": 1})
    graph, report = convert_file(str(tmp_path / "model.pb"))
    assert report.fusions == {"keras_rnn": 1}
    path = str(tmp_path / "model.ir")
    text.save(graph, path)
    first = open(path).read()
    assert ' LSTM(' in first and 'activations: strs ["Sigmoid", "Tanh", "Tanh"]' in first
    text.save(text.load(path), path)
    assert open(path).read() == first


def test_lstm_return_state_relu_no_bias_and_go_backwards(tmp_path):
    keras.utils.set_random_seed(3)
    inputs = keras.Input((None, FEATURES))
    seq, h, c = L.LSTM(4, return_sequences=True, return_state=True, activation="relu",
                       use_bias=False)(inputs)
    back = L.GRU(3, go_backwards=True)(seq)
    model = keras.Model(inputs, [seq, h, c, back])
    ops = check_model(model, tmp_path, "freeze")
    _expect_ops(ops, {"LSTM": 1, "GRU": 1})


def test_stacked_layers_with_initial_state(tmp_path):
    """A second LSTM started from the first one's final states: the initial states are
    inputs of the fused op."""
    keras.utils.set_random_seed(5)
    inputs = keras.Input((None, FEATURES))
    seq, h, c = L.LSTM(4, return_sequences=True, return_state=True)(inputs)
    out = L.LSTM(4)(seq, initial_state=[h, c])
    ops = check_model(keras.Model(inputs, out), tmp_path, "freeze")
    _expect_ops(ops, {"LSTM": 2})


@pytest.mark.parametrize("layer", [L.LSTM, L.GRU], ids=["lstm", "gru"])
def test_mask_zero_embedding_masks_as_generic_loops(layer, tmp_path):
    """An Embedding with mask_zero masks steps of both stacked layers: generic loops, exact."""
    keras.utils.set_random_seed(9)
    ids = keras.Input((None,), dtype="int32")
    x = L.Embedding(10, FEATURES, mask_zero=True)(ids)
    x = layer(3, return_sequences=True)(x)
    x = layer(3)(x)
    model = keras.Model(ids, x)
    import onnx
    import onnxruntime as ort
    path = convert_int_model(model, str(tmp_path))
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    for batch in (np.array([[3, 1, 0, 0]], np.int32), np.array([[0, 2], [5, 0], [9, 9]], np.int32)):
        assert_close(model(batch).numpy(), session.run(None, {"x": batch})[0], atol=2e-5,
                     rtol=2e-5)
    assert Counter(n.op_type for n in onnx.load(path).graph.node)["Loop"] == 2


def convert_int_model(model, directory: str) -> str:
    from tf2ir.ir.onnx.compile import compile_to_file
    from tf2ir.parser.pipeline import convert_file
    from tf2ir.tools.models import freeze_function
    source = os.path.join(directory, "model.pb")
    freeze_function(lambda x: model(x, training=False),
                    tf.TensorSpec((None, None), tf.int32, name="x"), source)
    graph, _ = convert_file(source)
    path = os.path.join(directory, "model.onnx")
    compile_to_file(graph, path, model_name=source)
    return path


@pytest.mark.parametrize("return_sequences", [True, False], ids=["sequences", "last"])
def test_static_sequence_length(return_sequences, tmp_path):
    """A known step count makes Keras bound the loop by constants (max_iterations is
    Max(T, Range(..)), the cond compares with T): the fused op runs `steps` steps."""
    import onnxruntime as ort
    keras.utils.set_random_seed(4)
    inputs = keras.Input((5, FEATURES))
    model = keras.Model(inputs, L.GRU(3, return_sequences=return_sequences)(inputs))
    path = convert(model, str(tmp_path), "freeze")
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    for batch in (1, 3):
        x = np.random.default_rng(batch).uniform(-1, 1, (batch, 5, FEATURES)).astype(np.float32)
        assert_close(model(x).numpy(), session.run(None, {"x": x})[0], atol=2e-5, rtol=2e-5)
    import onnx
    assert "GRU" in {n.op_type for n in onnx.load(path).graph.node}
