"""Conformance of the composite and control-flow ops (opp/control.py) against TensorFlow: AddN
(a PartitionedCall of Adds), TF2 functional If/StatelessIf and While/StatelessWhile (tf.cond and
tf.while_loop in a tf.function). TF1 control flow is raised into these ops: test_tf1_control.py."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conformance.harness import check_op, convert_function, rand
from tf2ir.ir import ConversionError, Graph, TensorDesc

tf = pytest.importorskip("tensorflow")

TESTED_DTYPES = {
    "StatelessIf": ("float32", "float64", "int32", "int64", "bool"),
    "If": ("float32",),
    "StatelessWhile": ("float32", "int32"),
    "While": ("float32", "int32"),
    "AddN": ("float32", "float64", "int32"),
}


def _freeze_v2(fn, input_spec, path):
    """tools.models.freeze_function, but keeping control flow v2 (If/While with library
    functions): convert_variables_to_constants_v2 lowers it to TF1 Switch/Merge/Enter/Exit
    by default, which tf2ir refuses."""
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2
    specs = input_spec if isinstance(input_spec, (list, tuple)) else [input_spec]
    concrete = tf.function(fn).get_concrete_function(*specs)
    frozen = convert_variables_to_constants_v2(concrete, lower_control_flow=False)
    with open(path, "wb") as f:
        f.write(frozen.graph.as_graph_def().SerializeToString())
    return [t.name for t in frozen.outputs]


@pytest.fixture(autouse=True)
def keep_control_flow_v2(monkeypatch):
    from tf2ir.tools import models
    monkeypatch.setattr(models, "freeze_function", _freeze_v2)


def _spec(shape, dtype, name):
    return tf.TensorSpec(shape, tf.as_dtype(dtype), name=name)


def _converted(fn, specs, tmp_path, name="model"):
    """(IR graph, onnx.ModelProto) of `fn`, checked to hold the TF op types wanted."""
    import onnx
    path, graph, _, pb = convert_function(fn, specs, str(tmp_path), name=name)
    return graph, onnx.load(path), pb


def _tf_op_types(pb):
    from tf2ir.parser.load import load_graph_def
    return {n.op for n in load_graph_def(pb).node}


# -- AddN: a one-to-many mapping ----------------------------------------------------------
@pytest.mark.parametrize("count", [1, 2, 5])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_add_n(count, dtype):
    inputs = [rand(2, 3, dtype=dtype) for _ in range(count)]
    check_op(lambda *xs: tf.raw_ops.AddN(inputs=list(xs)), inputs)


def test_add_n_symbolic():
    spec = [tf.TensorSpec((None, 3), tf.float32, name=f"x{i}") for i in range(3)]
    check_op(lambda *xs: tf.math.add_n(list(xs)), [rand(2, 3) for _ in range(3)], specs=spec,
             extra_inputs=[[rand(4, 3) for _ in range(3)]])


# -- If ------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", TESTED_DTYPES["StatelessIf"])
def test_cond_on_computed_predicate_takes_both_branches(dtype):
    def fn(x):
        if dtype == "bool":
            return tf.cond(tf.reduce_any(x[0]), lambda: tf.logical_not(x), lambda: x)
        pred = tf.reduce_sum(x) > tf.cast(0, x.dtype)
        return tf.cond(pred, lambda: x * 2 + 1, lambda: x - 3)

    positive = np.abs(rand(2, 3, dtype=dtype)) + (np.array(1, dtype) if dtype != "bool" else 0)
    if dtype == "bool":
        positive = np.array([[True, False, True], [False, False, True]])
        negative = np.array([[False, True, True], [True, False, True]])
    else:
        negative = -np.abs(rand(4, 3, dtype=dtype)) - np.array(1, dtype)
    check_op(fn, [positive], specs=[_spec((None, 3), dtype, "x0")], extra_inputs=[[negative]])


def test_cond_with_several_outputs_of_different_shapes_and_dtypes(tmp_path):
    def fn(x, k):
        return tf.cond(k > 0,
                       lambda: (x[:1] * 2.0, tf.shape(x), tf.cast(x > 0, tf.int32)),
                       lambda: (x - 1.0, tf.shape(x) + 1, tf.cast(x < 0, tf.int32)))

    x = rand(3, 4)
    specs = [_spec((None, 4), "float32", "x0"), _spec((), "int32", "x1")]
    check_op(fn, [x, np.int32(1)], specs=specs,
             extra_inputs=[[x, np.int32(0)], [rand(5, 4), np.int32(-2)]])
    graph, model, pb = _converted(fn, specs, tmp_path)
    assert "StatelessIf" in _tf_op_types(pb)
    node = next(n for n in graph.nodes if n.op_type == "If")
    # branch 0 gives [1,4] or [?,4]; the merged output keeps only what both agree on
    assert [v.desc.shape for v in node.outputs] == [(None, 4), (2,), (None, 4)]
    assert [v.desc.dtype for v in node.outputs] == ["float32", "int32", "int32"]


def test_stateful_if_from_raw_op():
    spec = tf.TensorSpec([None], tf.float32)
    then_fn = tf.function(lambda x: [x * 2.0]).get_concrete_function(spec)
    else_fn = tf.function(lambda x: [x - 1.0]).get_concrete_function(spec)

    def fn(c, x):
        return tf.raw_ops.If(cond=c > 0, input=[x], Tout=[tf.float32],
                             then_branch=then_fn, else_branch=else_fn)[0]

    specs = [_spec((), "int32", "x0"), _spec((None,), "float32", "x1")]
    check_op(fn, [np.int32(1), rand(3)], specs=specs, extra_inputs=[[np.int32(0), rand(5)]])


def test_if_model_passes_onnx_checker_and_round_trips_as_text(tmp_path):
    import onnx
    import onnxruntime as ort
    from tf2ir.ir import text
    from tf2ir.ir.onnx.compile import compile_to_model

    def fn(x):
        return tf.cond(tf.reduce_max(x) > 1.0, lambda: tf.nn.relu(x), lambda: tf.abs(x) + 1.0)

    graph, model, pb = _converted(fn, [_spec((None, 2), "float32", "x0")], tmp_path)
    onnx.checker.check_model(model, full_check=True)
    if_nodes = [n for n in model.graph.node if n.op_type == "If"]
    assert len(if_nodes) == 1
    assert {a.name for a in if_nodes[0].attribute} == {"then_branch", "else_branch"}

    path = str(tmp_path / "m.ir")
    text.save(graph, path)
    first = open(path).read()
    assert 'subgraph "then_branch" graph' in first
    loaded = text.load(path)
    text.save(loaded, path)
    assert open(path).read() == first
    reloaded = compile_to_model(text.load(path))
    onnx.checker.check_model(reloaded, full_check=True)
    session = ort.InferenceSession(reloaded.SerializeToString(), providers=["CPUExecutionProvider"])
    x = np.array([[2.0, -1.0], [0.5, 0.0]], np.float32)
    np.testing.assert_allclose(session.run(None, {"x0": x})[0], fn(tf.constant(x)).numpy())


@pytest.mark.parametrize("cond, expected", [
    (np.array(3, np.int32), True), (np.array(0, np.int32), False),
    (np.array(0.0, np.float32), False),
    (np.zeros((2, 0), np.float32), False), (np.zeros((1, 2), np.int64), True),
])
@pytest.mark.parametrize("known_rank", [True, False])
def test_if_condition_follows_tf_truth_rule(cond, expected, known_rank):
    """TF's If takes any tensor as cond: a scalar is true when non-zero, any other tensor
    when non-empty (TF's graph optimizer refuses such graphs, so the IR is built by hand)."""
    import onnxruntime as ort
    from tf2ir.ir.onnx.compile import compile_to_model
    from tf2ir.ir.infer import infer_graph

    dtype = str(cond.dtype)
    shape = tuple(None for _ in cond.shape) if known_rank else None
    graph = Graph("truth")
    c = graph.add_input("c", TensorDesc(dtype, shape))
    x = graph.add_input("x", TensorDesc("float32", (2,)))
    branches = {}
    for key, factor in (("then_branch", 1.0), ("else_branch", -1.0)):
        sub = Graph(key)
        arg = sub.add_input("arg", TensorDesc("float32", (2,)))
        sub.outputs = [sub.add_node("Mul", [arg, sub.add_const(np.float32(factor))]).outputs[0]]
        branches[key] = sub
    node = graph.add_node("If", [c, x], branches, "if", num_outputs=1)
    assert set(node.subgraphs) == {"then_branch", "else_branch"} and not node.attrs
    graph.outputs = [node.outputs[0]]
    infer_graph(graph)
    model = compile_to_model(graph)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    out = session.run(None, {"c": cond, "x": np.float32([1, 2])})[0]
    np.testing.assert_array_equal(out, np.float32([1, 2]) * (1 if expected else -1))


# -- While ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", TESTED_DTYPES["StatelessWhile"])
def test_while_counts_to_a_data_dependent_bound(dtype):
    def fn(x, n):
        def body(i, acc):
            return i + 1, acc + x * tf.cast(i, x.dtype)
        return tf.while_loop(lambda i, acc: i < n, body, [tf.constant(0), tf.zeros_like(x)])

    x = rand(2, 3, dtype=dtype)
    specs = [_spec((None, 3), dtype, "x0"), _spec((), "int32", "x1")]
    check_op(fn, [x, np.int32(4)], specs=specs,
             extra_inputs=[[x, np.int32(0)], [rand(1, 3, dtype=dtype), np.int32(7)]])


def test_while_with_maximum_iterations():
    def fn(x):
        return tf.while_loop(lambda v: tf.reduce_sum(v) < 1e6, lambda v: (v * 2.0 + 1.0,),
                             [x], maximum_iterations=5)

    check_op(fn, [np.abs(rand(3)) + 1], extra_inputs=[[np.float32([1e5, 1e5, 1e5])]])


def test_while_tensor_grows_by_concat_with_shape_invariants(tmp_path):
    def fn(x, n):
        def body(i, acc):
            return i + 1, tf.concat([acc, x * tf.cast(i, tf.float32)], axis=0)
        i0 = tf.constant(0)
        return tf.while_loop(lambda i, acc: i < n, body, [i0, x],
                             shape_invariants=[i0.shape, tf.TensorShape([None, 3])])

    specs = [_spec((2, 3), "float32", "x0"), _spec((), "int32", "x1")]
    x = rand(2, 3)
    check_op(fn, [x, np.int32(3)], specs=specs, extra_inputs=[[x, np.int32(0)]])
    graph, model, pb = _converted(fn, specs, tmp_path)
    assert "StatelessWhile" in _tf_op_types(pb)
    loop = next(n for n in graph.nodes if n.op_type == "While")
    # the accumulator (2,3) → (?,3); the captured x stays (2,3)
    assert {v.desc.shape for v in loop.outputs if v.desc.dtype == "float32"} == {(2, 3), (None, 3)}
    body = loop.subgraphs["body"]
    assert (None, 3) in [v.desc.shape for v in body.inputs]
    onnx_loop = next(n for n in model.graph.node if n.op_type == "Loop")
    onnx_body = next(a.g for a in onnx_loop.attribute if a.name == "body")
    dims = [[d.dim_value if d.HasField("dim_value") else None for d in i.type.tensor_type.shape.dim]
            for i in onnx_body.input]
    assert [None, 3] in dims and dims[:2] == [[], []]   # iteration count, condition


def test_while_body_grows_without_shape_invariants_in_tf_attrs():
    """The IR relaxes a loop variable the body reshapes even if TF's attrs say otherwise."""
    def fn(x):
        return tf.while_loop(lambda v: tf.shape(v)[0] < 10,
                             lambda v: (tf.concat([v, v], 0),), [x],
                             shape_invariants=[tf.TensorShape([None])])
    check_op(fn, [rand(3)], specs=[_spec((None,), "float32", "x0")], extra_inputs=[[rand(11)]])


def test_nested_cond_inside_while_and_outer_tensor_in_body(tmp_path):
    def fn(x, n):
        scale = tf.reduce_mean(x) * 0.5            # an outer tensor the body reads

        def body(i, s):
            s = tf.cond(i % 2 == 0, lambda: s + x * scale, lambda: s * 0.5)
            return i + 1, s
        return tf.while_loop(lambda i, s: i < n, body, [tf.constant(0), x])[1]

    specs = [_spec((None, 2), "float32", "x0"), _spec((), "int32", "x1")]
    check_op(fn, [rand(3, 2), np.int32(5)], specs=specs,
             extra_inputs=[[rand(1, 2), np.int32(2)], [rand(4, 2), np.int32(0)]])
    graph, model, _ = _converted(fn, specs, tmp_path)
    loop = next(n for n in graph.nodes if n.op_type == "While")
    assert any(n.op_type == "If" for n in loop.subgraphs["body"].nodes)
    import onnx
    onnx.checker.check_model(model, full_check=True)
    from tf2ir.ir import text     # nested subgraphs save and load
    path = str(tmp_path / "m.ir")
    text.save(graph, path)
    first = open(path).read()
    text.save(text.load(path), path)
    assert open(path).read() == first and first.count("subgraph ") == 4


def test_add_n_call_inside_a_loop_body_is_inlined_there():
    """AddN maps to a PartitionedCall: inlining must work inside the loop body."""
    def fn(x, n):
        return tf.while_loop(lambda i, s: i < n,
                             lambda i, s: (i + 1, tf.math.add_n([s, x, s * 0.5])), [0, x])[1]

    specs = [_spec((None,), "float32", "x0"), _spec((), "int32", "x1")]
    check_op(fn, [rand(4), np.int32(3)], specs=specs, extra_inputs=[[rand(2), np.int32(1)]])


def test_stateful_while_from_raw_op():
    specs = [tf.TensorSpec([], tf.int32), tf.TensorSpec([None], tf.float32)]
    cond_fn = tf.function(lambda i, x: i < 3).get_concrete_function(*specs)
    body_fn = tf.function(lambda i, x: [i + 1, x * 2.0]).get_concrete_function(*specs)

    def fn(x):
        return tf.raw_ops.While(input=[tf.constant(0), x], cond=cond_fn, body=body_fn)[1]

    check_op(fn, [rand(2)], specs=[_spec((None,), "float32", "x0")], extra_inputs=[[rand(4)]])
