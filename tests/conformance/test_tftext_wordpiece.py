"""Conformance of tensorflow-text's WordpieceTokenizeWithOffsets (opp/tftext_wordpiece.py,
plugins/builtin/tftext_wordpiece.py) against TF-text: text.WordpieceTokenizer over a vocabulary
table captured by the tf.function (restored at freezing by parser/tables.py, read into the op's
attribute at conversion), with each of the op's options, and text.BertTokenizer end to end
(lower_case off: case folding goes through RegexReplace, see test_tftext_normalize), compared
exactly (pieces or ids, offsets, row partitions) at two batch sizes."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conformance.test_tftext_normalize import TEXTS, check

tf = pytest.importorskip("tensorflow")
text = pytest.importorskip("tensorflow_text")

TESTED_DTYPES = {"WordpieceTokenizeWithOffsets": ("string",)}

VOCAB = ["[UNK]", "[CLS]", "the", "qu", "##ick", "brown", "##s", "fox", "a", "##b", "##c", "b",
         "c", "!", ",", ".", "'", "é", "##é", "t", "##te", "日", "本", "##本", "при", "##вет",
         "мир", "ｆ", "##ｕ", "x", "##x", "##xx", "##xxx", "don", "##'", "##t", "Ü", "##n",
         "de", "##e"]


def table():
    init = tf.lookup.KeyValueTensorInitializer(VOCAB, tf.range(len(VOCAB), dtype=tf.int64))
    return tf.lookup.StaticVocabularyTable(init, 1)


def words(x):
    """The pre-tokenization WordPiece sees: whitespace words, as flat values."""
    return tf.strings.split(x).flat_values


@pytest.mark.parametrize("options", [
    {}, {"token_out_type": tf.int64}, {"unknown_token": None},
    {"max_bytes_per_word": 8}, {"max_bytes_per_word": 8, "unknown_token": None},
    {"max_chars_per_token": 2}, {"split_unknown_characters": True},
    {"split_unknown_characters": True, "unknown_token": None},
    {"suffix_indicator": "@@"}])
def test_wordpiece_tokenizer(options):
    options = dict(options)
    out_type = options.pop("token_out_type", tf.string)
    tokenizer = text.WordpieceTokenizer(table(), token_out_type=out_type, **options)

    def fn(x):
        pieces, starts, ends = tokenizer.tokenize_with_offsets(words(x))
        return pieces.flat_values, starts.flat_values, ends.flat_values, pieces.row_splits
    graph = check(fn)
    assert "WordpieceTokenize" in {n.op_type for n in graph.nodes}


def test_wordpiece_row_lengths_raw_op():
    lookup = table()

    check(lambda x: _raw(lookup, words(x)))


def _raw(lookup, tokens):
    ops = pytest.importorskip("tensorflow_text.python.ops.wordpiece_tokenizer")
    out = ops.gen_wordpiece_tokenizer.wordpiece_tokenize_with_offsets(
        input_values=tokens, vocab_lookup_table=lookup.resource_handle, suffix_indicator="##",
        use_unknown_token=True, max_bytes_per_word=100, max_chars_per_token=0,
        unknown_token="[UNK]", split_unknown_characters=False,
        output_row_partition_type="row_lengths")
    return tuple(out)


# BasicTokenizer replaces \p{Cc}|\p{Cf} by StaticRegexReplace (opp/regex.py): every text,
# soft hyphens, zero-width spaces, tabs, newlines and control characters included
BERT_TEXTS = TEXTS


def test_bert_tokenizer_ids_and_offsets():
    tokenizer = text.BertTokenizer(table(), token_out_type=tf.int64, lower_case=False)

    def fn(x):
        ids, starts, ends = tokenizer.tokenize_with_offsets(x)
        return (ids.flat_values, starts.flat_values, ends.flat_values,
                ids.values.row_splits, ids.row_splits)
    graph = check(fn, [np.array(BERT_TEXTS, object), np.array(BERT_TEXTS[2:5], object)])
    types = {n.op_type for n in graph.nodes}
    assert {"WordpieceTokenize", "RegexSplitWithOffsets"} <= types


def test_kernel_too_long_word_ends_at_unknown_tokens_length():
    """TF's quirk, kept: a word over max_bytes_per_word is [UNK] with limit len('[UNK]')."""
    from tf2ir.opp.tftext_wordpiece import wordpiece_tokenize
    vocab = np.array(["a"], object)
    out = wordpiece_tokenize(np.array(["aaaaaaaaaa", "", "a"], object), vocab=vocab,
                             max_bytes_per_word=4)
    assert list(out[0]) == ["[UNK]", "a"]
    assert out[1].tolist() == [0, 1, 1, 2] and out[3].tolist() == [5, 1]
