"""Conformance of the Unicode ops (opp/unicode.py) against TensorFlow: StringLength,
UnicodeDecode(WithOffsets), UnicodeEncode and UnicodeTranscode, converted and run through
tf2ir's runtime entry (tf2ir.InferenceSession) on mixed case, accents, full-width, CJK,
Cyrillic, emoji, control characters and empty strings, at ranks 0-2 and two batch sizes.
Code points, offsets and splits must be exactly TF's.

Bytes that are not UTF-8, and NUL bytes, cannot reach a Python kernel through onnxruntime
(onnxruntime-extensions' Python ops abort on the first and cut strings at the second), so
the kernels meet them directly, compared with TF's ops on the same bytes."""

import gc
import random
import tempfile

import numpy as np
import pytest

from tests.conformance.harness import as_text, assert_close, convert_function, spec, check_exactly

tf = pytest.importorskip("tensorflow")
raw = tf.raw_ops

TESTED_DTYPES = {
    "StringLength": ("string",), "UnicodeDecode": ("string",),
    "UnicodeDecodeWithOffsets": ("string",), "UnicodeEncode": ("int32",),
    "UnicodeTranscode": ("string",),
}

TEXTS = ["Hello World", "MiXeD cAsE", "ÀÉÎõü ñ Straße", "ＡＢＣ　ｆｕｌｌ１２", "日本語のテキスト",
         "Привет, мир!", "emoji 😀👍🏽 🇩🇪", "", "tab\tnew\nline\x01\x1f", "  padded  ", "x" * 70]
BATCH = np.array(TEXTS[:8], object)
OTHER = np.array(TEXTS[3:], object)          # a second batch size


def check(fn, inputs, specs=None, extra_inputs=()):
    """Convert `fn`, run it by tf2ir.InferenceSession and compare every output with TF's
    exactly (strings as text). Returns the IR graph."""
    arrays = [np.asarray(a) for a in inputs]
    if specs is None:
        specs = [spec(a.shape, "string" if a.dtype == object else a.dtype.name, f"x{i}")
                 for i, a in enumerate(arrays)]
    return check_exactly(fn, arrays, specs, extra_inputs)


def ranks(batch, other):
    """(inputs, specs, extra inputs) at ranks 0, 1 and 2, each with a second batch size."""
    return [([batch[0]], [spec((), "string")], [[batch[4]]]),
            ([batch], [spec((None,), "string")], [[other]]),
            ([batch.reshape(2, -1)], [spec((None, None), "string")],
             [[other.reshape(-1, 2)], [np.zeros((0, 3), object)]])]


RANKS = ranks(BATCH, OTHER[:8])


# -- StringLength ---------------------------------------------------------------------------------
@pytest.mark.parametrize("case", range(3), ids=["rank0", "rank1", "rank2"])
def test_string_length_bytes_and_chars(case):
    inputs, specs, extra = RANKS[case]
    fn = lambda x: [tf.strings.length(x), tf.strings.length(x, unit="UTF8_CHAR")]  # noqa: E731
    check(fn, inputs, specs, extra)


# -- UnicodeDecode ----------------------------------------------------------------------------------
@pytest.mark.parametrize("case", range(3), ids=["rank0", "rank1", "rank2"])
def test_decode_with_offsets(case):
    """int64 splits only: TF 2.21's UnicodeDecodeWithOffsets aborts the process (a CHECK on
    the splits' dtype) with Tsplits int32; UnicodeDecode takes both (below)."""
    inputs, specs, extra = RANKS[case]

    def fn(x):
        out = raw.UnicodeDecodeWithOffsets(input=x, input_encoding="UTF-8", errors="replace",
                                           replace_control_characters=True,
                                           replacement_char=63)
        return [out.row_splits, out.char_values, out.char_to_byte_starts]
    check(fn, inputs, specs, extra)


def test_decode_ragged_and_to_dense():
    """tf.strings.unicode_decode as models write it: ragged code points padded to a dense
    batch, and re-encoded."""
    def fn(x):
        chars = tf.strings.unicode_decode(x, "UTF-8")
        return [chars.to_tensor(default_value=-1), tf.strings.unicode_encode(chars, "UTF-8")]
    check(fn, [BATCH], [spec((None,), "string")], [[OTHER]])


@pytest.mark.parametrize("errors,splits", [("ignore", "int32"), ("strict", "int64")])
def test_decode_without_offsets(errors, splits):
    fn = lambda x: list(raw.UnicodeDecode(input=x, input_encoding="UTF-8",  # noqa: E731
                                          errors=errors, Tsplits=splits))
    check(fn, [BATCH.reshape(4, 2)], [spec((None, 2), "string")], [[OTHER[:6].reshape(3, 2)]])


# -- UnicodeEncode -------------------------------------------------------------------------------------
@pytest.mark.parametrize("errors,replacement", [("replace", 0xFFFD), ("replace", 0xD800),
                                                ("ignore", 63)])
@pytest.mark.parametrize("splits", ["int64", "int32"])
def test_encode_valid_and_invalid_code_points(errors, replacement, splits):
    values = np.array([72, 105, -1, 0xE9, 0x65E5, 0xD800, 0x1F600, 0x110000, 0x1F, 0x10FFFF, 0x41F],
                      np.int32)
    fn = lambda v, s: raw.UnicodeEncode(  # noqa: E731
        input_values=v, input_splits=s, errors=errors, output_encoding="UTF-8",
        replacement_char=replacement)
    check(fn, [values, np.array([0, 3, 3, 7, 11], splits)],
          [spec((None,), "int32", "v"), spec((None,), splits, "s")],
          [[values[:4], np.array([0, 4], splits)], [values[:0], np.array([0, 0, 0], splits)]])


