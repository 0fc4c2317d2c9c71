"""Conformance of the regex ops against TensorFlow's RE2: RegexReplace and StaticRegexReplace
(opp/regex.py), RegexFullMatch and StaticRegexFullMatch (opp/strings_extra.py) and
tensorflow-text's RegexSplitWithOffsets (opp/tftext_regex.py), all by opp/re2.py's translation.
Models run through tf2ir.InferenceSession in this process, which has loaded TensorFlow: the
condition in which onnxruntime-extensions' RE2 kernel returned every string unchanged. Also:
the translation's Unicode tables and case folding against TF's RE2 on every code point, and
the refusals (one ConversionError line naming node and op)."""

from __future__ import annotations

import tempfile

import numpy as np
import pytest

from tests.conformance.harness import convert_function, spec
from tests.conformance.test_tftext_normalize import TEXTS, check

tf = pytest.importorskip("tensorflow")

TESTED_DTYPES = {"RegexReplace": ("string",), "StaticRegexReplace": ("string",),
                 "RegexFullMatch": ("string",), "StaticRegexFullMatch": ("string",)}

# TEXTS (mixed case, accents composed and decomposed, full-width, CJK, Cyrillic, Greek, soft
# hyphen, zero-width space, tabs, newlines, control characters, punctuation, empty strings,
# long words) and emoji with modifiers and flags, repeats for empty matches, lines
MORE = TEXTS + ["emoji 😀👍🏽 🇯🇵 ok\u200d", "abxd aa ab abc", "a\nb\nc\n", "\u3000全角　スペース",
                "ı İ K ſ ǅ ß ẞ σς"]
BATCHES = [np.array(MORE, object), np.array(MORE[8:11], object)]


def replace_all(cases):
    """A function replacing by each (pattern, rewrite), global and first only."""
    def fn(x):
        return [tf.strings.regex_replace(x, p, r, replace_global=g)
                for p, r in cases for g in (True, False)]
    return fn


def test_bert_normalization_patterns():
    """BasicTokenizer's: control and format characters to spaces, marks dropped after NFD."""
    text = pytest.importorskip("tensorflow_text")
    graph = check(lambda x: [
        tf.strings.regex_replace(x, r"\p{Cc}|\p{Cf}", " "),
        tf.strings.regex_replace(text.normalize_utf8(x, "NFD"), r"\p{Mn}", ""),
        tf.strings.regex_replace(x, r"\s", " ")], BATCHES)
    assert "RegexReplace" in {n.op_type for n in graph.nodes}


def test_bert_tokenizer_lower_case_end_to_end():
    """text.BertTokenizer(lower_case=True): case folding, NFD, \\p{Mn} removed, \\p{Cc}|\\p{Cf}
    to spaces, split, WordPiece; ids and offsets equal to TF's on every text."""
    text = pytest.importorskip("tensorflow_text")
    from tests.conformance.test_tftext_wordpiece import table
    tokenizer = text.BertTokenizer(table(), token_out_type=tf.int64, lower_case=True)

    def fn(x):
        ids, starts, ends = tokenizer.tokenize_with_offsets(x)
        return (ids.flat_values, starts.flat_values, ends.flat_values,
                ids.values.row_splits, ids.row_splits)
    check(fn, BATCHES)


