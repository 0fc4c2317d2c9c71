"""Small BERT models frozen to a .pb, for checking `tf2ir verify` on NLP graphs: three int32
inputs of shape [None, None] (input_ids, attention_mask, token_type_ids) whose token-type
embedding table has 2 rows, as in every BERT.

- `transformers`: transformers' TFBertModel (needs `pip install "transformers<4.50" tf-keras`;
  transformers' TF models need tf-keras with TF 2.16 and newer, and transformers 4.50 dropped
  TensorFlow), random weights, nothing downloaded;
- `keras`: the same embedding layout and attention-mask arithmetic ((1 - mask) * -10000 added
  to the attention scores) built from Keras layers, for when transformers is missing.

    python -m tf2ir.tools.nlp_models keras -o bert_keras.pb
    python -m tf2ir.tools.nlp_models transformers -o bert_hf.pb
"""

from __future__ import annotations

import argparse
from typing import List, Optional

INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")


def _specs():
    import tensorflow as tf
    return [tf.TensorSpec((None, None), tf.int32, name=name) for name in INPUT_NAMES]


def freeze_transformers_bert(path: str, layers: int = 2, hidden: int = 128, heads: int = 2,
                             intermediate: int = 256, vocab: int = 1000, seed: int = 0) -> List[str]:
    """transformers' TFBertModel with random weights, frozen to `path`; returns the output
    tensor names. ImportError when transformers (or tf-keras) is not installed."""
    import tensorflow as tf
    from transformers import BertConfig, TFBertModel

    from tf2ir.tools.models import freeze_function
    tf.random.set_seed(seed)
    config = BertConfig(num_hidden_layers=layers, hidden_size=hidden, num_attention_heads=heads,
                        intermediate_size=intermediate, vocab_size=vocab)
    model = TFBertModel(config)

    def call(input_ids, attention_mask, token_type_ids):
        out = model(input_ids=input_ids, attention_mask=attention_mask,
                    token_type_ids=token_type_ids, training=False)
        return out.last_hidden_state, out.pooler_output

    return freeze_function(call, _specs(), path)


def freeze_keras_bert(path: str, layers: int = 2, hidden: int = 64, heads: int = 2,
                      intermediate: int = 128, vocab: int = 1000, positions: int = 64,
                      seed: int = 0) -> List[str]:
    """A Keras BERT encoder with BERT's embeddings (word, position, 2-row token type) and
    extended attention mask, random weights, frozen to `path`; returns the output names."""
    import keras
    import tensorflow as tf

    from tf2ir.tools.models import freeze_function
    keras.utils.set_random_seed(seed)
    word = keras.layers.Embedding(vocab, hidden)
    position = keras.layers.Embedding(positions, hidden)
    token_type = keras.layers.Embedding(2, hidden)
    norm = keras.layers.LayerNormalization(epsilon=1e-12)
    blocks = []
    for _ in range(layers):
        blocks.append({"q": keras.layers.Dense(hidden), "k": keras.layers.Dense(hidden),
                       "v": keras.layers.Dense(hidden), "o": keras.layers.Dense(hidden),
                       "n1": keras.layers.LayerNormalization(epsilon=1e-12),
                       "up": keras.layers.Dense(intermediate, activation="gelu"),
                       "down": keras.layers.Dense(hidden),
                       "n2": keras.layers.LayerNormalization(epsilon=1e-12)})
    size = hidden // heads

    def split(t, batch, seq):
        return tf.transpose(tf.reshape(t, [batch, seq, heads, size]), [0, 2, 1, 3])

    def call(input_ids, attention_mask, token_type_ids):
        batch, seq = tf.shape(input_ids)[0], tf.shape(input_ids)[1]
        x = word(input_ids) + position(tf.range(seq)[tf.newaxis]) + token_type(token_type_ids)
        x = norm(x)
        mask = tf.cast(attention_mask[:, tf.newaxis, tf.newaxis, :], tf.float32)
        mask = (1.0 - mask) * -10000.0
        for b in blocks:
            q, k, v = (split(b[n](x), batch, seq) for n in "qkv")
            scores = tf.matmul(q, k, transpose_b=True) / float(size) ** 0.5 + mask
            context = tf.matmul(tf.nn.softmax(scores, axis=-1), v)
            context = tf.reshape(tf.transpose(context, [0, 2, 1, 3]), [batch, seq, hidden])
            x = b["n1"](x + b["o"](context))
            x = b["n2"](x + b["down"](b["up"](x)))
        return x

    return freeze_function(call, _specs(), path)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tf2ir.tools.nlp_models", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kind", choices=("transformers", "keras"))
    parser.add_argument("-o", "--output", required=True, metavar="MODEL.pb")
    args = parser.parse_args(argv)
    freeze = freeze_transformers_bert if args.kind == "transformers" else freeze_keras_bert
    for name in freeze(args.output):
        print(name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
