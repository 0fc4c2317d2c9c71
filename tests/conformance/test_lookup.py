"""Conformance of the lookup tables (opp/lookup.py, plugins/builtin/lookup.py) against
TensorFlow: tf.lookup tables captured by tf.functions (frozen by tools.models.freeze_function
and through a SavedModel), and TF1 graphs whose tables are initialised from constants.
Models run through tf2ir.InferenceSession (StaticVocabularyTable's buckets use the string
family's kernels)."""

from __future__ import annotations

import os
import tempfile

import numpy as np
import pytest

from tests.conformance.harness import (
    as_text, assert_close, convert_function, relaxed, single_op_graph, spec,
)

tf = pytest.importorskip("tensorflow")

TESTED_DTYPES = {
    "LookupTableFindV2": ("string", "int64", "int32", "float32", "float64", "bool"),
    "LookupTableSizeV2": ("int64",),
    "HashTableV2": ("string", "int64", "int32", "float32"),
    "MutableHashTableV2": ("int64", "float32"),
}

WORDS = np.array(["apple", "pear", "", "kiwi", "plum", "日本", "apple"], object)


def run_converted(path, feeds):
    import tf2ir
    return tf2ir.InferenceSession(path).run(None, feeds)


def check_table_fn(fn, inputs, specs, extra_inputs=()):
    """Freeze `fn` with tools.models.freeze_function, convert it, and compare with TF."""
    fn, specs, relay, reference = relaxed(fn, specs)      # the three-way shape modes
    with tempfile.TemporaryDirectory(prefix="tf2ir-lookup-") as directory:
        path, graph, _, _ = convert_function(fn, specs, directory)
        for feed in [inputs] + list(extra_inputs):
            feed = relay(feed)
            want = [np.asarray(w) for w in tf.nest.flatten(
                reference(*[tf.constant(a) for a in feed]))]
            got = run_converted(path, {s.name: np.asarray(a) for s, a in zip(specs, feed)})
            assert len(got) == len(want)
            for k, (w, g) in enumerate(zip(want, got)):
                assert_close(as_text(w), as_text(g), what=f"output {k}")
        return graph


def string_table(default=-1):
    keys = tf.constant(["apple", "pear", "plum", "日本"])
    return tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(keys, tf.constant([3, 1, 4, 1], tf.int64)), default)


def test_static_hash_table_string_to_int64_and_size():
    table = string_table()
    graph = check_table_fn(lambda x: (table.lookup(x), table.size()), [WORDS],
                           [spec((None,), "string")], extra_inputs=[[WORDS[:0]], [WORDS[:2]]])
    assert "LookupTableFind" in {n.op_type for n in graph.nodes}


def test_static_hash_table_int64_to_float_with_run_time_default():
    table = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(
        tf.constant([7, -3, 2 ** 62, 0], tf.int64), tf.constant([0.5, -1.25, 3.0, 8.0])), 0.0)

    def fn(x, d):
        return tf.raw_ops.LookupTableFindV2(table_handle=table.resource_handle, keys=x,
                                            default_value=d)
    x = np.array([[7, 1], [2 ** 62, -3], [0, -2 ** 63]], np.int64)
    check_table_fn(fn, [x, np.array(-9.5, np.float32)],
                   [spec((None, 2), "int64"), spec((), "float32", "x1")],
                   extra_inputs=[[x[:1], np.array(2.0, np.float32)]])


@pytest.mark.parametrize("key_dtype,value_dtype", [("string", "string"), ("int32", "int32"),
                                                   ("string", "bool"), ("string", "float64"),
                                                   ("int64", "string"), ("int32", "float64")])
def test_static_hash_table_dtypes(key_dtype, value_dtype):
    keys = np.array(["a", "b", "c"], object) if key_dtype == "string" else \
        np.array([5, -1, 9], key_dtype)
    values = {"string": np.array(["x", "yy", ""], object), "int32": np.array([1, 2, 3], np.int32),
              "bool": np.array([True, False, True]),
              "float64": np.array([0.1, 0.2, 0.3])}[value_dtype]
    default = {"string": "UNK", "int32": -1, "bool": False, "float64": np.nan}[value_dtype]
    table = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(
        tf.constant(keys), tf.constant(values)), tf.constant(default, value_dtype))
    x = np.array(["c", "q", "a"], object) if key_dtype == "string" else \
        np.array([9, 0, 5, -1], key_dtype)
    check_table_fn(lambda k: table.lookup(k), [x], [spec((None,), key_dtype)])


