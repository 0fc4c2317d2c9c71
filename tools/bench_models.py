"""Transformer models for the benchmark, built from Keras layers (no download): BERT-like
encoders, a GPT-like causal decoder and a T5-like encoder (RMS norms, relative position
bias, unscaled attention, no biases), frozen like the keras.applications models.

    python -m tf2ir.tools.bench_models BertEncoder -o DIR     # DIR/BertEncoder.pb + .json

Beside the .pb a JSON file names the input and outputs and says what to feed (shape, dtype
and, for token ids, the vocabulary size)."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from dataclasses import dataclass
from typing import Dict, List, Optional


@dataclass
class TransformerSpec:
    layers: int
    width: int
    heads: int
    seq: int = 128
    vocab: int = 8000
    causal: bool = False          # GPT: causal self-attention, pre-norm, tanh GELU, LM head
    t5: bool = False              # T5: pre-norm RMS norms, relative position bias, ReLU MLP


MODELS: Dict[str, TransformerSpec] = {
    "BertEncoder": TransformerSpec(layers=4, width=256, heads=4),
    "GPTDecoder": TransformerSpec(layers=4, width=256, heads=4, causal=True),
    "BertBaseLayer2": TransformerSpec(layers=2, width=768, heads=12),
    "T5Encoder": TransformerSpec(layers=4, width=256, heads=4, t5=True),
}


def relative_buckets(seq: int, buckets: int = 32, max_distance: int = 128):
    """T5's bidirectional relative position buckets, (seq, seq) int32: half the buckets
    for each sign, exact below buckets/4, logarithmic up to max_distance."""
    import numpy as np
    relative = np.arange(seq)[None, :] - np.arange(seq)[:, None]
    half = buckets // 2
    bucket = (relative > 0).astype(np.int32) * half
    distance = np.abs(relative)
    exact = half // 2
    log = exact + (np.log(np.maximum(distance, 1) / exact) / math.log(max_distance / exact)
                   * (half - exact)).astype(np.int32)
    return (bucket + np.where(distance < exact, distance, np.minimum(log, half - 1))).astype(np.int32)


def build_t5(spec: TransformerSpec):
    """A T5-like encoder written as keras-hub writes T5: RMS norms from ops, attention scores
    without 1/sqrt(d), one relative position bias shared by every layer."""
    import keras
    from keras import layers, ops

    class RMSNorm(layers.Layer):
        def build(self, shape):
            self.weight = self.add_weight(shape=(shape[-1],), initializer="ones", name="weight")

        def call(self, x):
            variance = ops.mean(ops.square(x), axis=-1, keepdims=True)
            return x * ops.rsqrt(variance + 1e-6) * self.weight

    ids = keras.Input((spec.seq,), dtype="int32", name="input")
    x = layers.Embedding(spec.vocab, spec.width)(ids)
    head = spec.width // spec.heads
    buckets = ops.convert_to_tensor(relative_buckets(spec.seq))
    bias = ops.transpose(layers.Embedding(32, spec.heads, name="relative_bias")(buckets),
                         (2, 0, 1))[None]                          # (1, heads, seq, seq)

    def split(t):
        return ops.transpose(ops.reshape(t, (-1, spec.seq, spec.heads, head)), (0, 2, 1, 3))
    for i in range(spec.layers):
        h = RMSNorm(name=f"layer{i}_norm1")(x)
        q, k, v = (split(layers.Dense(spec.width, use_bias=False, name=f"layer{i}_{n}")(h))
                   for n in "qkv")
        scores = ops.softmax(ops.matmul(q, ops.transpose(k, (0, 1, 3, 2))) + bias, axis=-1)
        context = ops.reshape(ops.transpose(ops.matmul(scores, v), (0, 2, 1, 3)),
                              (-1, spec.seq, spec.width))
        x = x + layers.Dense(spec.width, use_bias=False, name=f"layer{i}_o")(context)
        h = RMSNorm(name=f"layer{i}_norm2")(x)
        h = layers.Dense(4 * spec.width, activation="relu", use_bias=False, name=f"layer{i}_wi")(h)
        x = x + layers.Dense(spec.width, use_bias=False, name=f"layer{i}_wo")(h)
    model = keras.Model(ids, RMSNorm(name="final_norm")(x))
    import numpy as np
    rng = np.random.default_rng(0)
    for weight in model.weights:      # trained norms are not all ones
        if weight.path.endswith("weight"):
            weight.assign(rng.normal(1.0, 0.1, weight.shape).astype("float32"))
    return model


def build(spec: TransformerSpec):
    """A Keras model from token ids (batch, seq) int32 to hidden states or logits."""
    if spec.t5:
        return build_t5(spec)
    import keras
    from keras import layers
    keras.utils.set_random_seed(0)
    ids = keras.Input((spec.seq,), dtype="int32", name="input")
    positions = keras.ops.arange(spec.seq)
    x = layers.Embedding(spec.vocab, spec.width)(ids) + \
        layers.Embedding(spec.seq, spec.width)(positions)[None]
    if spec.causal:
        def gelu(t):
            return keras.activations.gelu(t, approximate=True)
    else:           # written with erf: keras' exact gelu uses erfc, which tf2onnx lacks
        def gelu(t):
            return 0.5 * t * (1.0 + keras.ops.erf(t / math.sqrt(2.0)))
    for i in range(spec.layers):
        attention = layers.MultiHeadAttention(spec.heads, spec.width // spec.heads,
                                              name=f"layer{i}_attention")
        mlp_in = layers.Dense(4 * spec.width, activation=gelu, name=f"layer{i}_mlp_in")
        mlp_out = layers.Dense(spec.width, name=f"layer{i}_mlp_out")
        if spec.causal:       # pre-norm
            h = layers.LayerNormalization(epsilon=1e-5)(x)
            x = x + attention(h, h, use_causal_mask=True)
            x = x + mlp_out(mlp_in(layers.LayerNormalization(epsilon=1e-5)(x)))
        else:                 # post-norm
            x = layers.LayerNormalization(epsilon=1e-12)(x + attention(x, x))
            x = layers.LayerNormalization(epsilon=1e-12)(x + mlp_out(mlp_in(x)))
    if spec.causal:
        x = layers.Dense(spec.vocab, name="lm_head")(layers.LayerNormalization(epsilon=1e-5)(x))
    model = keras.Model(ids, x)
    # trained models have non-zero biases and betas (Keras initialises them to zero, which
    # converters may drop, and which hides the bias Adds attention fusion looks for)
    import numpy as np
    rng = np.random.default_rng(0)
    for weight in model.weights:
        if weight.path.endswith(("bias", "beta")):
            weight.assign(rng.normal(0.0, 0.02, weight.shape).astype("float32"))
    return model


def freeze_transformer(name: str, out_dir: str) -> str:
    """Write OUT_DIR/NAME.pb and OUT_DIR/NAME.json; return the .pb path."""
    import tensorflow as tf
    from tf2ir.tools.models import freeze_function
    spec = MODELS[name]
    model = build(spec)
    path = os.path.join(out_dir, f"{name}.pb")
    outputs = freeze_function(lambda t: model(t, training=False),
                              tf.TensorSpec((None, spec.seq), tf.int32, name="input"), path)
    with open(os.path.join(out_dir, f"{name}.json"), "w") as f:
        json.dump({"input": "input:0", "outputs": outputs, "shape": [1, spec.seq],
                   "dtype": "int32", "high": spec.vocab}, f)
    return path


def zoo_files(names: List[str], model_dir: str) -> List[str]:
    """MODEL_DIR/NAME.pb for each name, frozen there first when missing: a transformer of
    MODELS or a keras.applications model (the models the passcheck and checkagree tools run)."""
    from tf2ir.tools.models import freeze_keras_application
    paths = []
    for name in names:
        path = os.path.join(model_dir, f"{name}.pb")
        if not os.path.exists(path):
            if name in MODELS:
                freeze_transformer(name, model_dir)
            else:
                freeze_keras_application(name, model_dir)
        paths.append(path)
    return paths


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tf2ir.tools.bench_models", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="+", choices=sorted(MODELS))
    parser.add_argument("-o", "--out-dir", default=".")
    args = parser.parse_args(argv)
    os.makedirs(args.out_dir, exist_ok=True)
    for name in args.names:
        print(freeze_transformer(name, args.out_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
