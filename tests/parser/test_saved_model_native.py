"""SavedModels read without TensorFlow (parser/saved_model.py, parser/tensor_bundle.py):
the checkpoint reader against TensorFlow's, the native route against TensorFlow's freezing
(the same ONNX graph and names), a conversion in a process where `import tensorflow`
fails, and what the native reader refuses."""

from __future__ import annotations

import os
import sys
import textwrap

import numpy as np
import pytest

from tests.conftest import max_abs_error, run_cli, run_onnx
from tests.parser.test_saved_model import _keras_model

tf = pytest.importorskip("tensorflow")
READER = "TF2IR_SAVED_MODEL_READER"


def _convert(source, out, reader, monkeypatch, **options):
    from tf2ir.ir.onnx.compile import compile_to_file
    from tf2ir.parser.pipeline import Options, Pipeline
    monkeypatch.setenv(READER, reader)
    graph, _ = Pipeline(options=Options(**options)).convert_file(source)
    compile_to_file(graph, out)
    monkeypatch.delenv(READER)
    return out


def _same_graph_both_routes(source, tmp_path, monkeypatch, **options):
    """Convert natively and by TF freezing; assert the same ONNX graph, inputs and outputs."""
    import onnx

    from tests.parser.test_same_graph import _onnx_signature
    paths = [_convert(source, str(tmp_path / f"{reader}.onnx"), reader, monkeypatch, **options)
             for reader in ("native", "tf")]
    native, frozen = (onnx.load(p).graph for p in paths)
    assert [i.name for i in native.input] == [i.name for i in frozen.input]
    assert [o.name for o in native.output] == [o.name for o in frozen.output]
    assert _onnx_signature(paths[0]) == _onnx_signature(paths[1])
    return paths[0]


# -- the checkpoint reader ------------------------------------------------------------------------
def test_tensor_bundle_reads_what_tensorflow_reads(tmp_path):
    from tf2ir.parser.tensor_bundle import TensorBundle
    rng = np.random.default_rng(0)
    values = {"f32": rng.normal(size=(3, 5)).astype(np.float32),
              "f16": rng.normal(size=(7,)).astype(np.float16),
              "i64": np.arange(-4, 8, dtype=np.int64).reshape(3, 4),
              "flag": np.array([True, False, True]), "scalar": np.float64(2.5),
              "words": np.array([b"a", b"", b"longer word " * 20]),
              "empty": np.zeros((0, 3), np.float32)}
    checkpoint = tf.train.Checkpoint(**{k: tf.Variable(v) for k, v in values.items()})
    prefix = checkpoint.write(str(tmp_path / "ckpt"))
    bundle = TensorBundle(prefix)
    reader = tf.train.load_checkpoint(prefix)
    keys = [k for k in reader.get_variable_to_shape_map() if k != "_CHECKPOINTABLE_OBJECT_GRAPH"]
    assert sorted(keys) == sorted(k for k in bundle.entries if k != "_CHECKPOINTABLE_OBJECT_GRAPH")
    for key in keys:
        _, shape, got = bundle.tensor(key)
        want = reader.get_tensor(key)
        assert list(want.shape) == shape and got.shape == want.shape, key
        np.testing.assert_array_equal(got, want, err_msg=key)


def test_corrupt_checkpoint_index_is_a_conversion_error(tmp_path):
    from tf2ir.ir.errors import ConversionError
    from tf2ir.parser.tensor_bundle import TensorBundle
    (tmp_path / "v.index").write_bytes(b"\x00" * 100)
    with pytest.raises(ConversionError, match="not a TensorFlow checkpoint index"):
        TensorBundle(str(tmp_path / "v"))


# -- models -------------------------------------------------------------------------------------
class Scorer(tf.Module):
    """Variables read directly, through tf.gather (ResourceGather) and inside a While body
    that carries the variable's handle; two signatures."""

    def __init__(self):
        super().__init__()
        rng = np.random.default_rng(1)
        self.w = tf.Variable(rng.normal(size=(4, 3)).astype(np.float32))
        self.embedding = tf.Variable(rng.normal(size=(10, 3)).astype(np.float32))
        self.scale = tf.Variable(np.float32(0.5))

    @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="features"),
                                  tf.TensorSpec([None], tf.int32, name="ids")])
    def serve(self, features, ids):
        logits = tf.matmul(features, self.w) + tf.gather(self.embedding, ids)
        logits = tf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * self.scale + self.w[0]),
                               [tf.constant(0), logits])[1]
        # (not the loop's output itself: a multi-output call leaves an IdentityN that keeps
        # an ONNX Identity after a Loop output, where TF's inlined freezing has none)
        logits = logits * 2.0
        return {"scores": tf.nn.softmax(logits), "logits": logits}

    @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="a")])
    def other(self, a):
        return {"total": tf.tanh(tf.matmul(a, self.w))}


