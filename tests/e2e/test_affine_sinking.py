"""ONNX passes against TensorFlow on small Keras models: a DenseNet-style block (Concat ->
BatchNorm -> ReLU -> Conv, the batch norm's scale sunk into the Conv), a stem whose zero
padding goes into the MaxPool, squeeze-and-excite global pooling, and an attention layer
(Einsum as MatMul, the query/key/value projections merged); each converted with the CLI,
run in onnxruntime and compared with TensorFlow, and with its pass switched off."""

from __future__ import annotations

import collections

import numpy as np
import onnx
import pytest

from tests.conftest import max_abs_error, run_cli, run_onnx
from tf2ir.tools.models import randomize_batch_norms, run_frozen_graph


def _dense_style(keras, inputs, negative_gamma=False):
    layers = keras.layers
    x = layers.Conv2D(8, 3, padding="same")(inputs)
    x = layers.ReLU()(x)
    x = layers.ZeroPadding2D(((1, 1), (1, 1)))(x)
    x = layers.MaxPooling2D(3, strides=2)(x)
    for _ in range(2):                  # dense blocks: BN -> ReLU -> Conv, concatenated
        y = layers.BatchNormalization()(x)
        y = layers.ReLU()(y)
        y = layers.Conv2D(6, 3, padding="same")(y)
        x = layers.Concatenate()([x, y])
    y = layers.BatchNormalization(name="pre_pool_bn")(x)
    y = layers.ReLU()(y)
    y = layers.Conv2D(6, 1)(y)          # unpadded 1x1 conv after the non-linearity
    se = layers.GlobalAveragePooling2D(keepdims=True)(y)
    se = layers.Conv2D(6, 1, activation="sigmoid")(se)
    y = y * se
    y = layers.BatchNormalization()(y)
    y = layers.GlobalAveragePooling2D()(y)
    return layers.Dense(5)(y)


def _build(keras, negative_gamma=False):
    keras.utils.set_random_seed(0)
    inputs = keras.Input((16, 16, 3))
    model = keras.Model(inputs, _dense_style(keras, inputs))
    randomize_batch_norms(model, seed=1)
    if negative_gamma:                  # Relu(s x + t) with s < 0 is no scaled Relu
        for layer in model.layers:
            if isinstance(layer, keras.layers.BatchNormalization):
                gamma = layer.gamma.numpy()
                gamma[::2] *= -1
                layer.gamma.assign(gamma)
    return model


def _convert(pb, tmp_path, tag, *options):
    out = str(tmp_path / f"{tag}.onnx")
    result = run_cli("convert", pb, "-o", out, *options)
    assert result.returncode == 0, result.stderr
    model = onnx.load(out)
    return out, collections.Counter(n.op_type for n in model.graph.node)


@pytest.mark.parametrize("negative_gamma", [False, True])
def test_dense_style_block_matches_tensorflow(freeze, tmp_path, negative_gamma):
    import keras
    import tensorflow as tf
    model = _build(keras, negative_gamma)
    pb, outputs = freeze(lambda t: model(t, training=False),
                         tf.TensorSpec((None, 16, 16, 3), tf.float32, name="x"))
    x = np.random.RandomState(0).normal(0, 1, (2, 16, 16, 3)).astype(np.float32)
    expected = run_frozen_graph(pb, {"x": x}, outputs)[0]
    assert np.ptp(expected) > 0.1
    on, ops = _convert(pb, tmp_path, "on")
    off, plain = _convert(pb, tmp_path, "off", "--passes", "off:scale,off:pool_pad,off:global_pool")
    for path in (on, off):
        assert max_abs_error(run_onnx(path, {"x": x})[0], expected) <= 1e-4
    assert plain["Pad"] == 1 and ops["Pad"] == 0          # the pad went into the MaxPool
    assert ops["GlobalAveragePool"] >= 2 and ops["ReduceMean"] == 0
    if negative_gamma:
        assert ops["Mul"] > 1                              # the scales stay before the Relus
    else:
        # the three pre-activation batch norms' Muls sink into Convs; only the SE Mul stays
        assert plain["Mul"] - ops["Mul"] >= 3 and ops["Mul"] == 1


def test_attention_matches_tensorflow(freeze, tmp_path):
    import keras
    import tensorflow as tf
    keras.utils.set_random_seed(0)
    inputs = keras.Input((7, 16))
    attention = keras.layers.MultiHeadAttention(4, 4)
    y = keras.layers.LayerNormalization()(inputs + attention(inputs, inputs))
    model = keras.Model(inputs, y)
    for weight in model.weights:        # non-zero biases, so the bias Adds are real
        weight.assign(np.random.RandomState(len(weight.path)).normal(
            0, 0.3, weight.shape).astype("float32"))
    pb, outputs = freeze(lambda t: model(t, training=False),
                         tf.TensorSpec((None, 7, 16), tf.float32, name="x"))
    x = np.random.RandomState(0).normal(0, 1, (2, 7, 16)).astype(np.float32)
    expected = run_frozen_graph(pb, {"x": x}, outputs)[0]
    on, ops = _convert(pb, tmp_path, "on")
    assert max_abs_error(run_onnx(on, {"x": x})[0], expected) <= 1e-4
    assert ops["Einsum"] == 0 and ops["Split"] == 0 and ops["LayerNormalization"] == 1
    # onnxruntime's attention fusion's form: each projection MatMul -> Add -> Reshape, and
    # the scores divided (Keras multiplies by 1/sqrt(4) = 0.5) before the Softmax
    model = onnx.load(on)
    producer = {o: n for n in model.graph.node for o in n.output}
    softmax = next(n for n in model.graph.node if n.op_type == "Softmax")
    assert producer[softmax.input[0]].op_type == "Div"
    readers = collections.defaultdict(list)
    for n in model.graph.node:
        for name in n.input:
            readers[name].append(n.op_type)
    projections = [n for n in model.graph.node if n.op_type == "MatMul" and n.input[0] == "x"]
    assert projections and all(readers[p.output[0]] == ["Add"] for p in projections)
    assert all(readers[producer_add.output[0]] == ["Reshape"] for producer_add in
               (n for n in model.graph.node if n.op_type == "Add"
                and producer.get(n.input[0]) in projections))
    merged, merged_ops = _convert(pb, tmp_path, "merged", "--passes", "on:matmul_merge")
    assert max_abs_error(run_onnx(merged, {"x": x})[0], expected) <= 1e-4
    assert merged_ops["Split"] == 1
    _, plain = _convert(pb, tmp_path, "off", "--passes", "off:einsum,off:attention_form")
    assert plain["Einsum"] == 2 and plain["Split"] == 0
