"""Conformance of TF1 control flow raised into If/While (parser/control_flow.py) against
TensorFlow: graphs built with control flow v1 (tf.compat.v1 cond and while_loop in graph
mode) and graphs frozen with TF's default lowering (convert_variables_to_constants_v2 with
lower_control_flow=True). Each converts into IR If/While nodes whose bodies are subgraphs,
and onnxruntime matches a TF session on two input sets of different batch."""

from __future__ import annotations

import os

import numpy as np
import pytest

from tests.conformance.harness import assert_close, rand
from tf2ir.ir import ConversionError

tf = pytest.importorskip("tensorflow")
tf1 = tf.compat.v1

TF1_OPS = {"Switch", "Merge", "Enter", "Exit", "NextIteration", "LoopCond"}


def _graph_v1(fn, specs):
    """A TF1 graph (control flow v1) of `fn` over placeholders x0, x1...; output 'out'."""
    graph = tf.Graph()
    tf1.disable_control_flow_v2()
    try:
        with graph.as_default():
            args = [tf1.placeholder(dtype, shape, name=f"x{i}")
                    for i, (shape, dtype) in enumerate(specs)]
            result = fn(*args)
            results = result if isinstance(result, (list, tuple)) else [result]
            for i, r in enumerate(results):
                tf.identity(r, name=f"out{i}")
    finally:
        tf1.enable_control_flow_v2()
    return graph, [f"out{i}" for i in range(len(results))]


def _session_run(graph, outputs, feeds):
    with tf1.Session(graph=graph) as session:
        return session.run([f"{o}:0" for o in outputs],
                           {f"x{i}:0": v for i, v in enumerate(feeds)})


def _check(graph_def, outputs, run_tf, feed_sets, tmp_path, structured=("If", "While")):
    """Convert `graph_def`, check its IR holds the structured ops and no TF1 op, and compare
    onnxruntime with `run_tf(feeds)` on each feed set."""
    import onnxruntime as ort
    from tf2ir.ir.onnx.compile import compile_to_file
    from tf2ir.parser.pipeline import convert_graph_def
    assert TF1_OPS & {n.op for n in graph_def.node}, "the graph has no TF1 control flow"
    graph, _ = convert_graph_def(graph_def, "tf1.pb", outputs=outputs)
    ops = _all_op_types(graph)
    assert set(structured) <= ops and not ops & TF1_OPS, ops
    path = os.path.join(str(tmp_path), "model.onnx")
    compile_to_file(graph, path)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    for feeds in feed_sets:
        want = run_tf(feeds)
        got = session.run(None, dict(zip(names, map(np.asarray, feeds))))
        assert len(got) == len(want)
        for k, (w, g) in enumerate(zip(want, got)):
            assert_close(np.asarray(w), g, what=f"output {k}")
    return graph


def _all_op_types(graph):
    ops = set()
    for node in graph.nodes:
        ops.add(node.op_type)
        for sub in node.subgraphs.values():
            ops |= _all_op_types(sub)
    return ops


def check_v1(fn, specs, feed_sets, tmp_path, structured=("If", "While")):
    graph, outputs = _graph_v1(fn, specs)
    return _check(graph.as_graph_def(), outputs, lambda f: _session_run(graph, outputs, f),
                  feed_sets, tmp_path, structured)


def check_lowered(fn, specs, feed_sets, tmp_path, structured=("If", "While")):
    """`fn` as a tf.function frozen the TF default way (control flow lowered)."""
    from tf2ir.parser.load import load_graph_def
    from tf2ir.tools.models import freeze_function
    pb = os.path.join(str(tmp_path), "lowered.pb")
    outputs = freeze_function(fn, specs, pb, lower_control_flow=True)
    function = tf.function(fn)

    def run_tf(feeds):
        return [np.asarray(r) for r in tf.nest.flatten(function(*[tf.constant(f) for f in feeds]))]
    return _check(load_graph_def(pb), [o.split(":")[0] for o in outputs], run_tf, feed_sets,
                  tmp_path, structured)


F32 = tf.float32
BATCHES = [[rand(1, 3)], [rand(4, 3)]]


# -- TF1 graphs (control flow v1) ----------------------------------------------------------
def test_cond_with_two_outputs_and_a_second_cond_on_the_same_predicate(tmp_path):
    def fn(x):
        p = tf.reduce_sum(x) > 0
        a, b = tf1.cond(p, lambda: (x * 2.0, x + 1.0), lambda: (x - 1.0, x * 3.0))
        c = tf1.cond(p, lambda: a + b, lambda: a - b)   # reads the first cond's outputs
        return tf1.cond(tf.reduce_min(x) > -1.0, lambda: c, lambda: tf.ones_like(c) * 7.0)
    feeds = [[np.full((2, 3), 0.5, np.float32)], [np.full((3, 3), -0.5, np.float32)]] + BATCHES
    graph = check_v1(fn, [([None, 3], F32)], feeds, tmp_path, structured=("If",))
    assert sum(n.op_type == "If" for n in graph.nodes) == 3


