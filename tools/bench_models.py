"""Transformer models for the benchmark, built from Keras layers (no download): a BERT-like
encoder and a GPT-like causal decoder, frozen like the keras.applications models.

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


MODELS: Dict[str, TransformerSpec] = {
    "BertEncoder": TransformerSpec(layers=4, width=256, heads=4),
    "GPTDecoder": TransformerSpec(layers=4, width=256, heads=4, causal=True),
    "BertBaseLayer2": TransformerSpec(layers=2, width=768, heads=12),
}


def build(spec: TransformerSpec):
    """A Keras model from token ids (batch, seq) int32 to hidden states or logits."""
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
