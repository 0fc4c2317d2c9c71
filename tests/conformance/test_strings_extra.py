"""Conformance of Fingerprint, StringNGrams, StringStrip, ReduceJoin, StringFormat and
(Static)RegexFullMatch (opp/strings_extra.py) against TensorFlow, run through tf2ir's
runtime entry on mixed case, accents, full-width, CJK, Cyrillic, emoji and empty strings, at
two batch sizes; and their kernels against TF where the runtime cannot carry the input
(bytes that are not UTF-8)."""

import os
import random
import subprocess
import sys
import tempfile

import numpy as np
import pytest

from tests.conformance.harness import as_text, assert_close, convert_function, spec
from tests.conformance.test_unicode import BATCH, OTHER, check

tf = pytest.importorskip("tensorflow")
raw = tf.raw_ops

TESTED_DTYPES = {
    "Fingerprint": ("string", "int32", "float32", "uint8"), "StringNGrams": ("string",),
    "StringStrip": ("string",), "ReduceJoin": ("string",),
    "StringFormat": ("int32", "int64", "float32", "float64", "bool", "string"),
    "StaticRegexFullMatch": ("string",), "RegexFullMatch": ("string",),
}

PADDED = np.array([" \t Hello \n", "ÀÉÎ ñ\r", "\u3000全角\u3000", "  ", "", "日本 語\v\f",
                   "Привет ", "😀 x 👍🏽 "], object)


# -- Fingerprint --------------------------------------------------------------------------------------
def test_fingerprint_of_strings_rank1_and_rank2():
    fn = lambda x, y: [tf.fingerprint(x), tf.fingerprint(y)]  # noqa: E731
    check(fn, [BATCH, BATCH.reshape(4, 2)],
          [spec((None,), "string", "x"), spec((None, 2), "string", "y")],
          [[OTHER, OTHER[:6].reshape(3, 2)]])


@pytest.mark.parametrize("dtype", ["int32", "float32", "uint8"])
def test_fingerprint_of_numbers_hashes_each_row_bytes(dtype):
    data = np.arange(24).reshape(4, 6).astype(dtype)
    check(lambda x: tf.fingerprint(x), [data], [spec((None, 6), dtype)],
          [[data[:1] * 3], [data[:0]]])


def test_fingerprint_kernel_is_farmhash64_of_the_bytes_little_endian():
    from tf2ir.opp.fingerprint import fingerprint64
    from tf2ir.opp.strings_extra import fingerprint_kernel
    data = [b"\xff\xfe", b"", "日本語".encode(), b"a" * 100]
    got = fingerprint_kernel(np.array(data, object))
    assert [bytes(row) for row in got] == [fingerprint64(d).to_bytes(8, "little") for d in data]
    assert_close(tf.fingerprint(data).numpy(), got)


# -- StringNGrams ----------------------------------------------------------------------------------
@pytest.mark.parametrize("widths,pad,preserve", [([2], -1, False), ([1, 3], 1, False),
                                                 ([4], 0, True), ([2, 5], 2, True)])
def test_ngrams_of_ragged_rows(widths, pad, preserve):
    tokens = np.array(["The", "quick", "日本", "Привет", "😀", "", "ＡＢ", "é", "x"], object)

    def fn(data, splits):
        out = raw.StringNGrams(data=data, data_splits=splits, separator="·",
                               ngram_widths=widths, left_pad="<s>", right_pad="</s>",
                               pad_width=pad, preserve_short_sequences=preserve)
        return [out.ngrams, out.ngrams_splits]
    check(fn, [tokens, np.array([0, 2, 2, 3, 9], np.int64)],
          [spec((None,), "string", "d"), spec((None,), "int64", "s")],
          [[tokens[:4], np.array([0, 1, 4], np.int64)], [tokens[:0], np.array([0, 0], np.int64)]])


def test_ngrams_with_int32_splits_from_tf_strings_ngrams():
    def fn(data, splits):
        rows = tf.RaggedTensor.from_row_splits(data, splits, validate=False)
        grams = tf.strings.ngrams(rows, 2, separator=" ", pad_values=("[", "]"))
        return [grams.flat_values, grams.row_splits]
    check(fn, [BATCH, np.array([0, 3, 8], np.int32)],
          [spec((None,), "string", "d"), spec((None,), "int32", "s")],
          [[OTHER, np.array([0, 1, 1, 8], np.int32)]])


