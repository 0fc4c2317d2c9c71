"""Conformance of tensorflow-text's SentencePiece ops (opp/tftext_sentencepiece.py) against
TensorFlow: tiny unigram and BPE models trained here (nothing downloaded) on generated text
with mixed case, accents, full-width, CJK and Cyrillic; tokenized with each of TF's extra
options, at two batch sizes, through tf2ir.InferenceSession. Ids and splits must be equal."""

import io
import random
import tempfile

import numpy as np
import pytest

from tests.conformance.harness import convert_function
from tests.conformance.test_tftext_tokenize import check_text_op

tf = pytest.importorskip("tensorflow")
text = pytest.importorskip("tensorflow_text")
spm = pytest.importorskip("sentencepiece")

TESTED_DTYPES = {
    "SentencepieceOp": ("string",), "SentencepieceTokenizeOp": ("string",),
    "SentencepieceDetokenizeOp": ("int32",), "SentencepieceIdToStringOp": ("int32",),
    "SentencepieceStringToIdOp": ("string",), "SentencepieceVocabSizeOp": ("string",),
}

SYLLABLES = ["ka", "lo", "Mi", "ré", "tü", "sch", "ñu", "Ça", "þo", "при", "вет", "мир", "Дом",
             "日本", "語", "東京", "中文", "テス", "ト", "ＡＢＣ", "ｘｙｚ", "１２３", "the", "QU", "ing"]
PUNCT = ["", "", "", ",", ".", "!", "?", "...", "—", "「", "」", "(", ")"]


def sentences(count: int, seed: int = 7):
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        words = ["".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 4))) + rng.choice(PUNCT)
                 for _ in range(rng.randint(1, 10))]
        out.append(" ".join(words))
    return out


@pytest.fixture(scope="module", params=["unigram", "bpe"])
def model(request):
    buffer = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(sentences(400)), model_writer=buffer, vocab_size=200,
        model_type=request.param, hard_vocab_limit=False, character_coverage=1.0,
        minloglevel=2, num_threads=1)
    return buffer.getvalue()


TEXTS = np.array(["Hello World", "", "ÄÖü Straße naïve café", "привет МИР", "日本語のテスト",
                  "ＡＢＣ full-width！ １２３", "MiXeD, Case... !?", "  spaces   around  ",
                  "x" * 300, "Donaudampfschifffahrtsgesellschaftskapitän" * 3, "\t\n",
                  "emoji 🙂 and ߷ rare"], object)
SMALL = TEXTS[[1, 2, 4]]


STRINGS = [tf.TensorSpec([None], tf.string, name="x0")]


@pytest.mark.parametrize("bos, eos, reverse", [(False, False, False), (True, True, False),
                                               (True, False, True), (False, True, True)])
def test_tokenize_ids_and_splits(model, bos, eos, reverse):
    tokenizer = text.SentencepieceTokenizer(model=model, add_bos=bos, add_eos=eos,
                                            reverse=reverse)

    def fn(x):
        ragged = tokenizer.tokenize(x)
        return ragged.flat_values, ragged.row_splits
    graph = check_text_op(fn, [TEXTS], STRINGS, extra_inputs=[[SMALL]])
    ops = {n.op_type for n in graph.nodes}
    assert "SentencepieceTokenize" in ops


def test_tokenize_a_matrix_and_nbest_one(model):
    """A 2-D input (the op flattens it; the tokenizer re-shapes the rows) and nbest_size 1,
    which TF treats as no sampling."""
    tokenizer = text.SentencepieceTokenizer(model=model, nbest_size=1, alpha=0.5)

    def fn(x):
        ragged = tokenizer.tokenize(x)
        return ragged.flat_values, ragged.nested_row_splits[-1]
    matrix = TEXTS.reshape(3, 4)
    check_text_op(fn, [matrix], [tf.TensorSpec([None, 4], tf.string, name="x0")],
                  extra_inputs=[[matrix[:1]]])


def test_tokenize_pieces(model):
    tokenizer = text.SentencepieceTokenizer(model=model, out_type=tf.string, add_eos=True)

    def fn(x):
        ragged = tokenizer.tokenize(x)
        return ragged.flat_values, ragged.row_splits
    graph = check_text_op(fn, [TEXTS], STRINGS, extra_inputs=[[SMALL]])
    assert "SentencepieceTokenizePieces" in {n.op_type for n in graph.nodes}


def test_detokenize_id_to_string_string_to_id_and_vocab_size(model):
    tokenizer = text.SentencepieceTokenizer(model=model)
    ids = tokenizer.tokenize(tf.constant(TEXTS))

    def fn(values, splits):
        ragged = tf.RaggedTensor.from_row_splits(values, splits, validate=False)
        pieces = tokenizer.id_to_string(values)
        return (tokenizer.detokenize(ragged), pieces, tokenizer.string_to_id(pieces),
                tokenizer.vocab_size())
    specs = [tf.TensorSpec([None], tf.int32, name="values"),
             tf.TensorSpec([None], tf.int64, name="splits")]
    small = tokenizer.tokenize(tf.constant(SMALL))
    check_text_op(fn, [ids.flat_values.numpy(), ids.row_splits.numpy()], specs,
                  extra_inputs=[[small.flat_values.numpy(), small.row_splits.numpy()]])