@pytest.mark.parametrize("key_dtype", ["string", "int64"])
def test_static_vocabulary_table_with_oov_buckets(key_dtype):
    keys = tf.constant(["apple", "pear", "plum"]) if key_dtype == "string" else \
        tf.constant([10, 20, 30], tf.int64)
    table = tf.lookup.StaticVocabularyTable(tf.lookup.KeyValueTensorInitializer(
        keys, tf.constant([0, 1, 2], tf.int64)), num_oov_buckets=5)
    x = WORDS if key_dtype == "string" else np.array([10, 11, 30, -7, 2 ** 40], np.int64)
    check_table_fn(lambda k: (table.lookup(k), table.size()), [x], [spec((None,), key_dtype)])


def test_empty_table_gives_the_default():
    """TF refuses to build an empty table; the lowering still has a path for one."""
    from tf2ir.ir import TensorDesc
    from tf2ir.ir.onnx.compile import compile_to_file
    graph, _ = single_op_graph("LookupTableFind", [TensorDesc("string", (None,)),
                                                   TensorDesc("int64", ())],
                               {"table_keys": np.array([], object),
                                "table_values": np.array([], np.int64)})
    with tempfile.TemporaryDirectory(prefix="tf2ir-lookup-") as directory:
        path = os.path.join(directory, "empty.onnx")
        compile_to_file(graph, path)
        out, = run_converted(path, {"in0": WORDS[:3], "in1": np.array(-5, np.int64)})
    np.testing.assert_array_equal(out, [-5, -5, -5])


def test_mutable_hash_table_frozen_with_its_contents():
    table = tf.lookup.experimental.MutableHashTable(tf.int64, tf.float32, default_value=-1.0)
    table.insert(tf.constant([1, 2, 3], tf.int64), tf.constant([1.5, 2.5, 3.5]))
    check_table_fn(lambda k: table.lookup(k), [np.array([3, 4, 1], np.int64)],
                   [spec((None,), "int64")])


class Vocabulary(tf.Module):
    def __init__(self):
        super().__init__()
        self.table = string_table(default=-7)
        self.vocab = tf.lookup.StaticVocabularyTable(tf.lookup.KeyValueTensorInitializer(
            tf.constant([1, 5, 9], tf.int64), tf.constant([0, 1, 2], tf.int64)), 3)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="words"),
                                  tf.TensorSpec([None], tf.int64, name="ids")])
    def __call__(self, words, ids):
        return {"found": self.table.lookup(words), "size": self.table.size(),
                "bucket": self.vocab.lookup(ids)}


def test_saved_model_with_tables():
    from tf2ir.ir.onnx.compile import compile_to_file
    from tf2ir.parser.pipeline import convert_file
    module = Vocabulary()
    words, ids = WORDS, np.array([1, 2, 9, 5, -4], np.int64)
    want = module(tf.constant(words), tf.constant(ids))
    with tempfile.TemporaryDirectory(prefix="tf2ir-lookup-") as directory:
        saved = os.path.join(directory, "model")
        tf.saved_model.save(module, saved, signatures=module.__call__)
        graph, _ = convert_file(saved)
        path = os.path.join(directory, "model.onnx")
        compile_to_file(graph, path, model_name=saved)
        got = run_converted(path, {"words": words, "ids": ids})
    for name, value in zip(sorted(want), got):    # outputs in the signature's sorted order
        assert_close(np.asarray(want[name]), value, what=name)


# -- TF1 graphs ------------------------------------------------------------------------------
def convert_tf1(build, feeds, outputs, directory):
    """Build a TF1 graph, run it in a Session (after its table initializers), write its
    GraphDef and convert it; return (TF's outputs, the converted model's)."""
    from tf2ir.ir.onnx.compile import compile_to_file
    from tf2ir.parser.pipeline import convert_file
    v1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        build(v1)
        init = v1.tables_initializer(name="init_all_tables")
    with v1.Session(graph=graph) as session:
        session.run(init)
        want = session.run(outputs, {f"{k}:0": v for k, v in feeds.items()})
    pb = os.path.join(directory, "tf1.pb")
    with open(pb, "wb") as f:
        f.write(graph.as_graph_def().SerializeToString())
    ir_graph, _ = convert_file(pb, outputs=outputs)
    path = os.path.join(directory, "tf1.onnx")
    compile_to_file(ir_graph, path, model_name=pb)
    return want, run_converted(path, feeds)