def _feeds():
    rng = np.random.default_rng(2)
    return {"features": rng.normal(size=(5, 4)).astype(np.float32),
            "ids": np.array([0, 3, 9, 2, 2], np.int32)}


def test_tf_module_converts_natively_like_tf_freezing(tmp_path, monkeypatch):
    module = Scorer()
    saved = str(tmp_path / "scorer")
    tf.saved_model.save(module, saved, signatures={"serving_default": module.serve,
                                                   "other": module.other})
    path = _same_graph_both_routes(saved, tmp_path, monkeypatch)
    feeds = _feeds()
    want = module.serve(**{k: tf.constant(v) for k, v in feeds.items()})
    got = run_onnx(path, feeds)
    for name, value in zip(sorted(want), got):
        assert max_abs_error(value, want[name].numpy()) <= 1e-5, name
    other = tmp_path / "other"
    other.mkdir()
    _same_graph_both_routes(saved, other, monkeypatch, signature="other")


def test_mapped_variables_give_the_same_model_and_verify(tmp_path, monkeypatch):
    """Every variable mapped (not copied into its Const): the same ONNX graph and values;
    `tf2ir verify` gets a real GraphDef of the same graph for TensorFlow."""
    from tf2ir.parser import mapped_graph
    from tf2ir.parser.load import load_model
    module = Scorer()
    saved = str(tmp_path / "scorer")
    tf.saved_model.save(module, saved, signatures={"serving_default": module.serve})
    monkeypatch.setattr(mapped_graph, "MAPPED_MIN_BYTES", 1)
    graph_def, _ = load_model(saved)
    assert isinstance(graph_def, mapped_graph.MappedGraphDef)
    assert sum(isinstance(n, mapped_graph.MappedConst) for n in graph_def.node) == 3
    real = graph_def.to_proto()
    assert [n.name for n in real.node] == [n.name for n in graph_def.node]
    path = _same_graph_both_routes(saved, tmp_path, monkeypatch)
    feeds = _feeds()
    want = module.serve(**{k: tf.constant(v) for k, v in feeds.items()})
    for name, value in zip(sorted(want), run_onnx(path, feeds)):
        assert max_abs_error(value, want[name].numpy()) <= 1e-5, name


@pytest.mark.parametrize("how", ["export", "tf_saved_model_save"])
def test_keras_saved_model_converts_natively(how, tmp_path, monkeypatch):
    """model.export and tf.saved_model.save: the latter's signature reads variable handles
    that the restore op does not assign (resolved through the object graph)."""
    model = _keras_model()
    saved = str(tmp_path / "keras")
    if how == "export":
        model.export(saved, verbose=False)
    else:
        tf.saved_model.save(model, saved)
    path = _same_graph_both_routes(saved, tmp_path, monkeypatch)
    x = np.random.default_rng(3).normal(size=(4, 6)).astype(np.float32)
    got = run_onnx(path, {run_input_name(path): x})[0]
    assert max_abs_error(got, model(x, training=False).numpy()) <= 1e-5


def run_input_name(path):
    import onnx
    return onnx.load(path).graph.input[0].name


def test_tf1_saved_model_with_ref_and_resource_variables(tmp_path, monkeypatch):
    tf1 = tf.compat.v1
    export = str(tmp_path / "tf1")
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [None, 3], name="x")
        w = tf1.get_variable("w", initializer=np.full((3,), 0.5, np.float32), use_resource=False)
        v = tf1.get_variable("v", initializer=np.arange(3, dtype=np.float32), use_resource=True)
        y = tf.nn.relu(x * w + v)
        with tf1.Session(graph=graph) as session:
            session.run(tf1.global_variables_initializer())
            tf1.saved_model.simple_save(session, export, {"x": x}, {"y": y})
            feed = np.random.default_rng(4).normal(size=(2, 3)).astype(np.float32)
            want = session.run(y, {x: feed})
    path = _same_graph_both_routes(export, tmp_path, monkeypatch)
    assert max_abs_error(run_onnx(path, {"x": feed})[0], want) <= 1e-6


