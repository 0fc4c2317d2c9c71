"""The concat pass splices a one-input inner Concat into its outer Concat (issue 20, class 2).

It counted the outer Concat's inputs to see whether it had spliced anything: a one-input inner
Concat (what a one-element Pack lowers to) keeps the count, so the inner node went but the outer
one still read its output, which onnx.checker reports as "Nodes in a graph must be
topologically sorted". Seen with `tf.repeat` with a run-time count and with `tf.eye` of a
run-time size inside attention."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conformance.harness import check_op, spec
from tests.ir.onnx.test_pass_common import check_pass, node, onnx_graph
from tf2ir.ir.onnx.graph import GraphInvariantError
from tf2ir.ir.onnx.passes.concat import flatten_concats


def test_a_one_input_inner_concat_is_spliced_with_its_input():
    nodes = [node("Unsqueeze", ["s", "axes"], ["u"]),
             node("Concat", ["u"], ["one"], axis=0),           # a one-element Pack, lowered
             node("Concat", ["a", "one", "b"], ["y"], axis=0)]
    inits = {"axes": np.array([0], np.int64)}
    inputs = {"s": (np.int64, []), "a": (np.int64, [2]), "b": (np.int64, [1])}
    feeds = {"s": np.array(7, np.int64), "a": np.array([1, 2], np.int64),
             "b": np.array([3], np.int64)}
    g, count = check_pass(flatten_concats, nodes, inits, inputs, {"y": (np.int64, [4])}, feeds)
    assert count == 1
    assert [list(n.input) for n in g.nodes if n.op_type == "Concat"] == [["a", "u", "b"]]


def test_the_issue_20_mistake_is_refused_at_once(monkeypatch):
    """Had the pass kept the outer Concat reading the inner one (issue 20), the graph's verb
    that removes the inner Concat raises, naming it, instead of writing a broken order."""
    nodes = [node("Concat", ["s"], ["one"], axis=0),
             node("Concat", ["a", "one"], ["y"], axis=0)]
    g = onnx_graph(nodes, {}, {"s": (np.int64, [1]), "a": (np.int64, [2])},
                   {"y": (np.int64, [3])})
    monkeypatch.setattr(g, "set_inputs", lambda node, names: None)     # the rewiring lost
    with pytest.raises(GraphInvariantError, match="Concat:one.*'one' unproduced while it is read"):
        flatten_concats(g)


def test_repeat_with_a_run_time_count_matches_tensorflow():
    import tensorflow as tf
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    counts = np.array([2, 0, 3], np.int32)
    check_op(lambda x, n: tf.repeat(x, n, axis=0), [x, counts],
             specs=[spec([3, 4], "float32", "x0"), spec([3], "int32", "x1")],
             extra_inputs=[[x, np.array([1, 1, 1], np.int32)]])


def test_eye_of_the_run_time_length_in_attention_matches_tensorflow():
    import tensorflow as tf
    rng = np.random.default_rng(20)
    wq, wk = (rng.normal(size=(8, 8)).astype(np.float32) for _ in range(2))

    def attention(x):
        q, k = tf.matmul(x, wq), tf.matmul(x, wk)
        scores = tf.matmul(q, k, transpose_b=True) / np.float32(np.sqrt(8.0))
        scores += -1e4 * tf.eye(tf.shape(x)[1])                # no attending to oneself
        return tf.matmul(tf.nn.softmax(scores, axis=-1), x)

    check_op(attention, [rng.normal(size=(2, 5, 8)).astype(np.float32)],
             specs=[spec([None, None, 8])], atol=1e-4, rtol=1e-4,
             extra_inputs=[[rng.normal(size=(1, 3, 8)).astype(np.float32)]])