@pytest.mark.parametrize("dtype", ["int32", "bool"])
def test_cond_of_other_dtypes_with_a_branch_that_returns_its_input(dtype, tmp_path):
    def fn(x):
        if dtype == "bool":
            return tf1.cond(tf.reduce_any(x), lambda: x, lambda: tf.logical_not(x))
        return tf1.cond(tf.reduce_sum(x) > 0, lambda: x, lambda: x * 3 - 1)
    feeds = [[rand(2, 3, dtype=dtype)], [rand(5, 3, dtype=dtype)], [np.zeros((1, 3), dtype)]]
    check_v1(fn, [([None, 3], tf.as_dtype(dtype))], feeds, tmp_path, structured=("If",))


def test_while_with_invariants_and_a_data_dependent_trip_count(tmp_path):
    def fn(x):
        w = tf.reduce_mean(x) + 1.0          # read in the body: a loop-invariant Enter
        n = tf.cast(tf.reduce_sum(tf.abs(x)) * 3.0, tf.int32) % 5 + 1
        r = tf1.while_loop(lambda i, a, b: i < n, lambda i, a, b: (i + 1, a * w + b, b - 0.5),
                           [tf.constant(0), x, x * 0.1])
        return r[1] + r[2], r[0]
    check_v1(fn, [([None, 3], F32)], BATCHES, tmp_path, structured=("While",))


def test_nested_loops_with_a_cond_in_the_inner_body(tmp_path):
    def fn(x):
        def outer(i, acc):
            def inner(j, a):
                a = tf1.cond(tf.reduce_sum(a) > 10.0, lambda: a * 0.5, lambda: a + 1.0)
                return j + 1, a
            return i + 1, tf1.while_loop(lambda j, a: j < i, inner, [0, acc])[1]
        return tf1.while_loop(lambda i, a: i < 4, outer, [tf.constant(0), x])[1]
    graph = check_v1(fn, [([None, 3], F32)], BATCHES, tmp_path)
    (loop,) = [n for n in graph.nodes if n.op_type == "While"]
    assert "While" in {n.op_type for n in loop.subgraphs["body"].nodes}


def test_loop_inside_a_branch(tmp_path):
    def fn(x):
        grow = lambda: tf1.while_loop(lambda a: tf.reduce_sum(a) < 50.0,  # noqa: E731
                                      lambda a: a * 2.0 + 0.1, [x])[0]
        return tf1.cond(tf.reduce_max(x) > 0.0, grow, lambda: -x)
    feeds = BATCHES + [[np.full((2, 3), -1.0, np.float32)]]
    check_v1(fn, [([None, 3], F32)], feeds, tmp_path)


def test_loop_variable_whose_shape_changes_and_maximum_iterations(tmp_path):
    def fn(x):
        doubled = tf1.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, tf.concat([a, a], 0)),
                                 [0, x], shape_invariants=[tf.TensorShape([]),
                                                           tf.TensorShape([None, 3])])[1]
        capped = tf1.while_loop(lambda a: tf.reduce_sum(a) < 1e9, lambda a: a * 2.0 + 1.0, [x],
                                maximum_iterations=7)[0]
        return doubled, capped
    check_v1(fn, [([None, 3], F32)], BATCHES, tmp_path, structured=("While",))


# -- graphs frozen with TF's default lowering ----------------------------------------------
def test_lowered_cond_and_while(tmp_path):
    def fn(x, n):
        y = tf.cond(tf.reduce_sum(x) > 0, lambda: x * 2.0, lambda: x - 1.0)
        return tf.while_loop(lambda i, a: i < n, lambda i, a: (i + 1, a * 1.5 + y), [0, y])[1]
    specs = [tf.TensorSpec([None, 3], F32, name="x0"), tf.TensorSpec([], tf.int32, name="x1")]
    feeds = [[rand(1, 3), np.int32(0)], [rand(4, 3), np.int32(3)]]
    check_lowered(fn, specs, feeds, tmp_path)


def test_lowered_transformer_attention_with_a_cond_on_the_sequence_length(tmp_path):
    def fn(x):
        scores = tf.matmul(x, x, transpose_b=True) / 3.0
        scores = tf.cond(tf.shape(x)[1] > 4,
                         lambda: scores - tf.reduce_max(scores, -1, keepdims=True),
                         lambda: scores)
        return tf.matmul(tf.nn.softmax(scores), x)
    specs = [tf.TensorSpec([None, None, 6], F32, name="x0")]
    check_lowered(fn, specs, [[rand(1, 3, 6)], [rand(2, 7, 6)]], tmp_path, structured=("If",))


