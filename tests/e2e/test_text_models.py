"""Issue 25 end to end: three text models with their tokenizer in the graph (strings in,
logits and token ids out), built by tools/text_models.py with nothing downloaded, convert
from the frozen .pb and from the SavedModel (natively, and through TF's loader with
tensorflow_text imported first), and give TF's ids exactly and its logits closely through
tf2ir.InferenceSession, at batch 1 and 12. The SavedModel also converts with tensorflow_text
made unimportable (the native reader needs no op registered)."""

import os
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("tensorflow_text")
pytest.importorskip("keras_hub")
pytest.importorskip("sentencepiece")

import tf2ir  # noqa: E402
from tf2ir.tools import text_models  # noqa: E402

MODELS = ["bert", "sentencepiece", "gpt2"]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("text_models"))
    return text_models.build(out)


def _compare(onnx_model, saved_model):
    session = tf2ir.InferenceSession(onnx_model)
    names = [o.name for o in session.get_outputs()]
    for size in (1, 12):
        strings = text_models.batch(size)
        expected = text_models.reference(saved_model, strings)
        got = dict(zip(names, session.run(None, {"text": np.array(strings, dtype=object)})))
        np.testing.assert_array_equal(got["ids"], expected["ids"])
        np.testing.assert_allclose(got["logits"], expected["logits"], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", MODELS)
def test_from_frozen_pb(built, name, tmp_path):
    out = str(tmp_path / f"{name}.onnx")
    tf2ir.convert(built[name]["pb"]).save(out)
    _compare(out, built[name]["saved_model"])


@pytest.mark.parametrize("reader", ["native", "tf"])
@pytest.mark.parametrize("name", MODELS)
def test_from_saved_model(built, name, reader, tmp_path, monkeypatch):
    monkeypatch.setenv("TF2IR_SAVED_MODEL_READER", reader)
    out = str(tmp_path / f"{name}.onnx")
    tf2ir.convert(built[name]["saved_model"]).save(out)
    _compare(out, built[name]["saved_model"])


_SUBPROCESS = """
import sys
{block}
import tf2ir
result = tf2ir.convert(sys.argv[1])
result.save(sys.argv[2])
print("tensorflow_text imported:", sys.modules.get("tensorflow_text") is not None)
"""


@pytest.mark.parametrize("name", MODELS)
def test_saved_model_without_tensorflow_text(built, name, tmp_path):
    """tensorflow_text unimportable (a None entry in sys.modules): the SavedModel still
    converts, natively, and gives TF's result."""
    out = str(tmp_path / f"{name}.onnx")
    code = _SUBPROCESS.format(block='sys.modules["tensorflow_text"] = None')
    run = subprocess.run([sys.executable, "-c", code, built[name]["saved_model"], out],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "tensorflow_text imported: False" in run.stdout
    _compare(out, built[name]["saved_model"])


def test_tf_loader_imports_tensorflow_text_first(built):
    """Where TF's loader reads the SavedModel, tensorflow_text is imported before it when the
    graph names its ops; when it cannot be imported, the ops stay unregistered and are named."""
    code = """
import sys
{block}
import tensorflow
from tf2ir.parser.frozen import import_op_libraries
missing = import_op_libraries(sys.argv[1])
print("missing:", ",".join(missing))
print("imported:", sys.modules.get("tensorflow_text") is not None)
"""
    path = built["sentencepiece"]["saved_model"]
    present = subprocess.run([sys.executable, "-c", code.format(block=""), path],
                             capture_output=True, text=True, timeout=300)
    assert present.returncode == 0, present.stderr[-2000:]
    assert "missing: \n" in present.stdout and "imported: True" in present.stdout
    absent = subprocess.run(
        [sys.executable, "-c", code.format(block='sys.modules["tensorflow_text"] = None'), path],
        capture_output=True, text=True, timeout=300)
    assert absent.returncode == 0, absent.stderr[-2000:]
    assert "SentencepieceOp" in absent.stdout and "imported: False" in absent.stdout


def test_generator_writes_each_model(built):
    for name in text_models.MODELS:
        assert os.path.isfile(built[name]["pb"])
        assert os.path.isfile(os.path.join(built[name]["saved_model"], "saved_model.pb"))
    assets = os.path.join(built["bert"]["saved_model"], "assets")
    assert os.listdir(assets) == ["bert_vocab.txt"]   # the vocabulary-file asset
