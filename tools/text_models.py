"""Tiny text models with their tokenizer in the graph (issue 25): a batch of strings in,
logits out. Nothing is downloaded: the vocabularies are generated, the SentencePiece model
is trained with the `sentencepiece` package on generated sentences, the BPE merges are
counted from them.

- `bert`: tensorflow_text.BertTokenizer (lower case, NFD, WordPiece) over a vocabulary FILE,
  which the SavedModel keeps as an asset (a table initialised from a text file);
- `sentencepiece`: tensorflow_text.SentencepieceTokenizer (the model proto in the graph);
- `gpt2`: keras_hub.tokenizers.BytePairTokenizer (GPT-2's byte-level BPE, its two constant
  tables and its run-time cache, a MutableHashTable);

each followed by a small embedding, mean pooling and a dense layer (random weights), saved
as a SavedModel (`OUT/<name>`, signature `serving_default`, input `text`: [None] strings,
output `logits`) and frozen to `OUT/<name>.pb` with tf2ir's own freezing (parser/frozen.py).

    python -m tf2ir.tools.text_models OUT_DIR            # build the three models
    python -m tf2ir.tools.text_models OUT_DIR --bench    # and time tf2ir against TF
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import time
from typing import Dict, List, Optional, Sequence

MODELS = ("bert", "sentencepiece", "gpt2")
SEQ = 16          # tokens kept per string (padded with id 0)
WIDTH = 8         # embedding width
CLASSES = 3

_WORDS = ("the quick brown fox jumps over lazy dog running swiftly through forest river "
          "mountain city people sing dance write code model token text small large green "
          "blue red light dark night day morning evening winter summer").split()
_EXTRA = ["Café", "naïve", "résumé", "ÉCOLE", "Straße", "Ｆｕｌｌ", "ｗｉｄｔｈ", "東京", "北京",
          "日本語", "Москва", "привет", "мир", "Ελλάδα", "hello!", "what?", "it's", "(yes)",
          "a,b", "x-ray", "e-mail", "supercalifragilisticexpialidocious"]

# The strings the tests and the benchmark feed: mixed case, accents, full-width, CJK,
# Cyrillic, punctuation, an empty string, a long word.
SAMPLES = ["The quick brown fox.", "Café naïve RÉSUMÉ", "Ｆｕｌｌ ｗｉｄｔｈ text", "東京 and 北京",
           "Привет, мир!", "", "supercalifragilisticexpialidocious", "hello,world?? (yes)",
           "  spaces   around  ", "Dog DOG dOg", "x-ray e-mail it's", "Ελλάδα 日本語 Москва"]


def sentences(count: int = 400, seed: int = 0) -> List[str]:
    """Generated sentences (mostly the common words, some of the hard ones)."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        words = [rng.choice(_WORDS) if rng.random() < 0.85 else rng.choice(_EXTRA)
                 for _ in range(rng.randint(3, 10))]
        words = [w.capitalize() if rng.random() < 0.2 else w for w in words]
        out.append(" ".join(words) + rng.choice(["", ".", "!", "?"]))
    return out


def batch(size: int) -> List[str]:
    """`size` strings: the samples, repeated."""
    return [SAMPLES[i % len(SAMPLES)] for i in range(size)]


# -- vocabularies --------------------------------------------------------------------------
def wordpiece_vocab() -> List[str]:
    """A WordPiece vocabulary: specials, whole words (lower case, accents stripped), single
    characters and their ## forms."""
    import unicodedata
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
    words = sorted({w.lower() for w in _WORDS} | {"quick", "un", "##s", "##ing", "##ly"})
    chars = set()
    for text in sentences() + SAMPLES:
        for ch in unicodedata.normalize("NFD", text.lower()):
            if not unicodedata.combining(ch) and not ch.isspace():
                chars.add(ch)
    chars = sorted(chars)
    vocab = specials + words + chars + ["##" + c for c in chars if c.isalnum()]
    return list(dict.fromkeys(vocab))   # each token once


def sentencepiece_model(vocab_size: int = 120) -> bytes:
    """A SentencePiece (unigram) model proto trained on the generated sentences."""
    import sentencepiece as spm
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(sentences()), model_writer=model, vocab_size=vocab_size,
        model_type="unigram", character_coverage=1.0, pad_id=0, unk_id=1, bos_id=-1,
        eos_id=-1, minloglevel=2, num_threads=1)
    return model.getvalue()