@pytest.mark.parametrize("nbest, alpha", [(2, 0.1), (-1, 0.5)])
def test_sampling_is_refused(model, nbest, alpha):
    """Sampling (nbest_size > 1 or < 0) draws random tokenizations: refused with one error
    naming the node and op type, no model written."""
    from tf2ir.ir import ConversionError
    tokenizer = text.SentencepieceTokenizer(model=model, nbest_size=nbest, alpha=alpha)
    with tempfile.TemporaryDirectory() as directory:
        with pytest.raises(ConversionError) as info:
            convert_function(lambda x: tokenizer.tokenize(x).flat_values, STRINGS, directory)
    message = str(info.value)
    assert "SentencepieceTokenizeOp" in message and "sampl" in message
    assert f"nbest_size {nbest}" in message


def test_the_model_travels_in_the_attribute(model):
    """The frozen graph holds SentencepieceOp with the model proto (restored from the captured
    resource), and the ONNX node carries it as its `model` attribute, byte for byte."""
    import onnx
    tokenizer = text.SentencepieceTokenizer(model=model)
    with tempfile.TemporaryDirectory() as directory:
        path, _, _, pb = convert_function(lambda x: tokenizer.tokenize(x).flat_values, STRINGS,
                                          directory)
        graph_def = tf.compat.v1.GraphDef.FromString(open(pb, "rb").read())
        ops = [n for n in graph_def.node if n.op == "SentencepieceOp"]
        assert len(ops) == 1 and ops[0].attr["model"].s == model
        nodes = [n for n in onnx.load(path).graph.node if n.op_type == "SentencepieceTokenize"]
        assert len(nodes) == 1 and nodes[0].domain == "ai.tf2ir.text"
        attr = next(a for a in nodes[0].attribute if a.name == "model")
        assert attr.type == onnx.AttributeProto.STRING and attr.s == model


def test_a_corrupt_or_missing_model_is_refused(model):
    """A frozen graph whose SentencepieceOp holds bytes that are not a model, or no model,
    is refused with one error naming the node's op type (converting the .pb, no TF)."""
    from tests.conformance.harness import _manager
    from tf2ir.ir import ConversionError
    from tf2ir.parser.pipeline import convert_file
    tokenizer = text.SentencepieceTokenizer(model=model)
    with tempfile.TemporaryDirectory() as directory:
        _, _, _, pb = convert_function(lambda x: tokenizer.tokenize(x).flat_values, STRINGS,
                                       directory)
        graph_def = tf.compat.v1.GraphDef.FromString(open(pb, "rb").read())
        for bad, says in ((b"\x0f\xff\xff", "not a model"), (b"", "not in the graph")):
            next(n for n in graph_def.node if n.op == "SentencepieceOp").attr["model"].s = bad
            with open(pb, "wb") as f:
                f.write(graph_def.SerializeToString())
            with pytest.raises(ConversionError) as info:
                convert_file(pb, _manager())
            assert "SentencepieceOp" in str(info.value) and says in str(info.value)


def test_without_the_sentencepiece_package_the_kernel_says_so(model, monkeypatch):
    """The kernels import sentencepiece when they first run; without it, one clear error."""
    import sys
    from tf2ir.opp import tftext_sentencepiece as ops
    monkeypatch.setitem(sys.modules, "sentencepiece", None)
    monkeypatch.setattr(ops, "_PROCESSORS", {})
    with pytest.raises(RuntimeError, match="needs the 'sentencepiece' package"):
        ops.sentencepiece_tokenize(TEXTS, False, False, False, model=model)


def test_a_saved_model_with_a_tokenizer(model, tmp_path):
    """A SavedModel whose serving function tokenizes (the model in the resource's creator,
    the two outputs named by their output args inside the function) converts, read natively,
    and gives TF's ids and splits."""
    import tf2ir

    class Tokenize(tf.Module):
        def __init__(self):
            super().__init__()
            self.tokenizer = text.SentencepieceTokenizer(model=model, add_eos=True)

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="x")])
        def serve(self, x):
            ragged = self.tokenizer.tokenize(x)
            return {"ids": ragged.flat_values, "splits": ragged.row_splits}
    module = Tokenize()
    tf.saved_model.save(module, str(tmp_path / "sm"), signatures={"serving_default": module.serve})
    result = tf2ir.convert(str(tmp_path / "sm"), quiet=True)
    session = tf2ir.InferenceSession(result.model.SerializeToString())
    names = [o.name for o in session.get_outputs()]
    for feed in (TEXTS, SMALL):
        want = module.serve(tf.constant(feed))
        got = dict(zip(names, session.run(None, {"x": feed})))
        for key in ("ids", "splits"):
            np.testing.assert_array_equal(got[key], want[key].numpy(), err_msg=key)
    del session
