"""tf2ir's own native tensorflow-text kernels (opp/native/text.cc: WordpieceTokenize,
FastBertNormalize, WhitespaceTokenize) against their Python kernels (opp/tftext_wordpiece.py,
opp/tftext_normalize.py, opp/tftext_tokenize.py) and TF-text: small tf.functions built with
TF-text's Python classes, converted by tf2ir.convert, run by tf2ir.InferenceSession natively
(native_ops asserted, python_ops == 0) and with native=False (python_ops asserted), every output
compared exactly (strings, offsets, row partitions, dtypes) on mixed case, accents, full-width,
CJK and Cyrillic text, punctuation, empty strings and long words, at two batch sizes and an
empty batch."""

import numpy as np
import pytest

import tf2ir
from tf2ir.ir.onnx.runtime import KernelError
from tf2ir.opp.tftext_normalize import DOMAIN
from tf2ir.plugins.builtin import native

tf = pytest.importorskip("tensorflow")
text = pytest.importorskip("tensorflow_text")
LIBRARY = next(lib for lib in native.tf2ir_native_libraries() if lib.domain == DOMAIN)
pytestmark = pytest.mark.skipif(LIBRARY.path is None, reason="tf2ir's native library was not built")

TEXTS = ["The Quick BROWN Fox!", "", "Ünïcödé e\u0301te\u0301 ÇA", "ＡＢＣ ｆｕｌｌ－ｗｉｄｔｈ！１２",
         "日本語のテキスト、漢字。 日本", "Привет, МИР! Ёлка привет", "ΣΊΣΥΦΟΣ ὈΔΥΣΣΕΎΣ",
         "ﬁnal ﬀ Straße ẞ İ", "soft\u00adhyphen zero\u200bwidth", "tab\there\nnew\x07bell\x1fctl",
         "don't... stop?! a,b.c", "x" * 120, "xxxxxxx quickly thebrowns", "  leading and trailing  ",
         "①②③ ½ ™ ㎏ ℃", "emoji 🙂🙂 ߷ rare", " \t\n ", "é日本ｆｕ при"]
BATCHES = [np.array(TEXTS, object), np.array(TEXTS[3:6], object), np.array([], object)]
VOCAB = ["[UNK]", "[CLS]", "the", "qu", "##ick", "##ly", "brown", "##s", "fox", "a", "##b", "##c",
         "b", "c", "!", ",", ".", "'", "é", "##é", "t", "##te", "日", "本", "##本", "при", "##вет",
         "мир", "ｆ", "##ｕ", "x", "##x", "##xx", "##xxx", "don", "##'", "##t", "Ü", "##n", "de",
         "##e", "@@x", "@@é"]
SPEC = [tf.TensorSpec([None], tf.string)]


def _text(array):
    array = np.asarray(array)
    if array.dtype != object:
        return array
    out = np.empty(array.shape, object)
    out.reshape(-1)[:] = [v.decode("utf-8") for v in array.reshape(-1)]
    return out


def _same(got, want, what):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (what, got.dtype, want.dtype, got.shape,
                                                                 want.shape)
    assert got.tolist() == want.tolist(), what


def check(fn, op, batches=BATCHES, outputs=None):
    """Convert the tf.function `fn` (1-D strings in); every batch through the native path,
    the Python kernels and TF, compared exactly (`outputs`: the indices compared, all if None).
    Every node of tf2ir's domains is one the native library serves (StringSplitV2, the vocabulary
    table's StringToHashBucketFast beside `op`)."""
    model = tf2ir.convert(tf.function(fn, input_signature=SPEC), quiet=True).model
    assert op in {n.op_type for n in model.graph.node if n.domain == DOMAIN}
    custom = [n for n in model.graph.node if n.domain.startswith("ai.tf2ir.")]
    assert all(n.op_type in native.SERVED.get(n.domain, ()) for n in custom)
    native_ops = len(custom)
    fast = tf2ir.InferenceSession(model)
    assert (fast.native_ops, fast.python_ops) == (native_ops, 0)
    assert fast.native_libraries == [LIBRARY.path]
    slow = tf2ir.InferenceSession(model, native=False)
    assert (slow.native_ops, slow.python_ops) == (0, native_ops)
    name = fast.get_inputs()[0].name
    names = [o.name for o in fast.get_outputs()]
    names = names if outputs is None else [names[k] for k in outputs]
    for batch in batches:
        want = [np.asarray(w) for w in tf.nest.flatten(fn(tf.constant(batch, tf.string)))]
        want = [_text(w) for w in (want if outputs is None else [want[k] for k in outputs])]
        got = fast.run(names, {name: batch})
        reference = slow.run(names, {name: batch})
        for k, (g, r, w) in enumerate(zip(got, reference, want)):
            _same(g, r, f"{op} output {k} (native vs Python) on {len(batch)} strings")
            _same(g, w, f"{op} output {k} (native vs TF) on {len(batch)} strings")
    return model


