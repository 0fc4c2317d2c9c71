"""Conformance of tensorflow-text's normalization ops (opp/tftext_normalize.py, opp/tftext_regex.py,
plugins/builtin/tftext_wordpiece.py) against TF-text: text.case_fold_utf8, text.normalize_utf8 in
the four forms, FastBertNormalizer (both models, with and without offsets) and
text.regex_split_with_offsets (BERT's patterns and others), built inside tf.functions as the
library's Python API builds them, frozen, converted, run by tf2ir.InferenceSession and
compared exactly (strings, offsets, splits) at two batch sizes."""

from __future__ import annotations

import tempfile

import numpy as np
import pytest

from tests.conformance.harness import as_text, assert_close, convert_function, relaxed, spec

tf = pytest.importorskip("tensorflow")
text = pytest.importorskip("tensorflow_text")

TESTED_DTYPES = {"CaseFoldUTF8": ("string",), "NormalizeUTF8": ("string",),
                 "FastBertNormalize": ("string",), "RegexSplitWithOffsets": ("string",)}

# mixed case, accents (composed and decomposed), full-width, CJK, Cyrillic, Greek final sigma,
# ligatures, default-ignorables, control characters, punctuation, empty strings, long words
TEXTS = ["The Quick BROWN Fox!", "", "Ünïcödé e\u0301te\u0301 ÇA", "ＡＢＣ ｆｕｌｌ－ｗｉｄｔｈ！１２",
         "日本語のテキスト、漢字。", "Привет, МИР! Ёлка", "ΣΊΣΥΦΟΣ ὈΔΥΣΣΕΎΣ", "ﬁnal ﬀ Straße ẞ İ",
         "soft\u00adhyphen zero\u200bwidth", "tab\there\nnew\x07bell\x1fctl", "don't... stop?!",
         "x" * 120, "  leading and trailing  ", "①②③ ½ ™ ㎏ ℃"]
BATCHES = [np.array(TEXTS, object), np.array(TEXTS[3:6], object)]


def check(fn, batches=None):
    """Convert `fn` over a 1-D string input and compare with TF on both batches."""
    import tf2ir
    fn, specs, relay, reference = relaxed(fn, [spec((None,), "string")])
    with tempfile.TemporaryDirectory(prefix="tf2ir-tftext-") as directory:
        path, graph, _, _ = convert_function(fn, specs, directory)
        session = tf2ir.InferenceSession(path)
        for batch in batches or BATCHES:
            feed = relay([batch])
            want = [as_text(np.asarray(w)) for w in tf.nest.flatten(
                reference(*[tf.constant(a) for a in feed]))]
            got = session.run(None, {s.name: np.asarray(a) for s, a in zip(specs, feed)})
            assert len(got) == len(want)
            for k, (w, g) in enumerate(zip(want, got)):
                assert_close(w, g, what=f"output {k}")
        return graph


def test_case_fold_utf8():
    graph = check(lambda x: text.case_fold_utf8(x))
    assert "CaseFoldUTF8" in {n.op_type for n in graph.nodes}


@pytest.mark.parametrize("form", ["NFC", "NFKC", "NFD", "NFKD"])
def test_normalize_utf8(form):
    check(lambda x: text.normalize_utf8(x, form))


def test_case_fold_then_nfd_strips_accents_as_bert_does():
    check(lambda x: tf.strings.regex_replace(
        text.normalize_utf8(text.case_fold_utf8(x), "NFD"), r"\p{Mn}", ""))


@pytest.mark.parametrize("lower", [False, True])
def test_fast_bert_normalizer_with_offsets(lower):
    normalizer = text.FastBertNormalizer(lower_case_nfd_strip_accents=lower)

    def fn(x):
        texts, offsets = normalizer.normalize_with_offsets(x)
        return texts, offsets.flat_values, offsets.row_splits
    graph = check(fn)
    assert "FastBertNormalize" in {n.op_type for n in graph.nodes}


def test_fast_bert_normalizer_without_offsets():
    normalizer = text.FastBertNormalizer(lower_case_nfd_strip_accents=True)
    check(lambda x: normalizer.normalize(x))


bert = pytest.importorskip("tensorflow_text.python.ops.bert_tokenizer")
BERT_DELIM, BERT_KEEP = bert._DELIM_REGEX_PATTERN, bert._KEEP_DELIM_NO_WHITESPACE_PATTERN


@pytest.mark.parametrize("delim,keep", [
    (BERT_DELIM, BERT_KEEP), (r"\s+", ""), (r"\s", r"\s"), (r"[\p{P}]|\s+", r"\p{P}"),
    (r"(\d+)|[aeiou]", r"\d+"), (r"^\s*[A-Z]", r"."), (r"[^\p{L}\x{20}]+", r"[^x]+")])
def test_regex_split_with_offsets(delim, keep):
    def fn(x):
        tokens, begins, ends = text.regex_split_with_offsets(x, delim, keep)
        return tokens.flat_values, begins.flat_values, ends.flat_values, tokens.row_splits
    check(fn)


@pytest.mark.parametrize("delim,why", [(r"a*", "matches the empty string"),
                                       (r"(?<n>a)", "(? groups"), (r"\Bx", "escape \\B"),
                                       (r"\p{Arabic}", "general categories")])
def test_regex_split_refuses_patterns_it_cannot_reproduce(delim, why):
    from tf2ir.ir import ConversionError

    def fn(x):
        return text.regex_split_with_offsets(x, delim)[0].flat_values
    with tempfile.TemporaryDirectory() as directory:
        with pytest.raises(ConversionError, match="RegexSplitWithOffsets") as info:
            convert_function(fn, [spec((None,), "string")], directory)
    assert why in str(info.value)
