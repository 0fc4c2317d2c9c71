"""Conformance of tensorflow-text's FastWordpieceTokenizeWithOffsets and FastWordpieceDetokenize
(opp/tftext_fastwordpiece.py, plugins/builtin/tftext_wordpiece.py) against TF-text:
text.FastWordpieceTokenizer built eagerly from a vocabulary (CJK, Cyrillic, accents, full-width,
## suffixes, tokens that are prefixes of others, the suffix indicator as a token) in both modes
(no_pretokenization True/False), with a small max_bytes_per_word and another suffix indicator;
the op's five outputs, the tokenizer's ids/pieces with offsets, detokenization, and
FastBertTokenizer and keras-hub's WordPieceTokenizer end to end, converted from frozen
tf.functions, run by tf2ir.InferenceSession and compared exactly at two batch sizes. The kernel
alone is also compared with TF's op on random strings holding ill-formed UTF-8."""

from __future__ import annotations

import random
import tempfile

import numpy as np
import pytest

from tests.conformance.harness import convert_function, spec
from tests.conformance.test_tftext_normalize import TEXTS, check

tf = pytest.importorskip("tensorflow")
text = pytest.importorskip("tensorflow_text")

TESTED_DTYPES = {"FastWordpieceTokenizeWithOffsets": ("string",),
                 "TFText>FastWordpieceDetokenize": ("int32",)}

VOCAB = ["[UNK]", "the", "qu", "##ick", "brown", "##s", "fox", "a", "##b", "##c", "b", "c", "!",
         ",", ".", "'", "é", "##é", "t", "##te", "日", "本", "##本", "при", "##вет", "мир", "ｆ",
         "##ｕ", "x", "##x", "##xx", "##xxx", "don", "##'", "##t", "Ü", "##n", "de", "##e", "ab",
         "abc", "abcd", "##cd", "##bc", "#", "##", "fo", "ó"]
MORE = ["quick brown fox", "при##вет мир", "abcd abcx abcb ab##c", "##", "#", "##b", "a##b",
        "日本本", "ｆｕｕ", "éé tte", "xxxxxxxxxxxx", "dón't", "x" * 30 + " the"]
BATCHES = [np.array(TEXTS + MORE, object), np.array(MORE[:3] + TEXTS[4:6], object)]


def _gen():
    from tensorflow_text.python.ops.fast_wordpiece_tokenizer import gen_fast_wordpiece_tokenizer
    return gen_fast_wordpiece_tokenizer


def _tokenizer(**options):
    suffix = options.get("suffix_indicator", "##")
    vocab = [suffix + v[2:] if v.startswith("##") and len(v) > 2 else v for v in VOCAB]
    return text.FastWordpieceTokenizer(vocab, **options)


OPTIONS = [{}, {"no_pretokenization": True}, {"max_bytes_per_word": 5},
           {"max_bytes_per_word": 5, "no_pretokenization": True},
           {"suffix_indicator": "@@"}, {"suffix_indicator": "@@", "no_pretokenization": True}]


@pytest.mark.parametrize("options", OPTIONS)
def test_fast_wordpiece_op_outputs(options):
    """All five outputs of the raw op (pieces, ids, row splits, starts, ends)."""
    tokenizer = _tokenizer(**options)

    def fn(x):
        return tuple(_gen().fast_wordpiece_tokenize_with_offsets(input_values=x,
                                                                  wp_model=tokenizer._model))
    graph = check(fn, BATCHES)
    assert "FastWordpieceTokenize" in {n.op_type for n in graph.nodes}


@pytest.mark.parametrize("out_type", ["string", "int64", "int32"])
@pytest.mark.parametrize("pretokenized", [False, True])
def test_fast_wordpiece_tokenizer_with_offsets(out_type, pretokenized):
    tokenizer = _tokenizer(no_pretokenization=pretokenized, token_out_type=tf.as_dtype(out_type))

    def fn(x):
        words = tf.strings.split(x) if pretokenized else x
        pieces, starts, ends = tokenizer.tokenize_with_offsets(words)
        return (pieces.flat_values, starts.flat_values, ends.flat_values,
                *pieces.nested_row_splits)
    check(fn, BATCHES)


@pytest.mark.parametrize("pretokenized", [False, True])
def test_fast_wordpiece_detokenize_round_trip(pretokenized):
    tokenizer = _tokenizer(no_pretokenization=pretokenized, support_detokenization=True)

    def fn(x):
        return tokenizer.detokenize(tokenizer.tokenize(x))
    graph = check(fn, BATCHES)
    assert "FastWordpieceDetokenize" in {n.op_type for n in graph.nodes}