@pytest.mark.parametrize("cases", [
    [(r"\p{L}+", "<\\0>"), (r"\p{Lu}", "_"), (r"\P{L}", ""), (r"[^\p{L}\p{N}]+", " "),
     (r"\pL\pN", "#"), (r"\p{^Z}", "."), (r"\p{P}|\p{S}", "[\\0]"), (r"\p{Z}+", "|"),
     (r"\p{N}+", "<\\0>"), (r"\p{C}", "?")],
    [(r"\p{Han}+", "<\\0>"), (r"\p{Latin}+", "L"), (r"\p{Cyrillic}", "C"), (r"\p{Greek}+", "G"),
     (r"[\p{Hiragana}\p{Katakana}]", "k"), (r"[\x{4e00}-\x{9fff}]", "H"), (r"\x{1F600}", ":)"),
     (r"[😀-🙏]", "E"), (r"\x{200d}|\x{fe0f}", "")],
    [(r"\t", "T"), (r"\n", "N"), ("\u00ad", "-"), (r"\s+", " "), (r"\d+", "#"), (r"\w+", "w"),
     (r"[[:punct:]]+", "p"), (r"[[:^alpha:]]", ""), (r"\012|\x20", "_"), (r"\Q...\E", "…"),
     (r"\bx", "X"), (r".", "."), (r"(?s).{2}", "2")],
    [(r"(\w+)\s(\w+)", r"\2 \1"), (r"(a|ab)(c|bcd)?", r"[\1|\2]"), (r"a+?", "<\\0>"),
     (r"(?U)a+", "<\\0>"), (r"(?:x{2,3})+?", "-"), (r"(\p{L})(\p{L})", r"\2\1"),
     (r"(?P<first>\w)", r"\1\1"), (r"(a)|b", r"[\1]")],
    [(r"x*", "-"), (r"", "-"), (r"^", "^"), (r"$", "$"), (r"(?m)^.", "<\\0>"),
     (r"(?m).$", "<\\0>"), (r"\A\s*|\s*\z", ""), (r"b*", "-")],
    [(r"(?i)straße|σ", "#"), (r"(?i)[a-z]+", "w"), (r"(?i)k", "k"), (r"(?i)ı|i", "i"),
     (r"(?i)\W", ""), (r"(?i)[^k]", ""), (r"(?i:a)b|c", "#"), (r"a(?i)b|c", "#"),
     (r"(?i)ǆ|ß", "#"), (r"(?i)\p{Lu}", "U")],
    [("a", r"\\"), ("a", "$0"), ("a", r"\x"), ("(b)", r"<\1\x\1>"), ("a", r"\2"),
     ("(a)", r"\\1"), ("a", "\\"), ("", r"\0\0")],
], ids=["categories", "scripts", "escapes-classes", "groups", "empty-anchors", "case",
        "rewrites"])
def test_static_regex_replace(cases):
    """Global and first-only replacement, every pattern and rewrite as TF (RE2) gives it."""
    graph = check(replace_all(cases), BATCHES)
    assert {n.op_type for n in graph.nodes} >= {"RegexReplace"}


def test_run_time_pattern_and_rewrite():
    """RegexReplace with pattern and rewrite fed at run time: the kernel translates them."""
    from tests.conformance.test_strings import check_strings
    fn = lambda x, p, r: [tf.strings.regex_replace(x, p, r),  # noqa: E731
                          tf.strings.regex_replace(x, p, r, replace_global=False)]
    for pattern, rewrite in [(r"\p{Mn}", ""), (r"(\p{Lu})", r"<\1>")]:
        check_strings(fn, [np.array(MORE, object), np.array(pattern, object),
                           np.array(rewrite, object)],
                      specs=[spec((None,), "string"), spec((), "string", "x1"),
                             spec((), "string", "x2")])


@pytest.mark.parametrize("pattern", [r"\p{L}+", r"(?i)[a-zß ]+", r".*\p{Han}.*",
                                     r"[\p{Cyrillic}\s,!]+", r"\S+\s\S+", r"(?s).*\n.*", ""])
def test_regex_full_match(pattern):
    raw = tf.raw_ops
    check(lambda x: [tf.strings.regex_full_match(x, pattern),
                     raw.RegexFullMatch(input=x, pattern=tf.constant(pattern))], BATCHES)


@pytest.mark.parametrize("delim,keep", [(r"(?i)x|σ", r"X|Σ"), (r"\bx\w*|\s", r"\S+"),
                                        (r"\p{Greek}+", "."), (r"[\p{Han}\s]", r"\p{Han}")])
def test_regex_split_with_patterns_newly_translated(delim, keep):
    text = pytest.importorskip("tensorflow_text")

    def fn(x):
        tokens, begins, ends = text.regex_split_with_offsets(x, delim, keep)
        return tokens.flat_values, begins.flat_values, ends.flat_values, tokens.row_splits
    check(fn, BATCHES)


# -- the translation's tables, against TF's RE2 on every code point --------------------------------
CODES = np.array([c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF])


