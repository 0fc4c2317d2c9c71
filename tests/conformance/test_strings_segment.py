"""Conformance of TF1's StringSplit and UnsortedSegmentJoin (opp/strings_segment.py) against
TensorFlow, run through tf2ir.InferenceSession: byte splitting of mixed text (accents, CJK,
emoji: bytes that are not UTF-8 alone, carried exactly to a table lookup), delimiter sets,
skip_empty, empty strings and segments, TF's errors for bad segment ids, two batch sizes; and
keras-hub's GPT-2 BytePairTokenizer alone (regex pre-tokenization, byte → unicode table, BPE
merges) on hard text, its ragged ids exactly TF's."""

import gc
import tempfile

import numpy as np
import pytest

from tests.conformance.harness import convert_function, spec, check_exactly

tf = pytest.importorskip("tensorflow")
raw = tf.raw_ops

TESTED_DTYPES = {"StringSplit": ("string",), "UnsortedSegmentJoin": ("string",)}

TEXT = np.array(["The quick, brown fox.", "", "Café naïve RÉSUMÉ", "東京 and 北京", "😀 👍🏽 ok",
                 "a,,b;c", ",lead;trail,", "  spaces   here ", "line1\nline2\n", "Привет, мир!",
                 "x" * 70, ";"], object)
SMALL = TEXT[[2, 1, 5]]


def check(fn, inputs, specs, extra_inputs=()):
    """Convert `fn`, run it by tf2ir.InferenceSession and compare every output with TF's on
    `inputs` and each list of `extra_inputs`; the IR graph."""
    return check_exactly(fn, inputs, specs, extra_inputs)


def op_types(graph):
    out = set()
    for node in graph.nodes:
        out.add(node.op_type)
        for sub in node.subgraphs.values():
            out |= op_types(sub)
    return out


# -- StringSplit -----------------------------------------------------------------------------
@pytest.mark.parametrize("skip_empty", [True, False])
@pytest.mark.parametrize("delimiter", [",", ";,", " "])
def test_string_split_on_a_set_of_bytes(delimiter, skip_empty):
    def fn(x):
        return raw.StringSplit(input=x, delimiter=tf.constant(delimiter), skip_empty=skip_empty)
    graph = check(fn, [TEXT], [spec((None,), "string")], extra_inputs=[[SMALL], [TEXT[:0]]])
    assert "StringSplit" in op_types(graph)


def test_string_split_run_time_delimiter():
    def fn(x, d):
        return raw.StringSplit(input=x, delimiter=d, skip_empty=False)
    check(fn, [TEXT, np.array(", ", object)], [spec((None,), "string"), spec((), "string", "x1")],
          extra_inputs=[[SMALL, np.array(";", object)]])