def _table():
    init = tf.lookup.KeyValueTensorInitializer(VOCAB, tf.range(len(VOCAB), dtype=tf.int64))
    return tf.lookup.StaticVocabularyTable(init, 1)


# -- WordpieceTokenize -----------------------------------------------------------------------------
@pytest.mark.parametrize("options", [
    {}, {"token_out_type": tf.int64}, {"unknown_token": None}, {"max_bytes_per_word": 8},
    {"max_bytes_per_word": 8, "unknown_token": None}, {"max_chars_per_token": 2},
    {"split_unknown_characters": True}, {"split_unknown_characters": True, "unknown_token": None},
    {"suffix_indicator": "@@"}])
def test_wordpiece_matches_python_and_tf(options):
    options = dict(options)
    out_type = options.pop("token_out_type", tf.string)
    tokenizer = text.WordpieceTokenizer(_table(), token_out_type=out_type, **options)

    def fn(x):
        words = tf.strings.split(x).flat_values   # StringSplitV2: native too
        pieces, starts, ends = tokenizer.tokenize_with_offsets(words)
        return pieces.flat_values, starts.flat_values, ends.flat_values, pieces.row_splits
    check(fn, "WordpieceTokenize")


def test_wordpiece_row_lengths_matches_python_and_tf():
    ops = pytest.importorskip("tensorflow_text.python.ops.wordpiece_tokenizer")
    lookup = _table()

    def fn(x):
        return tuple(ops.gen_wordpiece_tokenizer.wordpiece_tokenize_with_offsets(
            input_values=tf.strings.split(x).flat_values, vocab_lookup_table=lookup.resource_handle,
            suffix_indicator="##", use_unknown_token=True, max_bytes_per_word=100,
            max_chars_per_token=0, unknown_token="[UNK]", split_unknown_characters=False,
            output_row_partition_type="row_lengths"))
    check(fn, "WordpieceTokenize")


def test_wordpiece_vocabulary_is_a_string_tensor_attribute():
    """The lowering writes the vocabulary as a TENSOR attribute (onnxruntime's C API reads no
    STRINGS attribute); a node whose vocabulary is not one fails natively, naming it."""
    from onnx import AttributeProto, helper
    tokenizer = text.WordpieceTokenizer(_table(), token_out_type=tf.string)
    fn = tf.function(lambda x: tokenizer.tokenize(x).flat_values, input_signature=SPEC)
    model = tf2ir.convert(fn, quiet=True).model
    node = next(n for n in model.graph.node if n.op_type == "WordpieceTokenize")
    vocab = next(a for a in node.attribute if a.name == "vocab")
    assert vocab.type == AttributeProto.TENSOR
    assert sorted(v.decode() for v in vocab.t.string_data) == sorted(VOCAB)
    node.attribute.remove(vocab)
    node.attribute.append(helper.make_attribute("vocab", VOCAB))   # STRINGS
    session = tf2ir.InferenceSession(model)
    assert session.native_ops == 1
    with pytest.raises(KernelError, match="native kernel of WordpieceTokenize.*'vocab'"):
        session.run(None, {session.get_inputs()[0].name: np.array(["the"], object)})


# -- FastBertNormalize -----------------------------------------------------------------------------
@pytest.mark.parametrize("lower", [False, True])
def test_fast_bert_normalizer_with_offsets_matches_python_and_tf(lower):
    normalizer = text.FastBertNormalizer(lower_case_nfd_strip_accents=lower)

    def fn(x):
        texts, offsets = normalizer.normalize_with_offsets(x)
        return texts, offsets.flat_values, offsets.row_splits
    check(fn, "FastBertNormalize")