def test_detokenize_without_support_is_refused():
    from tf2ir.ir import ConversionError
    tokenizer = _tokenizer()

    def fn(x):
        return tokenizer.detokenize(tokenizer.tokenize(x))
    with tempfile.TemporaryDirectory() as directory:
        with pytest.raises(ConversionError, match="FastWordpieceDetokenize") as info:
            convert_function(fn, [spec((None,), "string")], directory)
    assert "support_detokenization" in str(info.value)


def test_fast_bert_tokenizer_end_to_end():
    """FastBertTokenizer: FastBertNormalize, then FastWordpieceTokenizeWithOffsets end to end."""
    lower = [v for v in VOCAB if v == v.lower() or v == "[UNK]"]
    tokenizer = text.FastBertTokenizer(lower, token_out_type=tf.int64,
                                       lower_case_nfd_strip_accents=True)

    def fn(x):
        ids, starts, ends = tokenizer.tokenize_with_offsets(x)
        return ids.flat_values, starts.flat_values, ends.flat_values, ids.row_splits
    graph = check(fn, BATCHES)
    assert {"FastBertNormalize", "FastWordpieceTokenize"} <= {n.op_type for n in graph.nodes}


def test_keras_hub_word_piece_tokenizer():
    keras_hub = pytest.importorskip("keras_hub")
    tokenizer = keras_hub.tokenizers.WordPieceTokenizer(vocabulary=VOCAB, lowercase=False,
                                                        strip_accents=False)

    def fn(x):
        ids = tokenizer.tokenize(x)
        return ids.flat_values, ids.row_splits, tokenizer.detokenize(ids)
    graph = check(fn, BATCHES)
    assert {"FastWordpieceTokenize", "FastWordpieceDetokenize"} <= {
        n.op_type for n in graph.nodes}


def test_kernel_matches_tf_on_random_and_ill_formed_utf8():
    """The numpy kernel against TF's op, eagerly, on bytes no str round trip can carry."""
    from tf2ir.opp.tftext_fastwordpiece import fast_wordpiece_tokenize
    rng = random.Random(5)
    alphabet = [b"a", b"b", b"c", b"x", b"t", b"e", b"#", b"!", b"'", b" ", b".", "日".encode(),
                "本".encode(), "ｕ".encode(), "é".encode(), "при".encode(), b"\xe6\x88",
                b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf0\x9f", b"\x80"]
    inputs = [b"".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14)))
              for _ in range(300)]
    strings = np.array([s.decode("utf-8", "surrogateescape") for s in inputs], object)
    for options in OPTIONS:
        tokenizer = _tokenizer(**options)
        want = [o.numpy() for o in _gen().fast_wordpiece_tokenize_with_offsets(
            input_values=tf.constant(inputs), wp_model=tokenizer._model)]
        got = fast_wordpiece_tokenize(strings, model=tokenizer._model.numpy())
        pieces = [p.encode("utf-8", "surrogateescape") for p in got[0]]
        assert pieces == list(want[0]), options
        for k in range(1, 5):
            assert got[k].tolist() == want[k].tolist(), (options, k)


def test_malformed_model_is_refused_naming_the_node():
    from tf2ir.ir import ConversionError

    def fn(x):
        return tuple(_gen().fast_wordpiece_tokenize_with_offsets(
            input_values=x, wp_model=tf.constant(list(range(1, 10)), tf.uint8)))
    with tempfile.TemporaryDirectory() as directory:
        with pytest.raises(ConversionError, match="node 'FastWordpieceTokenizeWithOffsets'") \
                as info:
            convert_function(fn, [spec((None,), "string")], directory)
    assert "not a FastWordpieceTokenizerConfig flatbuffer" in str(info.value)


def test_kernel_stops_on_looping_failure_links():
    """A model whose failure link of token 'a' points back to itself: TF's kernel would loop
    for ever; the kernel reports the malformed model."""
    import struct

    from tf2ir.opp.tftext_fastwordpiece import Tokenizer, fast_wordpiece_tokenize, read_model
    from tf2ir.opp.tftext_normalize import flatbuffer_fields
    model = text.FastWordpieceTokenizer(["[UNK]", "a", "##b"], no_pretokenization=True)
    buffer = bytearray(model._model.numpy().tobytes())
    node = Tokenizer(read_model(model._model.numpy())).step(0, b"a")
    field = flatbuffer_fields(bytes(buffer), 2)[1]
    start = field + struct.unpack_from("<I", buffer, field)[0]
    struct.pack_into("<I", buffer, start + 4 + 8 * node, node)
    ok = fast_wordpiece_tokenize(np.array(["b"], object), model=model._model.numpy())
    assert ok[1].tolist() == [0]
    with pytest.raises(ValueError, match="failure links loop"):
        fast_wordpiece_tokenize(np.array(["aa"], object), model=np.frombuffer(bytes(buffer),
                                                                               np.uint8))