def _byte_unicode() -> Dict[int, str]:
    """GPT-2's byte → printable character map."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + \
        list(range(0xAE, 0x100))
    chars, extra = list(keep), 0
    for b in range(256):
        if b not in keep:
            keep.append(b)
            chars.append(256 + extra)
            extra += 1
    return {b: chr(c) for b, c in zip(keep, chars)}


def bpe_vocab_and_merges(merges: int = 60):
    """GPT-2-style byte-level BPE: a vocabulary (token → id) of the 256 byte characters
    plus the merged pairs, and the `merges` most frequent pair merges of the sentences."""
    import collections
    table = _byte_unicode()
    words = collections.Counter()
    for text in sentences():
        for word in text.split(" "):
            words[tuple(table[b] for b in (" " + word).encode())] += 1
    vocab = {ch: i for i, ch in enumerate(table[b] for b in range(256))}
    rules = []
    for _ in range(merges):
        pairs = collections.Counter()
        for word, n in words.items():
            for pair in zip(word, word[1:]):
                pairs[pair] += n
        if not pairs:
            break
        (a, b), _ = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))
        rules.append(f"{a} {b}")
        vocab.setdefault(a + b, len(vocab))
        merged = collections.Counter()
        for word, n in words.items():
            out, i = [], 0
            while i < len(word):
                if i + 1 < len(word) and word[i] == a and word[i + 1] == b:
                    out.append(a + b)
                    i += 2
                else:
                    out.append(word[i])
                    i += 1
            merged[tuple(out)] += n
        words = merged
    return vocab, rules


# -- models ---------------------------------------------------------------------------------
def _module(tf, tokenize, vocab_size: int, seed: int):
    """A tf.Module: tokenize (strings → ragged int ids), pad to SEQ, embed, mean, dense."""
    rng = tf.random.Generator.from_seed(seed)

    class TextClassifier(tf.Module):
        def __init__(self):
            super().__init__()
            self.embedding = tf.Variable(rng.normal((vocab_size, WIDTH)), name="embedding")
            self.kernel = tf.Variable(rng.normal((WIDTH, CLASSES)), name="kernel")
            self.bias = tf.Variable(rng.normal((CLASSES,)), name="bias")

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
        def serve(self, text):
            ids = tokenize(text)
            ids = tf.cast(ids, tf.int64)
            if isinstance(ids, tf.RaggedTensor):
                if ids.ragged_rank > 1:
                    ids = ids.merge_dims(1, -1)
                ids = ids.to_tensor(0)
            ids = ids[:, :SEQ]
            ids = tf.pad(ids, [[0, 0], [0, SEQ - tf.shape(ids)[1]]])
            mask = tf.cast(ids > 0, tf.float32)[..., tf.newaxis]
            vectors = tf.gather(self.embedding, tf.clip_by_value(ids, 0, vocab_size - 1))
            pooled = tf.reduce_sum(vectors * mask, 1) / (tf.reduce_sum(mask, 1) + 1.0)
            return {"logits": tf.matmul(pooled, self.kernel) + self.bias,
                    "ids": ids}
    return TextClassifier()


def build_bert(tf, work: str):
    import tensorflow_text as text
    vocab = wordpiece_vocab()
    path = os.path.join(work, "bert_vocab.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(vocab) + "\n")
    tokenizer = text.BertTokenizer(path, lower_case=True, token_out_type=tf.int64)
    module = _module(tf, tokenizer.tokenize, len(vocab) + 1, 1)
    module.tokenizer = tokenizer   # tracked: its table and vocabulary asset are saved
    return module


def build_sentencepiece(tf, work: str):
    import tensorflow_text as text
    proto = sentencepiece_model()
    tokenizer = text.SentencepieceTokenizer(model=proto, out_type=tf.int32)
    module = _module(tf, tokenizer.tokenize, int(tokenizer.vocab_size()), 2)
    module.tokenizer = tokenizer
    return module


def build_gpt2(tf, work: str):
    import keras_hub
    vocab, merges = bpe_vocab_and_merges()
    tokenizer = keras_hub.tokenizers.BytePairTokenizer(vocabulary=vocab, merges=merges)
    module = _module(tf, tokenizer, len(vocab), 3)
    module.tokenizer = tokenizer
    return module


BUILDERS = {"bert": build_bert, "sentencepiece": build_sentencepiece, "gpt2": build_gpt2}


def build(out_dir: str, names: Sequence[str] = MODELS) -> Dict[str, Dict[str, str]]:
    """Build, save and freeze each model in `names` under `out_dir`; per model its paths
    ({"saved_model", "pb"}). Imports TensorFlow, tensorflow_text and keras_hub."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the ops before any tracing)

    from tf2ir.ir.errors import ConversionError
    from tf2ir.parser.frozen import freeze_function
    from tf2ir.parser.load import load_saved_model
    os.makedirs(out_dir, exist_ok=True)
    work = os.path.join(out_dir, "_work")
    os.makedirs(work, exist_ok=True)
    paths = {}
    for name in names:
        module = BUILDERS[name](tf, work)
        saved = os.path.join(out_dir, name)
        tf.saved_model.save(module, saved, signatures={"serving_default": module.serve})
        module = tf.saved_model.load(saved)   # the file-initialised tables of the asset
        try:   # TF's freezing: tables back as constants (parser/frozen.py, parser/tables.py)
            graph_def, _, _ = freeze_function(tf, module.serve.get_concrete_function(), name)
        except ConversionError:
            graph_def = None
        if graph_def is None or _drops_resources(graph_def):
            # a tokenizer resource that is not a table (SentencepieceOp) becomes a bare
            # Placeholder in TF's freezing: tf2ir's native SavedModel reading keeps it
            graph_def, _, _ = load_saved_model(saved, "serving_default", ("serve",))
        pb = os.path.join(out_dir, f"{name}.pb")
        with open(pb, "wb") as f:
            f.write(graph_def.SerializeToString())
        paths[name] = {"saved_model": saved, "pb": pb}
    return paths