def test_tf1_control_flow_carrying_a_resource_variable(tmp_path, monkeypatch):
    """TF1 conds and loops (Switch/Merge, Enter/Exit frames) that carry a variable's handle."""
    tf1 = tf.compat.v1
    export = str(tmp_path / "tf1_flow")
    graph = tf.Graph()
    tf1.disable_control_flow_v2()
    try:
        with graph.as_default():
            x = tf1.placeholder(tf.float32, [None, 3], name="x")
            w = tf1.get_variable("w", initializer=np.full((3,), 0.5, np.float32),
                                 use_resource=True)
            y = tf1.cond(tf.reduce_sum(x) > 0, lambda: x * w, lambda: x - w)
            y = tf1.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * 1.5 + w),
                               [tf.constant(0), y])[1]
            with tf1.Session(graph=graph) as session:
                session.run(tf1.global_variables_initializer())
                tf1.saved_model.simple_save(session, export, {"x": x}, {"y": y})
                feeds = [np.full((2, 3), v, np.float32) for v in (1.0, -1.0)]
                wanted = [session.run(y, {x: f}) for f in feeds]
    finally:
        tf1.enable_control_flow_v2()
    path = _same_graph_both_routes(export, tmp_path, monkeypatch)
    for feed, want in zip(feeds, wanted):
        assert max_abs_error(run_onnx(path, {"x": feed})[0], want) <= 1e-5


def test_tables_convert_natively(tmp_path, monkeypatch):
    """A constant-initialised table and a MutableHashTable (contents in the checkpoint)."""
    class Tables(tf.Module):
        def __init__(self):
            super().__init__()
            self.table = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(
                tf.constant(["a", "bb", "c"]), tf.constant([1, 2, 3], tf.int64)), -1)
            self.mutable = tf.lookup.experimental.MutableHashTable(tf.int64, tf.float32, -1.0)
            self.mutable.insert(tf.constant([1, 2, 3], tf.int64), tf.constant([1.5, 2.5, 3.5]))

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="words"),
                                      tf.TensorSpec([None], tf.int64, name="ids")])
        def __call__(self, words, ids):
            return {"found": self.table.lookup(words), "value": self.mutable.lookup(ids)}

    module = Tables()
    saved = str(tmp_path / "tables")
    tf.saved_model.save(module, saved, signatures=module.__call__)
    path = _same_graph_both_routes(saved, tmp_path, monkeypatch)
    words, ids = np.array(["bb", "zz", "a"], object), np.array([3, 9, 1], np.int64)
    want = module(tf.constant(words), tf.constant(ids))
    import tf2ir
    got = tf2ir.InferenceSession(path).run(None, {"words": words, "ids": ids})
    for name, value in zip(sorted(want), got):
        np.testing.assert_array_equal(value, want[name].numpy())


# -- without TensorFlow ---------------------------------------------------------------------------
NO_TF = textwrap.dedent("""\
    import os
    open(os.path.join(os.path.dirname(__file__), "tried"), "w").close()
    raise ImportError("tensorflow is blocked for this test")
    """)


def _without_tensorflow(tmp_path):
    """An environment whose `import tensorflow` fails (and leaves no_tf/tried behind)."""
    shim = tmp_path / "no_tf"
    shim.mkdir(exist_ok=True)
    (shim / "tensorflow.py").write_text(NO_TF)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(shim)] + sys.path))
    env.pop(READER, None)
    return env


def test_saved_model_converts_where_tensorflow_cannot_import(tmp_path):
    module = Scorer()
    saved = str(tmp_path / "scorer")
    tf.saved_model.save(module, saved, signatures={"serving_default": module.serve})
    out = str(tmp_path / "m.onnx")
    env = _without_tensorflow(tmp_path)
    probe = run_cli("convert", saved, "-o", out, "-v", env=env)
    assert probe.returncode == 0, probe.stderr
    assert "read natively" in probe.stderr
    assert not (tmp_path / "no_tf" / "tried").exists()   # not even tried
    feeds = _feeds()
    want = module.serve(**{k: tf.constant(v) for k, v in feeds.items()})
    for name, value in zip(sorted(want), run_onnx(out, feeds)):
        assert max_abs_error(value, want[name].numpy()) <= 1e-5, name


def _vocabulary_file_model(tmp_path, files: int = 1, text: str = "a\nb\nc\n"):
    """Tables initialised from vocabulary files (assets, the first `vocab.txt` holding
    `text`): the native reader reads one asset's table itself and refuses where the
    SavedModel has several assets."""
    vocabs = []
    for i in range(files):
        vocabs.append(tmp_path / ("vocab.txt" if i == 0 else f"vocab{i}.txt"))
        vocabs[-1].write_text(text if i == 0 else "c\nb\n")

    class Vocab(tf.Module):
        def __init__(self):
            super().__init__()
            self.tables = [tf.lookup.StaticHashTable(tf.lookup.TextFileInitializer(
                str(vocab), tf.string, tf.lookup.TextFileIndex.WHOLE_LINE, tf.int64,
                tf.lookup.TextFileIndex.LINE_NUMBER), -1) for vocab in vocabs]

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="w")])
        def __call__(self, w):
            return {"id": tf.add_n([t.lookup(w) for t in self.tables])}

    module = Vocab()
    saved = str(tmp_path / "vocab")
    tf.saved_model.save(module, saved, signatures=module.__call__)
    return saved