def byte_table():
    """GPT-2's byte → printable character table (keras-hub's bytes_to_unicode)."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + \
        list(range(0xAE, 0x100))
    chars, extra = list(keep), 0
    for b in range(256):
        if b not in keep:
            keep.append(b)
            chars.append(256 + extra)
            extra += 1
    keys = tf.constant([bytes([b]) for b in keep])
    values = tf.constant([chr(c) for c in chars])
    return tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(keys, values), "")


@pytest.mark.parametrize("skip_empty", [False, True])
def test_bytes_split_into_a_table_and_joined_back(skip_empty):
    """Each byte (0x80-0xFF alone is no UTF-8) looked up in GPT-2's byte table and the row
    joined again: StringSplit with an empty delimiter and UnsortedSegmentJoin (reduce_join of a
    ragged tensor), as keras-hub's BytePairTokenizer holds them; the sparse indices and shape
    too."""
    table = byte_table()

    def fn(x):
        indices, values, shape = raw.StringSplit(input=x, delimiter="", skip_empty=skip_empty)
        chars = table.lookup(values)
        ragged = tf.RaggedTensor.from_value_rowids(chars, indices[:, 0], nrows=shape[0])
        return indices, shape, chars, tf.strings.reduce_join(ragged, axis=1, separator="|")
    graph = check(fn, [TEXT], [spec((None,), "string")], extra_inputs=[[SMALL], [TEXT[:0]]])
    found = op_types(graph)
    assert {"StringBytesSplit", "ByteStrings", "UnsortedSegmentJoin"} <= found
    assert "StringSplit" not in found


def test_tf_bytes_split_ragged():
    table = byte_table()

    def fn(x):
        ragged = table.lookup(tf.strings.bytes_split(x))
        return ragged.flat_values, ragged.row_splits
    check(fn, [TEXT], [spec((None,), "string")], extra_inputs=[[SMALL]])


def test_string_split_token_that_is_not_utf8_is_a_clear_error():
    """A delimiter byte inside a multi-byte character cuts it: TF gives the bytes, which the
    Python kernel cannot return, so the run fails naming the reason (no abort, no wrong
    text)."""
    import tf2ir
    from tf2ir.ir.onnx.runtime import KernelError
    fn = lambda x: raw.StringSplit(input=x, delimiter="é", skip_empty=True)  # noqa: E731
    with tempfile.TemporaryDirectory() as directory:
        path, _, _, _ = convert_function(fn, [spec((None,), "string")], directory)
        session = tf2ir.InferenceSession(path)
        assert len(session.run(None, {"x0": np.array(["abc", "aéb"], object)})[1]) == 3
        with pytest.raises(KernelError, match="not UTF-8"):
            session.run(None, {"x0": np.array(["naïve"], object)})
        del session
        gc.collect()


def test_string_split_kernel_matches_tf_bytes():
    """The kernel's byte splitting itself (tokens that are not UTF-8 included) against TF."""
    from tf2ir.opp.strings_segment import split_bytes
    for delimiter in (b"", b",", b"\xc3", "é".encode(), b" ,"):
        for skip in (True, False):
            got = [split_bytes(s.encode(), delimiter, skip) for s in TEXT]
            _, values, _ = raw.StringSplit(input=TEXT.astype(str), delimiter=delimiter,
                                           skip_empty=skip)
            assert [t for row in got for t in row] == list(values.numpy())


# -- UnsortedSegmentJoin --------------------------------------------------------------------
WORDS = np.array(["", "a", "", "Café", "東京", "", "😀", "x y", "", "b"], object)


@pytest.mark.parametrize("ids_dtype", ["int32", "int64"])
@pytest.mark.parametrize("separator", ["", ",", " | "])
def test_unsorted_segment_join_mixed_text_empty_strings_and_segments(separator, ids_dtype):
    """Leading empty strings vanish (the separator goes only after a non-empty prefix),
    later ones stay; segments no id names are empty strings."""
    ids = np.array([0, 0, 0, 2, 2, 0, 5, 2, 5, 0], ids_dtype)

    def fn(x, i, n):
        return tf.strings.unsorted_segment_join(x, i, n, separator=separator)
    check(fn, [WORDS, ids, np.array(7, ids_dtype)],
          [spec((None,), "string"), spec((None,), ids_dtype, "x1"), spec((), ids_dtype, "x2")],
          extra_inputs=[[WORDS[:3], ids[:3], np.array(1, ids_dtype)],
                        [WORDS[:0], ids[:0], np.array(2, ids_dtype)]])


def test_unsorted_segment_join_of_rows_and_by_2d_ids():
    x = WORDS.reshape(5, 2)

    def fn(x, i, j):
        return (tf.strings.unsorted_segment_join(x, i, 3, separator="-"),
                tf.strings.unsorted_segment_join(x, j, 4, separator="+"))
    i32 = lambda v: np.array(v, np.int32)  # noqa: E731
    check(fn, [x, i32([2, 0, 2, 2, 1]), i32([[1, 0], [3, 3], [0, 1], [1, 1], [0, 0]])],
          [spec((None, 2), "string"), spec((None,), "int32", "x1"),
           spec((None, 2), "int32", "x2")],
          extra_inputs=[[x[:2], i32([1, 1]), i32([[3, 0], [0, 3]])]])