def test_fast_bert_normalizer_without_offsets_matches_python_and_tf():
    normalizer = text.FastBertNormalizer(lower_case_nfd_strip_accents=True)
    check(lambda x: normalizer.normalize(x), "FastBertNormalize")


def test_fast_bert_normalizer_on_every_code_point_matches_python():
    """Each code point's mapping (1.1M, alone and between letters) as the Python kernel's."""
    normalizer = text.FastBertNormalizer(lower_case_nfd_strip_accents=True)

    def fn(x):
        texts, offsets = normalizer.normalize_with_offsets(x)
        return texts, offsets.flat_values, offsets.row_splits
    chars = [chr(c) for c in range(1, 0x110000) if not 0xD800 <= c <= 0xDFFF]
    batch = np.array(["".join(chars[i:i + 64]) for i in range(0, len(chars), 64)] +
                     ["A" + c + "b" for c in chars[::97]], object)
    check(fn, "FastBertNormalize", batches=[batch])


# -- WhitespaceTokenize ----------------------------------------------------------------------------
def test_whitespace_tokenizer_matches_python_and_tf():
    tokenizer = text.WhitespaceTokenizer()

    def fn(x):
        tokens, starts, ends = tokenizer.tokenize_with_offsets(x)
        return tokens.flat_values, tokens.row_splits, starts.flat_values, ends.flat_values
    check(fn, "WhitespaceTokenize")


def test_whitespace_tokenizer_multibyte_spaces_keep_tfs_offsets():
    """A token a multi-byte whitespace ends ends one byte before that character's end (TF's
    quirk; its bytes are not UTF-8, so onnxruntime's Python binding cannot hand the token back:
    the splits and offsets are compared)."""
    tokenizer = text.WhitespaceTokenizer()

    def fn(x):
        tokens, starts, ends = tokenizer.tokenize_with_offsets(x)
        return tokens.flat_values, tokens.row_splits, starts.flat_values, ends.flat_values
    quirky = np.array(["a\u3000b", "x\u00a0y\u2003", "日本\u3000語 テ", "\u3000lead", "p\u2028q\u0085r",
                       "\u1680\u205f"], object)
    check(fn, "WhitespaceTokenize", batches=[quirky, quirky[:2]], outputs=[1, 2, 3])


# -- embedded NULs ---------------------------------------------------------------------------------
def test_embedded_nuls_match_tf_natively():
    """Strings holding NULs (FastBertNormalizer's model maps U+0000 by its own field): the native
    kernels read and write bytes by length and give TF's results. (The Python kernels do not
    see them: onnxruntime's Python custom-op bridge hands strings over cut at the first NUL.)"""
    batch = np.array(["A\x00B c", "\x00", "x\x00 y\x00", "the\x00quick"], object)
    wordpiece = text.WordpieceTokenizer(_table(), token_out_type=tf.string, unknown_token=None)
    normalizer = text.FastBertNormalizer(lower_case_nfd_strip_accents=True)
    whitespace = text.WhitespaceTokenizer()

    def pieces(x):
        p, s, e = wordpiece.tokenize_with_offsets(tf.strings.split(x).flat_values)
        return p.flat_values, s.flat_values, e.flat_values, p.row_splits

    def normalized(x):
        t, o = normalizer.normalize_with_offsets(x)
        return t, o.flat_values, o.row_splits

    def tokens(x):
        t, s, e = whitespace.tokenize_with_offsets(x)
        return t.flat_values, t.row_splits, s.flat_values, e.flat_values
    for fn, op in ((pieces, "WordpieceTokenize"), (normalized, "FastBertNormalize"),
                   (tokens, "WhitespaceTokenize")):
        model = tf2ir.convert(tf.function(fn, input_signature=SPEC), quiet=True).model
        session = tf2ir.InferenceSession(model)
        assert session.python_ops == 0 and session.native_ops >= 1
        got = session.run(None, {session.get_inputs()[0].name: batch})
        want = [_text(np.asarray(w)) for w in tf.nest.flatten(fn(tf.constant(batch)))]
        assert any("\x00" in s for s in got[0].tolist()) or op == "FastBertNormalize"
        for k, (g, w) in enumerate(zip(got, want)):
            _same(g, w, f"{op} output {k} (native vs TF)")
