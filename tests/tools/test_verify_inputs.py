"""Random inputs NLP graphs can take (tools/verify_inputs.py): integer inputs below the rows of
the tables they index, masks 0/1, a clean line when TF or onnxruntime refuses the values, and
`report --inputs-data`."""

from __future__ import annotations

import os

import numpy as np
import pytest

from tests.conftest import run_cli

INT_SEQ = ([None, None], "int32")


def _freeze(tmp_path, name, fn, specs):
    import tensorflow as tf
    from tf2ir.tools.models import freeze_function
    path = str(tmp_path / f"{name}.pb")
    freeze_function(fn, [tf.TensorSpec(shape, dtype, name=n) for n, (shape, dtype) in specs], path)
    return path


def _graph_def(path):
    from tf2ir.parser.graph_view import graph_def_class
    with open(path, "rb") as f:
        return graph_def_class().FromString(f.read())


@pytest.fixture(scope="module")
def embeddings_pb(tmp_path_factory):
    """BERT's embeddings: word (50 rows, input_ids shifted by +1 first), token type (2 rows)
    and an attention mask cast to float, (1 - mask) * -10000 added to the scores."""
    import tensorflow as tf
    rng = np.random.default_rng(0)
    word = tf.Variable(rng.standard_normal((50, 8)).astype(np.float32))
    token_type = tf.Variable(rng.standard_normal((2, 8)).astype(np.float32))

    def embed(input_ids, token_type_ids, attention_mask):
        x = tf.gather(word, input_ids + 1) + tf.gather(token_type, token_type_ids)
        scores = tf.reduce_sum(x, -1)
        mask = (1.0 - tf.cast(attention_mask, tf.float32)) * -10000.0
        return tf.nn.softmax(scores + mask, axis=-1)[..., None] * x
    path = _freeze(tmp_path_factory.mktemp("nlp"), "embeddings", embed,
                   [("input_ids", INT_SEQ), ("token_type_ids", INT_SEQ),
                    ("attention_mask", INT_SEQ)])
    return path


def test_bounds_read_from_the_graph(embeddings_pb):
    """The token-type ids stay below the table's 2 rows, the word ids below 50 - 1 (the +1
    on the way; never negative), the mask 0/1; nothing runs TensorFlow."""
    from tf2ir.tools.verify_inputs import integer_bounds
    shapes = {n: (4, 6) for n in ("input_ids", "token_type_ids", "attention_mask")}
    bounds = integer_bounds(_graph_def(embeddings_pb), shapes)
    assert (bounds["token_type_ids"].low, bounds["token_type_ids"].high) == (0, 2)
    assert (bounds["input_ids"].low, bounds["input_ids"].high) == (0, 49)
    assert (bounds["attention_mask"].low, bounds["attention_mask"].high) == (0, 2)
    assert "2 rows" in bounds["token_type_ids"].why
    assert bounds["attention_mask"].why == "used as a mask"


def test_bert_embeddings_verify_with_random_inputs(embeddings_pb):
    """The issue's case: random token-type ids used to overrun the 2-row table ('indices[0,0]
    = 2 is not in [0, 2)', an internal error). Now every draw is in range, the ids cover the
    vocabulary beyond the old [0, 4) and the mask is 0/1 only."""
    import tf2ir
    result = tf2ir.verify(embeddings_pb, batch=8, quiet=True)
    assert result.passed, result.text()
    feeds = result.inputs
    assert set(np.unique(feeds["token_type_ids"])) == {0, 1}
    assert set(np.unique(feeds["attention_mask"])) == {0, 1}
    assert feeds["input_ids"].min() >= 0 and feeds["input_ids"].max() < 49
    assert feeds["input_ids"].max() >= 4   # the whole table is drawn from, not [0, 4)


def test_cli_verify_passes_on_the_embeddings(embeddings_pb):
    result = run_cli("verify", embeddings_pb)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "verification passed" in result.stdout


def test_keras_bert_verifies(tmp_path):
    """BERT built from Keras layers (tools/nlp_models.py: Keras 3's Embedding wraps
    negative ids with a Select, the mask goes through StridedSlice and Cast): passes."""
    import tf2ir
    from tf2ir.tools.nlp_models import freeze_keras_bert
    path = str(tmp_path / "bert.pb")
    freeze_keras_bert(path, layers=1, hidden=32, intermediate=64)
    result = tf2ir.verify(path, batch=6, quiet=True)
    assert result.passed, result.text()
    assert result.inputs["token_type_ids"].max() == 1
    assert result.inputs["attention_mask"].max() == 1
    assert result.inputs["input_ids"].max() >= 4


@pytest.mark.slow
def test_transformers_tf_bert_verifies(tmp_path):
    """transformers' TFBertModel (random weights, nothing downloaded), frozen: `tf2ir verify`
    passes with random inputs at batch 1 and at batch 8 (TF's oneDNN layer-norm fusion used
    to give TF's side errors near 1 at batch 8)."""
    pytest.importorskip("transformers")
    pytest.importorskip("tf_keras")
    from tf2ir.tools.nlp_models import freeze_transformers_bert
    path = str(tmp_path / "bert_hf.pb")
    freeze_transformers_bert(path)
    for batch in ("1", "8"):
        result = run_cli("verify", path, "--batch", batch)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "verification passed" in result.stdout


