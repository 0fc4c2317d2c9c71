"""Conformance of tensorflow-text's splitting ops (opp/tftext_tokenize.py) against TensorFlow,
run through tf2ir.InferenceSession: WhitespaceTokenizer, UnicodeScriptTokenizer, ngrams with
STRING_JOIN and RoundRobinTrimmer, on mixed case, accents, full-width, CJK and Cyrillic text,
punctuation, empty strings and long words, at two batch sizes. Tokens, offsets and splits
must be equal."""

import gc
import tempfile

import numpy as np
import pytest

from tests.conformance.harness import as_text, assert_close, convert_function, check_exactly

tf = pytest.importorskip("tensorflow")
text = pytest.importorskip("tensorflow_text")

TESTED_DTYPES = {
    "TFText>WhitespaceTokenizeWithOffsetsV2": ("string",),
    "UnicodeScriptTokenizeWithOffsets": ("int32",),
    "TFText>NgramsStringJoin": ("string",),
    "TFText>RoundRobinTrim": ("int32", "string"),
}

TEXTS = np.array(["Hello World", "", "ÄÖü Straße\tnaïve\ncafé", "привет, МИР!", "日本語のテスト",
                  "ＡＢＣ full-width！ １２３", "MiXeD, Case... !?", "   spaces   around  ",
                  "x" * 300, "a \u3000b \u00a0c \u2003d", "a\u0301e\u0308 combining",
                  "emoji 🙂🙂 ߷ rare", " \t\n "], object)
SMALL = TEXTS[[1, 3, 9]]
STRINGS = [tf.TensorSpec([None], tf.string, name="x0")]


def check_text_op(fn, inputs, specs, extra_inputs=(), native=True):
    """Convert `fn`, run it by tf2ir.InferenceSession on `inputs` (and each list of
    `extra_inputs`; `native` False: Python kernels only) and compare every output with TF's;
    returns the IR graph."""
    return check_exactly(fn, inputs, specs, extra_inputs, native=native)


def flat(*ragged):
    out = []
    for r in ragged:
        out += [r.flat_values] + list(r.nested_row_splits)
    return out


# -- WhitespaceTokenizer ------------------------------------------------------------------------
@pytest.mark.parametrize("native", [True, False], ids=["native-if-built", "python"])
def test_whitespace_tokens_offsets_and_splits(native):
    tokenizer = text.WhitespaceTokenizer()
    graph = check_text_op(lambda x: flat(*tokenizer.tokenize_with_offsets(x)), [TEXTS], STRINGS,
                          extra_inputs=[[SMALL]], native=native)
    assert "WhitespaceTokenize" in {n.op_type for n in graph.nodes}


QUIRKY = np.array(["a\u3000b", "x\u00a0y\u2003", "日本\u3000語 テ", "\u3000lead"], object)


def test_whitespace_ended_by_a_multibyte_space_keeps_tfs_offsets():
    """TF ends a token that a multi-byte whitespace character ends one byte before that
    character's end (its token holds the character's first bytes): the offsets agree in
    the converted model, and the kernel's token bytes are TF's."""
    from tf2ir.opp.tftext_tokenize import whitespace_of_config, whitespace_tokenize
    tokenizer = text.WhitespaceTokenizer()

    def offsets(x):
        tokens, starts, ends = tokenizer.tokenize_with_offsets(x)
        return tokens.row_splits, starts.flat_values, ends.flat_values
    check_text_op(offsets, [QUIRKY], STRINGS, extra_inputs=[[QUIRKY[:1]]])
    check_text_op(offsets, [QUIRKY], STRINGS, native=False)
    want = tokenizer.tokenize(tf.constant(QUIRKY)).flat_values.numpy().tolist()
    config = tokenizer._config
    config = config.numpy() if hasattr(config, "numpy") else config
    tokens = whitespace_tokenize(QUIRKY, whitespace=whitespace_of_config(config))[0]
    got = [t if isinstance(t, bytes) else t.encode() for t in tokens]
    assert got == want and b"a\xe3\x80" in got


