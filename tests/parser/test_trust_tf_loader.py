"""A SavedModel that TensorFlow's loader would make write a file, read one or run Python is
refused before TensorFlow loads it (issue 21; parser/loader_trust.py): the restore op, the
init ops (TF1 main_op / legacy_init_op, a TF2 resource's `_initialize`), the signature
functions and every library function but the saver's own save function are checked against
ir/onnx/trust.py's loader allow-list. Each case converts a real SavedModel built by
TensorFlow in a fresh `tf2ir convert` process and checks the end state: the file the model
would write is not there, exit 3, one line naming the node's function and op type, no ONNX
file. A Keras file with a Lambda layer is refused by Keras' safe_mode, which tf2ir keeps on.
Real SavedModels (variables, tables with vocabulary assets, Keras, TF1 savers) still load:
tests/parser/test_saved_model*.py."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

tf = pytest.importorskip("tensorflow")
tf1 = tf.compat.v1
READER = "TF2IR_SAVED_MODEL_READER"


def _convert(model, tmp_path, reader=None, *options):
    out = str(tmp_path / "out.onnx")
    env = dict(os.environ)
    env.pop(READER, None)
    if reader:
        env[READER] = reader
    result = subprocess.run([sys.executable, "-m", "tf2ir.tools.cli", "convert", model, "-o",
                             out, "-q", *options], capture_output=True, text=True, env=env,
                            timeout=300)
    assert not os.path.exists(out)
    return result


def _refused(result, op, where=""):
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 3, result.stderr
    assert len(lines) == 1, result.stderr
    assert f"op {op}" in lines[0], lines[0]
    assert "SavedModel loader would run it" in lines[0] or \
        "would run it in TensorFlow" in lines[0], lines[0]
    assert where in lines[0], lines[0]
    return lines[0]


class Writer(tf.saved_model.experimental.TrackableResource):
    """A resource whose initializer, run by TensorFlow's loader, writes `target`."""

    def __init__(self, target):
        super().__init__()
        self.target = target

    def _create_resource(self):
        return tf.raw_ops.HashTableV2(key_dtype=tf.string, value_dtype=tf.int64)

    def _initialize(self):
        tf.io.write_file(self.target, "written by the SavedModel's init function")
        return tf.constant(0)


def _vocabulary_table(tmp_path, name="vocab.txt"):
    vocabulary = tmp_path / name
    vocabulary.write_text("a\nb\nc\n")
    return tf.lookup.StaticHashTable(tf.lookup.TextFileInitializer(
        str(vocabulary), tf.string, tf.lookup.TextFileIndex.WHOLE_LINE, tf.int64,
        tf.lookup.TextFileIndex.LINE_NUMBER), -1)


def test_an_init_function_that_writes_a_file_is_refused(tmp_path):
    """Two vocabulary-file tables send the SavedModel to TensorFlow (the native reader reads
    one asset's table itself, not several); before this check TF's loader ran the resource's
    `_initialize` and wrote the file."""
    target = tmp_path / "written.txt"
    module = tf.Module()
    module.writer = Writer(str(target))
    module.table = _vocabulary_table(tmp_path)
    module.other = _vocabulary_table(tmp_path, "other.txt")

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def serve(words):
        return {"ids": module.table.lookup(words) + module.other.lookup(words)}
    module.serve = serve
    saved = str(tmp_path / "model")
    tf.saved_model.save(module, saved, signatures={"serving_default": serve})
    assert not target.exists()
    line = _refused(_convert(saved, tmp_path), "WriteFile", "_initializer")
    assert "reads or writes files" in line
    assert not target.exists()


@pytest.mark.parametrize("reader", ["tf", None])
def test_a_signature_that_writes_a_file_is_refused(reader, tmp_path):
    """Frozen by TensorFlow, or read natively and then run by TensorFlow in --verify (before
    this check the native route dropped the unused WriteFile and verify wrote the file)."""
    target = tmp_path / "written.txt"

    class Module(tf.Module):
        def __init__(self):
            super().__init__()
            self.w = tf.Variable([2.0])

        @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
        def serve(self, x):
            tf.io.write_file(str(target), tf.strings.as_string(x[0]))
            return {"y": x * self.w}
    module = Module()
    saved = str(tmp_path / "model")
    tf.saved_model.save(module, saved, signatures={"serving_default": module.serve})
    _refused(_convert(saved, tmp_path, reader, "--verify"), "WriteFile", "serve")
    assert not target.exists()