def _ranges(codes) -> list:
    codes = np.asarray(codes)
    if codes.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(codes) != 1)
    starts = np.concatenate([[codes[0]], codes[breaks + 1]])
    ends = np.concatenate([codes[breaks], [codes[-1]]])
    return list(zip(starts.tolist(), ends.tolist()))


def _without_surrogates(ranges):
    from tf2ir.opp.re2 import complement, merge
    return merge(complement(merge(complement(ranges) + [(0xD800, 0xDFFF)])))


def test_unicode_classes_equal_re2_on_every_code_point():
    from tf2ir.opp.re2 import _CATEGORIES, _SCRIPT, category_ranges
    strings = tf.constant(np.array([chr(c).encode() for c in CODES], object))
    for name in sorted(_CATEGORIES) + sorted(_SCRIPT) + ["Any"]:
        hit = tf.strings.regex_full_match(strings, r"\p{%s}" % name).numpy()
        assert _ranges(CODES[hit]) == _without_surrogates(category_ranges(name)), name


def test_case_folding_orbits_equal_re2():
    """Every code point with an orbit matches (?i) of itself exactly at its orbit's members,
    and no code point without one is folded to another."""
    from tf2ir.opp.re2 import _orbits
    orbits = _orbits()
    folded = np.array(sorted(orbits))
    strings = tf.constant(np.array([chr(c).encode() for c in folded], object))
    for code in folded:
        hit = tf.strings.regex_full_match(strings, f"(?i)\\x{{{code:x}}}").numpy()
        assert tuple(folded[hit].tolist()) == orbits[int(code)], hex(code)
    rest = CODES[~np.isin(CODES, folded)]
    everything = tf.constant(np.array([chr(c).encode() for c in CODES], object))
    hit = tf.strings.regex_full_match(everything, _re2_class(_ranges(rest))).numpy()
    assert np.array_equal(CODES[hit], rest)


def _re2_class(ranges) -> str:
    return "(?i)[" + "".join(f"\\x{{{a:x}}}-\\x{{{b:x}}}" for a, b in ranges) + "]"


# -- refusals ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("pattern,why", [
    (r"\Bx", "escape \\B"), (r"\C", "escape \\C"), (r"(?<n>a)", "(? groups"),
    (r"(a)\1", "escape \\1"), (r"(?=a)", "(? groups"), (r"\p{Arabic}", "\\p{Arabic}"),
    (r"a**", "repetition"), (r"a*+", "repetition"), (r"x{1001}", "repeat count"),
    (r"(a*)+", "can match empty"), (r"\Z", "escape \\Z"), (r"[[:foo:]]", "POSIX class")])
def test_untranslatable_patterns_are_refused(pattern, why):
    from tf2ir.ir.errors import ConversionError
    for fn, op in [(lambda x: tf.strings.regex_replace(x, pattern, ""), "RegexReplace"),
                   (lambda x: tf.strings.regex_full_match(x, pattern), "RegexFullMatch")]:
        with tempfile.TemporaryDirectory() as directory:
            with pytest.raises(ConversionError) as info:
                convert_function(fn, [spec((None,), "string")], directory)
        message = str(info.value)
        assert "\n" not in message and op in message and "node '" in message
        assert why in message and "cannot reproduce exactly" in message


def test_run_time_untranslatable_pattern_fails_the_run_naming_the_reason():
    from tf2ir.opp.regex import regex_replace
    with pytest.raises(ValueError, match="escape \\\\C"):
        regex_replace(np.array(["a"], object), np.array(r"\C", object), np.array("", object))


def test_kernel_on_bytes_that_are_not_utf8():
    """Undecodable bytes match no class (RE2's UTF-8 mode) and come back as they were."""
    from tf2ir.opp.regex import regex_replace
    data = [b"\xffa\xfe", b"a\xe6\x97", b"\xc3"]
    for pattern, rewrite in [(".", "x"), ("[^b]", "-"), ("", "|"), (r"\P{L}", "?")]:
        want = tf.strings.regex_replace(data, pattern, rewrite).numpy().tolist()
        got = regex_replace(np.array(data, object), np.array(pattern, object),
                            np.array(rewrite, object))
        assert [g.encode("utf-8", "surrogateescape") for g in got] == want, pattern