def test_tf1_hash_table_from_constants():
    def build(v1):
        x = v1.placeholder(tf.string, [None], name="x")
        ids = v1.placeholder(tf.int64, [None, None], name="ids")
        words = v1.lookup.StaticHashTable(v1.lookup.KeyValueTensorInitializer(
            ["apple", "pear"], [1, 2], tf.string, tf.int64), -1)
        tf.identity(words.lookup(x), name="word_ids")
        tf.identity(words.size(), name="size")
        scores = tf.raw_ops.HashTableV2(key_dtype=tf.int64, value_dtype=tf.float32)
        init = tf.raw_ops.InitializeTableV2(table_handle=scores, keys=tf.constant([4, 8], tf.int64),
                                            values=tf.constant([0.25, -2.0]))
        v1.add_to_collection(v1.GraphKeys.TABLE_INITIALIZERS, init)
        tf.raw_ops.LookupTableFindV2(table_handle=scores, keys=ids,
                                     default_value=tf.constant(9.0), name="scores")
    feeds = {"x": WORDS, "ids": np.array([[8, 1], [4, 4]], np.int64)}
    with tempfile.TemporaryDirectory(prefix="tf2ir-lookup-") as directory:
        want, got = convert_tf1(build, feeds, ["word_ids:0", "size:0", "scores:0"], directory)
    for k, (w, g) in enumerate(zip(want, got)):
        assert_close(np.asarray(w), g, what=f"output {k}")


def test_tf1_mutable_hash_table_filled_by_insert():
    def build(v1):
        x = v1.placeholder(tf.int64, [None], name="x")
        table = tf.raw_ops.MutableHashTableV2(key_dtype=tf.int64, value_dtype=tf.int64)
        insert = tf.raw_ops.LookupTableInsertV2(table_handle=table, keys=tf.constant([3, 6], tf.int64),
                                                values=tf.constant([30, 60], tf.int64))
        tf.compat.v1.add_to_collection(tf.compat.v1.GraphKeys.TABLE_INITIALIZERS, insert)
        tf.raw_ops.LookupTableFindV2(table_handle=table, keys=x,
                                     default_value=tf.constant(-1, tf.int64), name="found")
    with tempfile.TemporaryDirectory(prefix="tf2ir-lookup-") as directory:
        want, got = convert_tf1(build, {"x": np.array([6, 5, 3], np.int64)}, ["found:0"],
                                directory)
    assert_close(want[0], got[0])


def test_tf1_table_from_a_file_is_refused():
    from tf2ir.ir import ConversionError

    def build(v1):
        x = v1.placeholder(tf.string, [None], name="x")
        table = tf.raw_ops.HashTableV2(key_dtype=tf.string, value_dtype=tf.int64)
        tf.raw_ops.LookupTableFindV2(table_handle=table, keys=x,
                                     default_value=tf.constant(-1, tf.int64), name="found")
    from tf2ir.parser.pipeline import convert_graph_def
    from tf2ir.parser.graph_view import graph_def_class
    graph = tf.Graph()
    with graph.as_default():
        build(tf.compat.v1)
    graph_def = graph_def_class().FromString(graph.as_graph_def().SerializeToString())
    with pytest.raises(ConversionError, match="not initialised from constant keys") as info:
        convert_graph_def(graph_def, "tf1", outputs=["found:0"])
    assert info.value.exit_code == 3


# -- IR ---------------------------------------------------------------------------------------
def test_find_kernel_matches_the_lowering_semantics():
    from tf2ir.opp.lookup import table_find
    out = table_find(np.array([[2, 9]], np.int64), np.array(-1, np.int64),
                     table_keys=np.array([9, 2], np.int64), table_values=np.array([90, 20]))
    np.testing.assert_array_equal(out, [[20, 90]])


def test_find_rejects_a_default_of_the_wrong_dtype():
    from tf2ir.ir import ConversionError, TensorDesc
    with pytest.raises(ConversionError, match="default value of dtype int32"):
        single_op_graph("LookupTableFind", [TensorDesc("string", (None,)),
                                            TensorDesc("int32", ())],
                        {"table_keys": np.array(["a"], object),
                         "table_values": np.array([1], np.int64)})