def test_a_signature_running_python_is_refused(tmp_path):
    class Module(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
        def serve(self, x):
            return {"y": tf.py_function(lambda v: v * 2, [x], tf.float32)}
    module = Module()
    saved = str(tmp_path / "model")
    tf.saved_model.save(module, saved, signatures={"serving_default": module.serve})
    line = _refused(_convert(saved, tmp_path, reader="tf"), "EagerPyFunc")
    assert "runs Python code" in line


@pytest.mark.parametrize("how", ["main_op", "legacy_init_op"])
def test_a_tf1_init_op_that_writes_a_file_is_refused(how, tmp_path):
    target = tmp_path / "written.txt"
    saved = str(tmp_path / "model")
    with tf.Graph().as_default(), tf1.Session() as session:
        x = tf1.placeholder(tf.float32, [None, 2], name="x")
        w = tf1.get_variable("w", [2, 2])
        y = tf.identity(tf.matmul(x, w), name="y")
        session.run(tf1.global_variables_initializer())
        init = tf.group(tf1.tables_initializer(),
                        tf.io.write_file(str(target), "written by the init op"))
        builder = tf1.saved_model.Builder(saved)
        builder.add_meta_graph_and_variables(
            session, ["serve"], signature_def_map={"serving_default": tf1.saved_model.
                                                   predict_signature_def({"x": x}, {"y": y})},
            **{how: init})
        builder.save()
    _refused(_convert(saved, tmp_path, reader="tf"), "WriteFile")
    assert not target.exists()


def test_a_restore_op_reading_another_checkpoint_is_refused(tmp_path):
    """A TF1 restore op whose RestoreV2 reads a Const prefix (another checkpoint on the host)
    instead of the saver's filename tensor."""
    other = str(tmp_path / "other" / "ckpt")
    with tf.Graph().as_default(), tf1.Session() as session:
        secret = tf1.get_variable("w", initializer=tf.constant([[7.0, 7.0], [7.0, 7.0]]))
        session.run(tf1.global_variables_initializer())
        tf1.train.Saver([secret]).save(session, other)
    saved = str(tmp_path / "model")
    with tf.Graph().as_default(), tf1.Session() as session:
        x = tf1.placeholder(tf.float32, [None, 2], name="x")
        w = tf1.get_variable("w", [2, 2])
        y = tf.identity(tf.matmul(x, w), name="y")
        session.run(tf1.global_variables_initializer())
        builder = tf1.saved_model.Builder(saved)
        builder.add_meta_graph_and_variables(
            session, ["serve"], signature_def_map={"serving_default": tf1.saved_model.
                                                   predict_signature_def({"x": x}, {"y": y})})
        builder.save()
    from tf2ir.parser.saved_model import _saved_model
    model = _saved_model(saved)
    graph = model.meta_graphs[0].graph_def
    prefix = graph.node.add(name="other_prefix", op="Const")
    prefix.attr["dtype"].type = 7
    prefix.attr["value"].tensor.dtype = 7
    prefix.attr["value"].tensor.string_val.append(other.encode())
    restore = next(n for n in graph.node if n.op == "RestoreV2")
    restore.input[0] = "other_prefix"
    with open(os.path.join(saved, "saved_model.pb"), "wb") as f:
        f.write(model.SerializeToString())
    line = _refused(_convert(saved, tmp_path, reader="tf"), "RestoreV2", restore.name)
    assert "other_prefix" in line and "filename tensor" in line


def test_a_keras_lambda_layer_is_refused_by_safe_mode(tmp_path):
    import keras
    target = tmp_path / "written.txt"
    inputs = keras.Input((2,))
    outputs = keras.layers.Lambda(lambda v: v * 2)(inputs)
    path = str(tmp_path / "lambda.keras")
    keras.Model(inputs, outputs).save(path)
    result = _convert(path, tmp_path)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 3 and len(lines) == 1, result.stderr
    assert "Lambda" in lines[0] and "safe_mode" in lines[0], lines[0]
    assert "safe_mode=False" not in lines[0]
    assert not target.exists()


def test_real_saved_models_pass_the_loader_check(tmp_path):
    """What TensorFlow writes for variables, tables (a vocabulary asset, a mutable table, a
    dense table), RNN loops and TF1 savers (sharded, with a table initialiser) is allowed."""
    import keras

    from tf2ir.parser.loader_trust import check_loader
    module = tf.Module()
    module.v = tf.Variable([1.0, 2.0])
    module.table = _vocabulary_table(tmp_path)
    module.mutable = tf.lookup.experimental.MutableHashTable(tf.string, tf.int64, -1)
    module.dense = tf.lookup.experimental.DenseHashTable(tf.int64, tf.int64, -1, 0, -1)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def serve(words):
        return {"ids": module.table.lookup(words) + module.mutable.lookup(words)}
    module.serve = serve
    tf.saved_model.save(module, str(tmp_path / "tables"), signatures={"serving_default": serve})
    check_loader(str(tmp_path / "tables"))
    inputs = keras.Input((2, 2))
    model = keras.Model(inputs, keras.layers.Dense(2)(keras.layers.LSTM(3)(inputs)))
    model.export(str(tmp_path / "keras"), verbose=False)
    check_loader(str(tmp_path / "keras"))
    with tf.Graph().as_default(), tf1.Session() as session:
        x = tf1.placeholder(tf.float32, [None, 4], name="x")
        w = tf1.get_variable("w", [4, 2], partitioner=tf1.fixed_size_partitioner(2))
        y = tf.identity(tf.matmul(x, w), name="y")
        session.run(tf1.global_variables_initializer())
        builder = tf1.saved_model.Builder(str(tmp_path / "tf1"))
        builder.add_meta_graph_and_variables(
            session, ["serve"], signature_def_map={"serving_default": tf1.saved_model.
                                                   predict_signature_def({"x": x}, {"y": y})},
            main_op=tf1.saved_model.main_op.main_op(), saver=tf1.train.Saver(sharded=True))
        builder.save()
    check_loader(str(tmp_path / "tf1"))