def test_table_size_known_only_at_run_time(tmp_path):
    """A Gather whose table is another input: the drawn size bounds the indices; a table
    made at run time (a Concat of an input with itself, no shape in the graph): [0, 2)."""
    import tensorflow as tf
    import tf2ir
    from tf2ir.tools.verify_inputs import FALLBACK_ROWS, integer_bounds

    def fn(table, ids, more_ids):
        doubled = tf.concat([table, table], axis=0)
        return tf.gather(table, ids), tf.gather(doubled, more_ids)
    path = _freeze(tmp_path, "runtime_table", fn, [("table", ([None, 3], "float32")),
                                                  ("ids", ([None], "int32")),
                                                  ("more_ids", ([None], "int32"))])
    bounds = integer_bounds(_graph_def(path), {"ids": (5,), "more_ids": (5,), "table": (5, 3)})
    assert bounds["ids"].high == 5   # the drawn table has 5 rows
    assert bounds["more_ids"].high == FALLBACK_ROWS
    result = tf2ir.verify(path, quiet=True)   # batch 1: a 1-row table, a 2-row one
    assert result.passed, result.text()
    assert result.inputs["ids"].max() == 0 and result.inputs["more_ids"].max() <= 1


@pytest.fixture(scope="module")
def asserting_pb(tmp_path_factory):
    """x must be all sevens (an Assert random values break)."""
    import tensorflow as tf

    def fn(x):
        check = tf.debugging.assert_equal(x, tf.fill(tf.shape(x), 7), message="x must be 7")
        with tf.control_dependencies([check]):
            return tf.cast(x, tf.float32) * 2.0
    return _freeze(tmp_path_factory.mktemp("assert"), "asserting", fn,
                   [("x", ([None, 4], "int32"))])


def test_refused_inputs_are_one_clean_line(asserting_pb, tmp_path):
    """TF's refusal of the random values: exit 1, one line naming the input and
    --inputs-data, no 'internal error'; with --inputs-data the same model verifies."""
    result = run_cli("verify", asserting_pb)
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("tf2ir: error: TensorFlow refused the input values (x [1, 4] int32")
    assert "--inputs-data" in lines[0] and "internal error" not in lines[0]
    sevens = tmp_path / "x.npy"
    np.save(sevens, np.full((2, 4), 7, np.int32))
    result = run_cli("verify", asserting_pb, "--inputs-data", f"x={sevens}")
    assert result.returncode == 0, result.stdout + result.stderr


def test_onnxruntime_refusal_names_the_input():
    """onnxruntime's index error (a Gather past its table) becomes the same one line,
    naming the input that reaches the failing node and not the other."""
    import onnx
    from onnx import TensorProto, helper
    from tf2ir.ir.errors import ConversionError, ExitStatus
    from tf2ir.tools.runtime import InferenceSession
    from tf2ir.tools.verify_inputs import refusal
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "ids"], ["g"], name="lookup"),
         helper.make_node("Identity", ["other"], ["o"])],
        "g", [helper.make_tensor_value_info("ids", TensorProto.INT64, [2]),
              helper.make_tensor_value_info("other", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("g", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("o", TensorProto.FLOAT, [2])],
        [helper.make_tensor("table", TensorProto.FLOAT, [3], [1.0, 2.0, 3.0])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    feeds = {"ids": np.array([0, 9], np.int64), "other": np.zeros(2, np.float32)}
    session = InferenceSession(model)
    with pytest.raises(ConversionError) as caught:
        with refusal("onnxruntime", feeds, model):
            session.run(None, feeds)
    text = str(caught.value)
    assert caught.value.exit_code == ExitStatus.FAILED
    assert text.startswith("onnxruntime refused the input values (ids [2] int64 in [0, 9])")
    assert "other" not in text and "--inputs-data" in text and "\n" not in text
    with pytest.raises(ValueError):   # other errors pass unchanged
        with refusal("onnxruntime", feeds, model):
            raise ValueError("not about the inputs")


def test_report_inputs_data(embeddings_pb, tmp_path):
    """`tf2ir report --verify --inputs-data`: the given values are the ones run (token-type
    ids of 5 are refused, naming the input; valid ones pass and write the page); without
    --verify the option is a usage error."""
    ids = np.array([[3, 7, 11]], np.int32)
    np.savez(tmp_path / "bad.npz", input_ids=ids, token_type_ids=np.full((1, 3), 5, np.int32),
             attention_mask=np.ones((1, 3), np.int32))
    page = str(tmp_path / "r.html")
    result = run_cli("report", embeddings_pb, "-o", page, "--verify",
                     "--inputs-data", str(tmp_path / "bad.npz"))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "TensorFlow refused the input values (token_type_ids [1, 3] int32 in [5, 5])" \
        in result.stderr and "--inputs-data" in result.stderr
    np.save(tmp_path / "tt.npy", np.array([[1, 0, 1]], np.int32))
    result = run_cli("report", embeddings_pb, "-o", page, "--verify",
                     "--inputs-data", f"token_type_ids={tmp_path / 'tt.npy'}")
    assert result.returncode == 0, result.stdout + result.stderr
    assert os.path.getsize(page) > 0
    result = run_cli("report", embeddings_pb, "-o", str(tmp_path / "r2.html"),
                     "--inputs-data", str(tmp_path / "bad.npz"))
    assert result.returncode == 2 and "--inputs-data needs --verify" in result.stderr
    assert not os.path.exists(tmp_path / "r2.html")