# -- StringStrip --------------------------------------------------------------------------------------
@pytest.mark.parametrize("data,other", [(PADDED[0], PADDED[3]), (PADDED, PADDED[:4]),
                                        (PADDED.reshape(2, 4), PADDED[:4].reshape(1, 4))],
                         ids=["rank0", "rank1", "rank2"])
def test_strip_ascii_whitespace_only(data, other):
    data = np.asarray(data, object)
    check(lambda x: tf.strings.strip(x), [data], [spec((None,) * data.ndim, "string")],
          [[np.asarray(other, object)]])


# -- ReduceJoin ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("axis,keep", [(0, False), (1, True), (-1, False), ([1, 0], False),
                                       ([0, 1], True), (None, False)])
def test_reduce_join_rank2(axis, keep):
    fn = lambda x: tf.strings.reduce_join(x, axis=axis, keepdims=keep,  # noqa: E731
                                          separator="|")
    check(fn, [BATCH.reshape(2, 4)], [spec((None, None), "string")],
          [[OTHER[:6].reshape(3, 2)], [np.zeros((0, 2), object)]])


def test_reduce_join_rank3_axes_in_the_listed_order():
    data = np.array([f"{i}é" for i in range(24)], object).reshape(2, 3, 4)
    fn = lambda x: [raw.ReduceJoin(inputs=x, reduction_indices=[2, 0], separator="-"),  # noqa
                    raw.ReduceJoin(inputs=x, reduction_indices=[0, 2], separator="-",
                                   keep_dims=True)]
    check(fn, [data], [spec((2, None, 4), "string")], [[data[:, :1]]])


def test_reduce_join_axes_at_run_time():
    fn = lambda x, a: tf.strings.reduce_join(x, axis=a, separator="/")  # noqa: E731
    check(fn, [BATCH.reshape(2, 4), np.array(1, np.int32)],
          [spec((None, None), "string", "x"), spec((), "int32", "a")],
          [[OTHER[:6].reshape(3, 2), np.array(0, np.int32)]])


# -- StringFormat --------------------------------------------------------------------------------------
@pytest.mark.parametrize("summarize", [3, 1, 0, -1])
def test_format_numbers_and_strings(summarize):
    def fn(i, f, s):
        return tf.strings.format("ids={} scores={} text={} d={} b={}",
                                 [i, f, s, tf.cast(f, tf.float64), i > 2], summarize=summarize)
    rng = np.random.default_rng(4)
    ints = np.arange(-5, 19, dtype=np.int32).reshape(4, 6)
    floats = (rng.standard_normal((3, 7)) * 10.0 ** rng.integers(-8, 9, (3, 7))).astype(np.float32)
    check(fn, [ints, floats, BATCH.reshape(2, 4)],
          [spec((None, None), "int32", "i"), spec((None, None), "float32", "f"),
           spec((None, None), "string", "s")],
          [[ints[:1, :2], floats[:2, :1], OTHER[:2].reshape(1, 2)]])


def test_format_kernel_floats_against_tf():
    from tf2ir.opp.strings_extra import string_format_kernel
    rng = np.random.default_rng(9)
    for dtype in (np.float32, np.float64):
        values = (rng.standard_normal(400) * 10.0 ** rng.integers(-30, 30, 400)).astype(dtype)
        values[:6] = [0.0, -0.0, np.inf, -np.inf, np.nan, 0.1]
        want = raw.StringFormat(inputs=[values], template="{}", placeholder="{}",
                                summarize=-1).numpy().decode()
        assert string_format_kernel(values, template="{}", placeholder="{}",
                                    summarize=-1)[()] == want


# -- RegexFullMatch (onnxruntime-extensions' RE2) ------------------------------------------------------
RUN_APART = """
import sys, numpy as np, tf2ir
feeds = dict(np.load(sys.argv[1], allow_pickle=True))
np.savez(sys.argv[1], *tf2ir.InferenceSession(sys.argv[2]).run(None, feeds))
"""