def _boxes(count, seed):
    rng = np.random.default_rng(seed)
    corners = np.sort(rng.uniform(0, 1, (count, 2, 2)), axis=1)
    return corners.reshape(count, 4)[:, [0, 2, 1, 3]].astype(np.float32), \
        rng.uniform(0, 1, count).astype(np.float32)


def test_lowered_padded_non_max_suppression_loop(tmp_path):
    def fn(boxes, scores):
        return tf.image.non_max_suppression_padded(
            boxes, scores, max_output_size=5, iou_threshold=0.5, score_threshold=0.1,
            pad_to_max_output_size=True)
    specs = [tf.TensorSpec([None, 4], F32, name="x0"), tf.TensorSpec([None], F32, name="x1")]
    graph = check_lowered(fn, specs, [list(_boxes(10, 0)), list(_boxes(30, 1))], tmp_path)
    assert sum(n.op_type == "While" for n in graph.nodes) >= 1


# -- what is refused -----------------------------------------------------------------------
def test_a_loop_without_its_loop_cond_is_refused_naming_a_node():
    graph, outputs = _graph_v1(
        lambda x: tf1.while_loop(lambda a: tf.reduce_sum(a) < 9.0, lambda a: a + 1.0, [x])[0],
        [([3], F32)])
    graph_def = graph.as_graph_def()
    (cond,) = [n for n in graph_def.node if n.op == "LoopCond"]
    for node in graph_def.node:   # the Switches read the predicate itself: no frame condition
        node.input[:] = [cond.input[0] if i == cond.name else i for i in node.input]
    graph_def.node.remove(cond)
    from tf2ir.parser.pipeline import convert_graph_def
    with pytest.raises(ConversionError) as info:
        convert_graph_def(graph_def, "broken.pb", outputs=outputs)
    assert info.value.exit_code == 3
    assert "TF1 control flow" in str(info.value) and info.value.node


def test_tf1_saved_model_with_a_cond_and_a_while_loop(tmp_path):
    """A TF1 SavedModel (graph mode, control flow v1, a variable) converts through the
    SavedModel route and matches the TF session on two batch sizes."""
    import onnxruntime as ort
    from tf2ir.ir.onnx.compile import compile_to_file
    from tf2ir.parser.pipeline import convert_file
    export = str(tmp_path / "tf1_saved")
    graph = tf.Graph()
    tf1.disable_control_flow_v2()
    try:
        with graph.as_default():
            x = tf1.placeholder(tf.float32, [None, 3], name="x")
            w = tf1.get_variable("w", initializer=np.full((3,), 0.5, np.float32))
            y = tf1.cond(tf.reduce_sum(x) > 0, lambda: x * w, lambda: x - w)
            y = tf1.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * 1.5 + w),
                               [tf.constant(0), y])[1]
            with tf1.Session(graph=graph) as session:
                session.run(tf1.global_variables_initializer())
                tf1.saved_model.simple_save(session, export, {"x": x}, {"y": y})
                feeds = [rand(1, 3), rand(4, 3), np.full((2, 3), -1.0, np.float32)]
                wanted = [session.run(y, {x: f}) for f in feeds]
    finally:
        tf1.enable_control_flow_v2()
    ir_graph, _ = convert_file(export)
    assert {"If", "While"} <= _all_op_types(ir_graph)
    path = str(tmp_path / "model.onnx")
    compile_to_file(ir_graph, path)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    for feed, want in zip(feeds, wanted):
        assert_close(want, session.run(None, {"x": feed})[0], what="y")


@pytest.mark.parametrize("op, inputs", [("Switch", 1), ("Enter", 2), ("LoopCond", 0)])
def test_control_flow_nodes_with_the_wrong_inputs_are_refused(op, inputs):
    """Mutated graphs (found by fuzzing the raised graphs): one line naming the node."""
    graph, outputs = _graph_v1(
        lambda x: tf1.while_loop(lambda a: tf.reduce_sum(a) < 9.0, lambda a: a + 1.0, [x])[0],
        [([3], F32)])
    graph_def = graph.as_graph_def()
    node = next(n for n in graph_def.node if n.op == op)
    names = [n.name for n in graph_def.node if n.op == "Placeholder"]
    node.input[:] = (list(node.input) + names * 2)[:inputs]
    from tf2ir.parser.pipeline import convert_graph_def
    with pytest.raises(ConversionError) as info:
        convert_graph_def(graph_def, "mutated.pb", outputs=outputs)
    assert info.value.exit_code == 3 and info.value.node == node.name
    assert "data inputs" in str(info.value)