def test_one_vocabulary_file_asset_is_read_natively(tmp_path, monkeypatch):
    """Issue 25: a table filled from the SavedModel's one vocabulary-file asset (BERT's)
    is read without TensorFlow, as TensorFlow reads it (lines without '\\r', line numbers)."""
    saved = _vocabulary_file_model(tmp_path, text="a\nb\r\nc\n")
    import tf2ir
    monkeypatch.setenv(READER, "native")
    words = np.array(["b", "a", "zz", "c", ""], dtype=object)
    got = tf2ir.convert(saved).run({"w": words})["id"]
    expected = tf.saved_model.load(saved).signatures["serving_default"](w=tf.constant(words))
    np.testing.assert_array_equal(got, expected["id"].numpy())
    np.testing.assert_array_equal(got, [1, 0, -1, 2, -1])


def test_what_needs_tensorflow_falls_back_or_is_one_line(tmp_path, monkeypatch):
    saved = _vocabulary_file_model(tmp_path, files=2)
    from tf2ir.parser.load import load_model
    from tf2ir.parser.resources import NeedsTensorFlow
    monkeypatch.setenv(READER, "native")
    with pytest.raises(NeedsTensorFlow, match="InitializeTableFromTextFileV2"):
        load_model(saved)
    monkeypatch.delenv(READER)
    out = str(tmp_path / "m.onnx")
    result = run_cli("convert", saved, "-o", out, "-v")    # TensorFlow is here: it freezes
    assert result.returncode == 0, result.stderr
    assert "freezing with TensorFlow" in result.stderr, result.stderr
    assert "InitializeTableFromTextFileV2" in result.stderr
    os.remove(out)
    result = run_cli("convert", saved, "-o", out, env=_without_tensorflow(tmp_path))
    assert result.returncode == 1, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tf2ir: error: "), result.stderr
    assert "needs TensorFlow" in lines[0] and "InitializeTableFromTextFileV2" in lines[0]
    assert not os.path.exists(out)


class Counter(tf.Module):
    """A signature that assigns a variable (TensorFlow's freezing fails on it as well)."""

    def __init__(self):
        super().__init__()
        self.count = tf.Variable(1.0)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32, name="x")])
    def __call__(self, x):
        self.count.assign_add(1.0)
        return {"y": x * self.count}


def test_a_signature_that_assigns_a_variable_is_refused_natively(tmp_path, monkeypatch):
    from tf2ir.parser.load import load_model
    from tf2ir.parser.resources import NeedsTensorFlow
    module = Counter()
    saved = str(tmp_path / "counter")
    tf.saved_model.save(module, saved, signatures=module.__call__)
    monkeypatch.setenv(READER, "native")
    with pytest.raises(NeedsTensorFlow, match="AssignAddVariableOp") as info:
        load_model(saved)
    assert info.value.node and info.value.model == saved


# -- beyond 2 GB (TF2IR_BIG=1 only: builds a 3.2 GB SavedModel) ----------------------------------
BIG_WIDTH = 16384     # 3 Dense(16384) on 16384 inputs: 3 × 1 GiB of float32 kernels
BUILD_BIG = textwrap.dedent("""\
    import sys, keras
    width = int(sys.argv[2])
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((width,), name="x")] + [
        keras.layers.Dense(width, activation="relu" if i < 2 else None, name=f"dense{i}",
                           kernel_initializer=keras.initializers.RandomUniform(-0.01, 0.01))
        for i in range(3)])
    model.export(sys.argv[1], verbose=False)
    import numpy as np
    x = np.random.default_rng(0).uniform(-1, 1, (2, width)).astype(np.float32)
    np.save(sys.argv[1] + ".x.npy", x)
    np.save(sys.argv[1] + ".y.npy", model(x).numpy())
    """)


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("TF2IR_BIG") != "1", reason="set TF2IR_BIG=1: builds a "
                    "3.2 GB SavedModel")