def test_reduce_join_of_a_ragged_tensor():
    def fn(x):
        ragged = tf.strings.split(x)
        return tf.strings.reduce_join(ragged, axis=1, separator="_")
    check(fn, [TEXT], [spec((None,), "string")], extra_inputs=[[SMALL]])


@pytest.mark.parametrize("ids", [[0, -1, 1], [0, 3, 1]])
def test_unsorted_segment_join_bad_ids_fail_as_tf(ids):
    """A negative id or one not below num_segments: TF's InvalidArgument error, and the
    converted model's run fails with TF's message."""
    import tf2ir
    from tf2ir.ir.onnx.runtime import KernelError
    message = "segment_ids are not allowed to exceed num_segments or to have negative values"

    def fn(x, i):
        return tf.strings.unsorted_segment_join(x, i, 3)
    feed = [np.array(["a", "b", "c"], object), np.array(ids, np.int64)]
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        tf.function(fn)(*[tf.constant(a) for a in feed])
    specs = [spec((None,), "string"), spec((None,), "int64", "x1")]
    with tempfile.TemporaryDirectory() as directory:
        path, _, _, _ = convert_function(fn, specs, directory)
        session = tf2ir.InferenceSession(path)
        with pytest.raises(KernelError, match=message):
            session.run(None, {"x0": feed[0], "x1": feed[1]})
        del session
        gc.collect()


def test_unsorted_segment_join_refuses_bad_shapes_at_conversion():
    from tf2ir.ir.errors import ConversionError
    from tests.conformance.harness import single_op_graph
    from tf2ir.ir import TensorDesc
    x, ids = TensorDesc("string", (4, 2)), TensorDesc("int64", (3,))
    with pytest.raises(ConversionError, match="prefix"):
        single_op_graph("UnsortedSegmentJoin", [x, ids, np.array(2, np.int64)])
    with pytest.raises(ConversionError, match="non-negative"):
        single_op_graph("UnsortedSegmentJoin", [x, TensorDesc("int64", (4,)),
                                                np.array(-1, np.int64)])


# -- keras-hub's GPT-2 tokenizer alone ---------------------------------------------------------
HARD = np.array(["naïve café 😀 emoji 👍🏽 family 👨\u200d👩\u200d👧", "multiple    spaces\tand\ttabs",
                 "line1\nline2\n\nline4\r\n", "", " ", "   ", "\n", "日本語のテキスト、句読点。",
                 "Ünïcödé ÀÉÎÕÜ ǅ", "it's they're we've I'm you'll he'd", "numbers 12345 and 3.14",
                 "a\u00a0b\u2009c\u202fd\u3000e", "trailing space ", " leading", "Ελλάδα Москва",
                 "The quick brown fox jumps over the lazy dog."], object)


def test_gpt2_byte_pair_tokenizer_on_hard_text():
    """Regex pre-splitting (StaticRegexReplace, RegexSplitWithOffsets with GPT-2's pattern),
    the bytes of each piece through the byte → unicode table, the BPE merge loop and the ids:
    every id and row split TF's, on accents, CJK, emoji, runs of spaces, newlines and empty
    strings."""
    pytest.importorskip("keras_hub")
    pytest.importorskip("tensorflow_text")
    from tf2ir.tools import text_models
    import keras_hub
    vocab, merges = text_models.bpe_vocab_and_merges()
    tokenizer = keras_hub.tokenizers.BytePairTokenizer(vocabulary=vocab, merges=merges)

    def fn(x):
        ids = tokenizer(x)
        return ids.flat_values, ids.row_splits
    check(fn, [HARD], [spec((None,), "string")], extra_inputs=[[HARD[[0, 3, 7]]]])