# -- UnicodeScriptTokenizer -----------------------------------------------------------------------
def codepoints(texts):
    ragged = tf.strings.unicode_decode(tf.constant(texts), "UTF-8")
    return ragged.flat_values.numpy(), ragged.row_splits.numpy()


@pytest.mark.parametrize("keep", [False, True])
def test_unicode_script_op_on_codepoints(keep):
    from tensorflow_text.python.ops.unicode_script_tokenizer import \
        gen_unicode_script_tokenizer as gen

    def fn(values, splits):
        return gen.unicode_script_tokenize_with_offsets(input_values=values,
                                                        input_splits=splits,
                                                        keep_whitespace=keep)
    values, splits = codepoints(TEXTS)
    odd = np.array([-1, 0x110000, 0x378, 0x41, 0x300, 0x20, 0xE000, 0x10FFFF], np.int32)
    specs = [tf.TensorSpec([None], tf.int32, name="values"),
             tf.TensorSpec([None], tf.int64, name="splits")]
    check_text_op(fn, [values, splits], specs,
                  extra_inputs=[list(codepoints(SMALL)), [odd, np.array([0, 3, 8])]])


def test_unicode_script_tokenizer():
    tokenizer = text.UnicodeScriptTokenizer()
    graph = check_text_op(lambda x: flat(*tokenizer.tokenize_with_offsets(x)), [TEXTS], STRINGS,
                          extra_inputs=[[SMALL]])
    assert "UnicodeScriptTokenize" in {n.op_type for n in graph.nodes}


# -- ngrams ------------------------------------------------------------------------------------
@pytest.mark.parametrize("width, separator", [(2, "_"), (3, " "), (1, "")])
def test_ngrams_of_whitespace_tokens(width, separator):
    def fn(x):
        tokens = text.WhitespaceTokenizer().tokenize(x)
        return flat(text.ngrams(tokens, width, reduction_type=text.Reduction.STRING_JOIN,
                                string_separator=separator))
    graph = check_text_op(fn, [TEXTS], STRINGS, extra_inputs=[[SMALL]])
    assert "NgramsStringJoin" in {n.op_type for n in graph.nodes}


def test_ngrams_of_a_ragged_rank_two_tensor():
    def fn(x):
        tokens = text.WhitespaceTokenizer().tokenize(x)      # [rows, 2, (tokens)]
        return flat(text.ngrams(tokens, 2, reduction_type=text.Reduction.STRING_JOIN,
                                string_separator="+"))
    matrix = TEXTS[:12].reshape(6, 2)
    check_text_op(fn, [matrix], [tf.TensorSpec([None, 2], tf.string, name="x0")],
                  extra_inputs=[[matrix[:1]]])


def test_ngrams_of_a_dense_tensor():
    """RAGGED_RANK 0: n-grams along the last axis of a dense tensor. TF's own kernel crashed
    (a segmentation fault) on some such inputs inside a tf.function here, so the reference is
    eager TF on short ASCII rows."""
    import tf2ir

    def fn(x):
        return text.ngrams(x, 2, reduction_type=text.Reduction.STRING_JOIN, string_separator="|")
    matrix = np.array([["a", "bb", "c"], ["", "e", "ff"]], object)
    with tempfile.TemporaryDirectory() as directory:
        path, graph, _, _ = convert_function(
            fn, [tf.TensorSpec([None, 3], tf.string, name="x0")], directory)
        assert "NgramsStringJoin" in {n.op_type for n in graph.nodes}
        session = tf2ir.InferenceSession(path)
        for feed in (matrix, matrix[1:]):
            want = as_text(fn(tf.constant(feed)).numpy())
            assert_close(want, session.run(None, {"x0": feed})[0])
        del session
        gc.collect()


# -- RoundRobinTrimmer ----------------------------------------------------------------------------
def segments(rows, count, seed, dtype=np.int32):
    rng = np.random.default_rng(seed)
    out = []
    for k in range(count):
        lengths = rng.integers(0, 9, rows)
        splits = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        values = (np.arange(splits[-1]) + 100 * k).astype(dtype)
        out += [values, splits]
    return out