@pytest.mark.parametrize("pattern", [r"[a-z ]+", r"(?i)hello.*", r".*日本.*", r"", r"\p{Cyrillic}+.*",
                                     r"a|ab"])
def test_regex_full_match(pattern):
    """Run in a process without TensorFlow, whose RE2 breaks the extensions' (test_strings)."""
    texts = np.array(list(BATCH) + ["hello", "ab", "abc", "a"], object)
    fn = lambda x: [tf.strings.regex_full_match(x, pattern),  # noqa: E731
                    raw.RegexFullMatch(input=x, pattern=tf.constant(pattern))]
    with tempfile.TemporaryDirectory() as directory:
        path, _, _, _ = convert_function(fn, [spec((None,), "string")], directory)
        data = os.path.join(directory, "feeds.npz")
        for feed in (texts, texts[3:5]):
            np.savez(data, x0=feed)
            subprocess.run([sys.executable, "-c", RUN_APART, data, path], check=True)
            with np.load(data, allow_pickle=True) as saved:
                got = [saved["arr_0"], saved["arr_1"]]
            want = fn(tf.constant(feed))
            for w, g in zip(want, got):
                assert_close(w.numpy(), g)


# -- refusals and hostile bytes ----------------------------------------------------------------------------
@pytest.mark.parametrize("fn,message", [
    (lambda x: tf.strings.format("{}", tf.complex(tf.cast(tf.strings.length(x), tf.float32), 0.0)),
     "dtype complex64"),
    (lambda x: raw.StringFormat(inputs=[x], template="{}", placeholder=""), "empty placeholder"),
])
def test_unsupported_forms_are_refused(fn, message):
    from tf2ir.ir.errors import ConversionError
    with tempfile.TemporaryDirectory() as directory:
        with pytest.raises(ConversionError, match=message):
            convert_function(fn, [spec((None,), "string")], directory)


def test_regex_full_match_with_a_run_time_pattern_is_refused():
    from tf2ir.ir.errors import ConversionError
    fn = lambda x, p: tf.strings.regex_full_match(x, p)  # noqa: E731
    with tempfile.TemporaryDirectory() as directory:
        with pytest.raises(ConversionError, match="node 'RegexFullMatch'.*one constant string"):
            convert_function(fn, [spec((None,), "string", "x"), spec((), "string", "p")],
                             directory)


def test_ngrams_kernel_refuses_a_row_too_large_to_make():
    from tf2ir.opp.strings_extra import string_ngrams
    with pytest.raises(ValueError, match="more than this kernel makes"):
        string_ngrams(np.array(["a"], object), np.array([0, 1]), " ", [2 ** 30], "", "", -1, False)


def test_kernels_on_bytes_that_are_not_utf8():
    from tf2ir.opp.strings_extra import (
        reduce_join_kernel, string_ngrams, string_strip, fingerprint_kernel,
    )
    from tf2ir.opp.unicode import raw_bytes
    rng = random.Random(2)
    data = [bytes(rng.randrange(256) for _ in range(rng.randint(0, 9))) + b" \x00\t"
            for _ in range(40)]
    array = np.array(data, object)
    assert [raw_bytes(s) for s in string_strip(array)] == list(tf.strings.strip(data).numpy())
    assert_close(tf.fingerprint(data).numpy(), fingerprint_kernel(array))
    joined = reduce_join_kernel(array.reshape(8, 5), None, [1], False, "\xff")
    want = raw.ReduceJoin(inputs=array.reshape(8, 5), reduction_indices=[1],
                          separator="\xff").numpy()
    assert [raw_bytes(s) for s in joined] == list(want)
    grams = string_ngrams(array, np.array([0, 10, 40], np.int32), " ", [2, 3], "<", ">", 1, False)
    want = raw.StringNGrams(data=data, data_splits=[0, 10, 40], separator=" ", ngram_widths=[2, 3],
                            left_pad="<", right_pad=">", pad_width=1,
                            preserve_short_sequences=False)
    assert [raw_bytes(s) for s in grams[0]] == list(want.ngrams.numpy())
    assert_close(want.ngrams_splits.numpy(), grams[1])