def test_encode_strict_fails_the_run_with_a_kernel_error():
    import tf2ir
    from tf2ir.ir.onnx.runtime import KernelError
    fn = lambda v, s: raw.UnicodeEncode(input_values=v, input_splits=s,  # noqa: E731
                                        errors="strict", output_encoding="UTF-8")
    specs = [spec((None,), "int32", "v"), spec((None,), "int64", "s")]
    with tempfile.TemporaryDirectory() as directory:
        path, _, _, _ = convert_function(fn, specs, directory)
        session = tf2ir.InferenceSession(path)
        ok = session.run(None, {"v": np.array([97, 0x4E2D], np.int32), "s": np.array([0, 2])})
        assert as_text(ok[0]).tolist() == ["a中"]
        with pytest.raises(KernelError, match="surrogate"):
            session.run(None, {"v": np.array([0xD800], np.int32), "s": np.array([0, 1])})
        del session
        gc.collect()


# -- UnicodeTranscode --------------------------------------------------------------------------------
@pytest.mark.parametrize("case", range(3), ids=["rank0", "rank1", "rank2"])
def test_transcode_utf8_replacing_controls(case):
    inputs, specs, extra = RANKS[case]
    fn = lambda x: tf.strings.unicode_transcode(  # noqa: E731
        x, "UTF-8", "UTF-8", replacement_char=0x2022, replace_control_characters=True)
    check(fn, inputs, specs, extra)


# -- refusals -------------------------------------------------------------------------------------
@pytest.mark.parametrize("fn,message", [
    (lambda x: tf.strings.unicode_transcode(x, "UTF-8", "UTF-16-BE"),
     "output_encoding 'UTF-16-BE'"),
    (lambda x: raw.UnicodeDecode(input=x, input_encoding="ISO-8859-1"), "input_encoding"),
    (lambda x: raw.UnicodeDecode(input=x, input_encoding="UTF-8", replacement_char=-1),
     "replacement_char -1"),
])
def test_unsupported_attributes_are_refused(fn, message):
    from tf2ir.ir.errors import ConversionError
    with tempfile.TemporaryDirectory() as directory:
        with pytest.raises(ConversionError, match=message):
            convert_function(fn, [spec((None,), "string")], directory)


# -- bytes that are not UTF-8: the kernels against TF's ops ------------------------------------------
PIECES = [b"a", b"Z", b"\x00", b"\x01", b"\x7f", b"\xc3\xa9", b"\xe4\xb8\xad", b"\xf0\x9f\x98\x80",
          b"\xff", b"\x80", b"\xc0", b"\xe0\x80", b"\xed\xa0\x80", b"\xf4\x90", b"\xe4", b"\xf0\x9f",
          b"\xd8", b"\xdc", b"\x00\x00", b"\x00\x10\xff\xff", b" "]
_RNG = random.Random(25)
HOSTILE = [b"".join(_RNG.choice(PIECES) for _ in range(_RNG.randint(0, 7))) for _ in range(400)] \
    + [bytes(_RNG.randrange(256) for _ in range(_RNG.randint(0, 9))) for _ in range(400)]


@pytest.mark.parametrize("encoding", ["UTF-8", "UTF-16-BE", "UTF-32-BE"])
@pytest.mark.parametrize("errors,control", [("replace", False), ("replace", True),
                                            ("ignore", True)])
def test_decode_kernel_on_invalid_bytes(encoding, errors, control):
    from tf2ir.opp.unicode import unicode_decode_with_offsets, unicode_transcode, raw_bytes
    want = raw.UnicodeDecodeWithOffsets(input=HOSTILE, input_encoding=encoding, errors=errors,
                                        replacement_char=0xFFFD,
                                        replace_control_characters=control)
    got = unicode_decode_with_offsets(np.array(HOSTILE, object), encoding, errors, 0xFFFD,
                                      control, "int64")
    for w, g in zip([want.row_splits, want.char_values, want.char_to_byte_starts], got):
        assert_close(w.numpy(), g)
    want = raw.UnicodeTranscode(input=HOSTILE, input_encoding=encoding, output_encoding="UTF-8",
                                errors=errors, replacement_char=0x3F,
                                replace_control_characters=control).numpy()
    got = unicode_transcode(np.array(HOSTILE, object), encoding, "UTF-8", errors, 0x3F, control)
    assert [raw_bytes(s) for s in got] == list(want)


def test_length_and_strict_decode_kernels_on_invalid_bytes():
    from tf2ir.opp.unicode import string_length, unicode_decode
    for unit in ("BYTE", "UTF8_CHAR"):
        assert_close(tf.strings.length(HOSTILE, unit=unit).numpy(),
                     string_length(np.array(HOSTILE, object), unit))
    for data in HOSTILE[:60]:
        try:
            raw.UnicodeDecode(input=[data], input_encoding="UTF-8", errors="strict")
            refused = False
        except tf.errors.InvalidArgumentError:
            refused = True
        if refused:
            with pytest.raises(ValueError, match="invalid UTF-8"):
                unicode_decode(np.array([data], object), "UTF-8", "strict")
        else:
            unicode_decode(np.array([data], object), "UTF-8", "strict")