@pytest.mark.parametrize("count, limit", [(2, 0), (2, 5), (3, 8), (3, 100), (2, 1)])
def test_round_robin_trim(count, limit):
    def fn(*parts):
        ragged = [tf.RaggedTensor.from_row_splits(parts[2 * k], parts[2 * k + 1], validate=False)
                  for k in range(count)]
        return flat(*text.RoundRobinTrimmer(max_seq_length=limit).trim(ragged))
    specs = []
    for k in range(count):
        specs += [tf.TensorSpec([None], tf.int32, name=f"v{k}"),
                  tf.TensorSpec([None], tf.int64, name=f"s{k}")]
    graph = check_text_op(fn, segments(7, count, limit), specs,
                          extra_inputs=[segments(2, count, limit + 1)])
    assert "RoundRobinTrim" in {n.op_type for n in graph.nodes}


def test_round_robin_trim_of_strings():
    def fn(a, b):
        tokens = text.WhitespaceTokenizer()
        first, second = tokens.tokenize(a), tokens.tokenize(b)
        return flat(*text.RoundRobinTrimmer(max_seq_length=4).trim([first, second]))
    check_text_op(fn, [TEXTS, TEXTS[::-1]], [tf.TensorSpec([None], tf.string, name="a"),
                                             tf.TensorSpec([None], tf.string, name="b")],
                  extra_inputs=[[SMALL, SMALL[::-1]]])


def test_round_robin_allot_is_tfs_rule():
    """Smallest segments kept whole while every segment still fits, the rest shared evenly,
    the remainder handed out one each in segment order."""
    from tf2ir.opp.tftext_tokenize import round_robin_allot
    assert round_robin_allot([3, 10, 10], 10) == [3, 4, 3]
    assert round_robin_allot([1, 1], 5) == [1, 1]
    assert round_robin_allot([5, 5], 0) == [0, 0]
    assert round_robin_allot([2, 9, 4], -3) == [0, 0, 0]


def test_without_the_regex_package_the_script_kernel_says_so(monkeypatch):
    import sys
    from tf2ir.opp import tftext_tokenize as ops
    monkeypatch.setitem(sys.modules, "regex", None)
    monkeypatch.setattr(ops, "_SCRIPT_PATTERN", [])
    monkeypatch.setattr(ops, "_SCRIPTS", {})
    with pytest.raises(RuntimeError, match="needs the 'regex' package"):
        ops.unicode_script_tokenize(np.array([0x41], np.int32), np.array([0, 1]))


@pytest.mark.parametrize("reader", ["native", "tf"])
def test_round_robin_trim_inside_a_saved_model(tmp_path, monkeypatch, reader):
    """Inside a function body TF names RoundRobinTrim's outputs `values:i` and `row_splits:i`,
    lists of N tensors each: the SavedModel's trimmed segments and splits are TF's."""
    import tf2ir
    monkeypatch.setenv("TF2IR_SAVED_MODEL_READER", reader)

    class Trim(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="a"),
                                      tf.TensorSpec([None], tf.string, name="b")])
        def serve(self, a, b):
            tokens = text.WhitespaceTokenizer()
            first, second = text.RoundRobinTrimmer(max_seq_length=5).trim(
                [tokens.tokenize(a), tokens.tokenize(b)])
            return {"v0": first.flat_values, "v1": second.flat_values,
                    "s0": first.row_splits, "s1": second.row_splits}
    module = Trim()
    tf.saved_model.save(module, str(tmp_path / "sm"), signatures={"serving_default": module.serve})
    session = tf2ir.InferenceSession(
        tf2ir.convert(str(tmp_path / "sm"), quiet=True).model.SerializeToString())
    names = [o.name for o in session.get_outputs()]
    for a, b in ((TEXTS, TEXTS[::-1]), (SMALL, SMALL[::-1])):
        want = module.serve(tf.constant(a), tf.constant(b))
        got = dict(zip(names, session.run(None, {"a": a, "b": b})))
        for key in ("v0", "v1", "s0", "s1"):
            assert_close(as_text(want[key].numpy()), got[key], what=key)
    del session