def _drops_resources(graph_def) -> bool:
    """Whether a frozen graph holds a resource Placeholder (a captured resource that TF's
    freezing could not write back)."""
    return any(n.op == "Placeholder" and n.attr["dtype"].type == 20 for n in graph_def.node)


def reference(saved_model: str, strings: Sequence[str]) -> Dict[str, object]:
    """TF's outputs of the SavedModel on `strings` (numpy arrays by output name)."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401
    fn = tf.saved_model.load(saved_model).signatures["serving_default"]
    return {k: v.numpy() for k, v in fn(text=tf.constant(list(strings))).items()}


# -- latency --------------------------------------------------------------------------------
def _time(fn, repeat: int) -> float:
    fn()
    best = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best.append(time.perf_counter() - start)
    best.sort()
    return best[len(best) // 2] * 1000.0


def bench(paths: Dict[str, Dict[str, str]], sizes: Sequence[int] = (1, 64),
          repeat: int = 20) -> List[dict]:
    """Median latency (ms) of TF's SavedModel and of tf2ir's converted model (from the .pb,
    run by tf2ir.InferenceSession) per model and batch size."""
    import numpy as np
    import tensorflow as tf
    import tensorflow_text  # noqa: F401

    import tf2ir
    rows = []
    for name, where in paths.items():
        fn = tf.saved_model.load(where["saved_model"]).signatures["serving_default"]
        onnx_path = where["pb"][:-3] + ".onnx"
        try:
            tf2ir.convert(where["pb"]).save(onnx_path)
            session = tf2ir.InferenceSession(onnx_path)
        except Exception as exc:   # reported in the table, the other models still timed
            session, why = None, str(exc).splitlines()[0][:120]
        for size in sizes:
            strings = batch(size)
            tensor = tf.constant(strings)
            row = {"model": name, "batch": size,
                   "tf_ms": round(_time(lambda: fn(text=tensor), repeat), 3)}
            if session is not None:
                feed = {session.get_inputs()[0].name: np.array(strings, dtype=object)}
                try:
                    row["tf2ir_ms"] = round(_time(lambda: session.run(None, feed), repeat), 3)
                except Exception as exc:
                    why = str(exc).splitlines()[0][:120]
            if "tf2ir_ms" not in row:
                row["error"] = why
            rows.append(row)
    return rows


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tf2ir.tools.text_models",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir")
    parser.add_argument("--models", default=",".join(MODELS),
                        help=f"comma-separated subset of {', '.join(MODELS)}")
    parser.add_argument("--bench", action="store_true",
                        help="time TF and tf2ir at batch 1 and 64 (median ms)")
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args(argv)
    names = [n for n in args.models.split(",") if n]
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        parser.error(f"unknown model(s): {', '.join(unknown)}")
    paths = build(args.out_dir, names)
    print(json.dumps(paths, indent=1))
    if args.bench:
        rows = bench(paths, repeat=args.repeat)
        print(f"{'model':<14}{'batch':>6}{'TF ms':>10}{'tf2ir ms':>10}")
        for row in rows:
            ours = f"{row['tf2ir_ms']:>10.3f}" if "tf2ir_ms" in row else \
                f"       n/a  ({row['error']})"
            print(f"{row['model']:<14}{row['batch']:>6}{row['tf_ms']:>10.3f}{ours}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
