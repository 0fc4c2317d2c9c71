"""Lookup tables as real tokenizers hold them (issue 25): constant tables whose handles pass
into tf.cond branches (If), While bodies and nested calls, also through TF1 Switch/Merge;
run-time tables used as a memo (keras-hub BPE's MutableHashTable cache: a lookup after an
insert in the same graph reads what was inserted). Each model is a small tf.function,
frozen by tf2ir (parser/frozen.py, parser/tables.py), converted and run in onnxruntime,
compared with TensorFlow's own result."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import tf2ir  # noqa: E402
from tf2ir.ir.errors import ConversionError, ExitStatus  # noqa: E402

WORDS = np.array(["a", "b", "zz", "c", "", "b"], dtype=object)


def _table():
    keys = tf.constant(["a", "b", "c"])
    return tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(keys, tf.constant([1, 2, 3], tf.int64)), -1)


def _check(fn, feeds):
    """Convert `fn`'s concrete function, run it on each feed, compare with TF."""
    result = tf2ir.convert(fn.get_concrete_function())
    session_inputs = [i.name for i in result.model.graph.input]
    for feed in feeds:
        expected = fn(*[tf.constant(v) for v in feed])
        got = result.run(dict(zip(session_inputs, feed)))
        out = list(got.values())[0]
        np.testing.assert_array_equal(out, expected.numpy())
    return result


def test_constant_table_in_both_cond_branches():
    table = _table()

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="x"),
                                  tf.TensorSpec([], tf.bool, name="p")])
    def fn(x, p):
        return tf.cond(p, lambda: table.lookup(x) * 2, lambda: table.lookup(x) + 1)
    _check(fn, [(WORDS, np.array(True)), (WORDS, np.array(False))])


def test_constant_table_through_nested_cond_and_while():
    table = _table()

    @tf.function
    def inner(x, p):   # a call: inlined, the handle reaches the cond inside it
        return tf.cond(p, lambda: table.lookup(x), lambda: -table.lookup(x))

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="x"),
                                  tf.TensorSpec([], tf.bool, name="p")])
    def fn(x, p):
        def body(i, acc):
            return i + 1, acc + tf.cond(i > 0, lambda: inner(x, p), lambda: table.lookup(x))
        _, acc = tf.while_loop(lambda i, acc: i < 3, body,
                               [tf.constant(0), tf.zeros_like(table.lookup(x))])
        return acc
    _check(fn, [(WORDS, np.array(True)), (WORDS, np.array(False))])


def test_constant_table_through_tf1_switch_merge():
    """A cond lowered to Switch/Merge (TF1 control flow): the handle goes through a Switch
    into the raised cond's function."""
    from tensorflow.python.framework.convert_to_constants import (
        convert_variables_to_constants_v2,
    )

    from tf2ir.parser.graph_view import graph_def_class
    from tf2ir.parser.tables import restore_tables
    table = _table()

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="x"),
                                  tf.TensorSpec([], tf.bool, name="p")])
    def fn(x, p):
        return tf.cond(p, lambda: table.lookup(x) * 2, lambda: table.lookup(x) + 5)
    concrete = fn.get_concrete_function()
    frozen = convert_variables_to_constants_v2(concrete, lower_control_flow=True)
    graph_def = graph_def_class().FromString(frozen.graph.as_graph_def().SerializeToString())
    assert {"Switch", "Merge"} <= {n.op for n in graph_def.node}
    assert restore_tables(concrete, graph_def)
    out = [n.name for n in graph_def.node if n.op == "Identity" and n.name.startswith("Identity")]
    result = tf2ir.convert(graph_def.SerializeToString(), outputs=[f"{out[0]}:0"])
    names = [i.name for i in result.model.graph.input]
    for p in (True, False):
        got = list(result.run(dict(zip(names, [WORDS, np.array(p)]))).values())[0]
        np.testing.assert_array_equal(got, fn(tf.constant(WORDS), tf.constant(p)).numpy())


def test_memo_table_inserts_then_lookups_in_a_branch():
    """keras-hub BPE's cache: look up, compute the misses in a cond branch, insert them,
    look up again. The converted model starts with the frozen (empty) cache each run and
    gives TF's result; running it twice gives the same result again."""
    table = _table()
    cache = tf.lookup.experimental.MutableHashTable(tf.string, tf.int64, -7)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="x")])
    def fn(x):
        hit = cache.lookup(x)

        def fill():
            cache.insert(x, table.lookup(x) * 10)
            cache.insert(x[:1], tf.constant([99], tf.int64))   # a later insert wins
            return cache.lookup(x)
        return tf.cond(tf.reduce_any(hit == -7), fill, lambda: hit)
    result = tf2ir.convert(fn.get_concrete_function())
    first = result.run({"x": WORDS})["output_0"]
    np.testing.assert_array_equal(first, fn(tf.constant(WORDS)).numpy())
    np.testing.assert_array_equal(first, [99, 20, -10, 30, -10, 20])
    # each run starts from the frozen (empty) cache: x[:1] is now "b", inserted last
    np.testing.assert_array_equal(result.run({"x": WORDS[::-1]})["output_0"],
                                  [99, -10, 30, -10, 99, 10])


def test_lookup_after_a_branch_that_inserts_is_refused():
    cache = tf.lookup.experimental.MutableHashTable(tf.string, tf.int64, -1)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="x"),
                                  tf.TensorSpec([], tf.bool, name="p")])
    def fn(x, p):
        def fill():
            cache.insert(x, tf.ones_like(x, tf.int64))
            return tf.constant(1)
        done = tf.cond(p, fill, lambda: tf.constant(0))
        with tf.control_dependencies([done]):
            return cache.lookup(x)
    with pytest.raises(ConversionError) as info:
        tf2ir.convert(fn.get_concrete_function())
    assert "whose function inserts into it" in str(info.value)
    assert info.value.exit_code == ExitStatus.UNSUPPORTED


def test_size_after_run_time_insert_is_refused():
    cache = tf.lookup.experimental.MutableHashTable(tf.string, tf.int64, -1)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="x")])
    def fn(x):
        cache.insert(x, tf.ones_like(x, tf.int64))
        return cache.size()
    with pytest.raises(ConversionError) as info:
        tf2ir.convert(fn.get_concrete_function())
    assert "filled at run time" in str(info.value)
    assert info.value.op_type == "LookupTableSizeV2"