def test_saved_model_beyond_2gb(tmp_path):
    """A SavedModel of 3.2 GB of variables: converts natively to ONNX with external data
    (onnxruntime runs it) with peak memory at most 1.5× the weights; `--emit ir` and
    `compile` of the .ir handle it too. The figures are printed (pytest -s)."""
    import shutil
    try:
        _convert_big(tmp_path)
    finally:   # pytest keeps its last temporary directories: 12 GB here
        shutil.rmtree(tmp_path, ignore_errors=True)


def _convert_big(tmp_path):
    import subprocess

    from tf2ir.tools.measure import run_measured
    saved = str(tmp_path / "big")
    build = subprocess.run([sys.executable, "-c", BUILD_BIG, saved, str(BIG_WIDTH)],
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-2000:]
    weights = 3 * (BIG_WIDTH * BIG_WIDTH + BIG_WIDTH) * 4
    cli = [sys.executable, "-m", "tf2ir.tools.cli"]
    onnx_path, ir_path = str(tmp_path / "big.onnx"), str(tmp_path / "big.ir")
    figures = {}
    for what, cmd in (("convert", cli + ["convert", saved, "-o", onnx_path, "-q"]),
                      ("emit-ir", cli + ["convert", saved, "--emit", "ir", "-o", ir_path, "-q"]),
                      ("compile", cli + ["compile", ir_path, "-o", str(tmp_path / "ir.onnx")])):
        measure = run_measured(cmd)
        assert measure.ok, f"{what}: {measure.error}"
        figures[what] = measure
        print(f"{what}: {measure.seconds:.1f} s, peak {measure.peak_mb:.0f} MB = "
              f"{measure.peak_mb * 2 ** 20 / weights:.2f}× the weights")
    assert os.path.getsize(onnx_path + ".data") >= weights * 0.99
    assert os.path.getsize(ir_path + ".weights") >= weights * 0.99
    x, want = np.load(saved + ".x.npy"), np.load(saved + ".y.npy")
    for path in (onnx_path, str(tmp_path / "ir.onnx")):
        got = run_onnx(path, {"x": x})[0]
        assert max_abs_error(got, want) <= 1e-4
    for what, measure in figures.items():
        assert measure.peak_mb * 2 ** 20 <= 1.5 * weights, what


def test_partitioned_variable_falls_back_to_tensorflow(tmp_path, monkeypatch):
    """A TF1 partitioned variable is checkpointed in slices: refused natively (naming the
    entry), frozen by TensorFlow instead."""
    from tf2ir.parser.load import load_model
    from tf2ir.parser.resources import NeedsTensorFlow
    tf1 = tf.compat.v1
    export = str(tmp_path / "partitioned")
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [None, 4], name="x")
        w = tf1.get_variable("w", shape=[4, 2], partitioner=tf1.fixed_size_partitioner(2),
                             initializer=tf1.random_normal_initializer(seed=1))
        y = tf.matmul(x, w)
        with tf1.Session(graph=graph) as session:
            session.run(tf1.global_variables_initializer())
            tf1.saved_model.simple_save(session, export, {"x": x}, {"y": y})
            feed = np.ones((2, 4), np.float32)
            want = session.run(y, {x: feed})
    monkeypatch.setenv(READER, "native")
    with pytest.raises(NeedsTensorFlow, match="partitioned"):
        load_model(export)
    monkeypatch.delenv(READER)
    out = _convert(export, str(tmp_path / "m.onnx"), "", monkeypatch)
    assert max_abs_error(run_onnx(out, {"x": feed})[0], want) <= 1e-6


def test_tf1_saved_model_with_a_table(tmp_path, monkeypatch):
    """A TF1 table initialised by the SavedModel's main op (tables_initializer): read
    natively (TensorFlow's own freezing fails on it: "Failed to import metagraph")."""
    tf1 = tf.compat.v1
    export = str(tmp_path / "tf1_table")
    graph = tf.Graph()
    with graph.as_default():
        words = tf1.placeholder(tf.string, [None], name="words")
        table = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(
            tf.constant(["a", "bb"]), tf.constant([4, 5], tf.int64)), -1)
        ids = tf.identity(table.lookup(words) * 2, name="ids")
        with tf1.Session(graph=graph) as session:
            session.run(tf1.tables_initializer())
            tf1.saved_model.simple_save(session, export, {"words": words}, {"ids": ids})
            feed = np.array(["bb", "zz", "a"], object)
            want = session.run(ids, {words: feed})
    path = _convert(export, str(tmp_path / "m.onnx"), "native", monkeypatch)
    import tf2ir
    got = tf2ir.InferenceSession(path).run(None, {"words": feed})[0]
    np.testing.assert_array_equal(got, want)
