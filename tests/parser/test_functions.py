"""The function library: PartitionedCall / StatefulPartitionedCall nodes that survive
freezing are inlined in the TF graph view before mapping (nested calls included)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tests.conftest import max_abs_error, run_cli, run_onnx
from tf2ir.ir import ConversionError
from tf2ir.parser.functions import inline_functions
from tf2ir.parser.graph_view import TfGraph
from tf2ir.parser.load import load_graph_def
from tf2ir.tools.models import run_frozen_graph


@pytest.fixture
def nested_calls(freeze):
    """outer → jit middle (a variable, MatMul) → jit inner (TopKV2, two outputs)."""
    import tensorflow as tf
    w = tf.Variable(np.random.RandomState(0).normal(size=(4, 3)).astype(np.float32))

    @tf.function(jit_compile=True)
    def inner(x):
        values, indices = tf.math.top_k(x, k=2)
        return values * 0.5, tf.cast(indices, tf.float32)

    @tf.function(jit_compile=True)
    def middle(x, y):
        a, b = inner(tf.matmul(x, w))
        return tf.nn.relu(a + y) - b

    specs = [tf.TensorSpec([None, 4], tf.float32, name="x"),
             tf.TensorSpec([None, 2], tf.float32, name="y")]
    return freeze(lambda x, y: middle(x, y) * 0.5, specs, "nested")


def test_nested_function_calls_convert_and_match_tf(nested_calls, tmp_path):
    path, outputs = nested_calls
    graph_def = load_graph_def(path)
    assert [n.op for n in graph_def.node].count("StatefulPartitionedCall") == 1
    assert len(graph_def.library.function) == 2
    ir_path, onnx_path = str(tmp_path / "m.ir"), str(tmp_path / "m.onnx")
    result = run_cli("convert", path, "-o", ir_path)
    assert result.returncode == 0, result.stderr
    text = open(ir_path).read()
    assert not re.search(r" (Stateful)?PartitionedCall\(", text)   # no call is left
    assert 'node "StatefulPartitionedCall/PartitionedCall/TopKV2" TopK(' in text
    assert run_cli("compile", ir_path, "-o", onnx_path).returncode == 0
    rng = np.random.RandomState(1)
    feeds = {"x": rng.normal(size=(5, 4)).astype(np.float32),
             "y": rng.normal(size=(5, 2)).astype(np.float32)}
    expected = run_frozen_graph(path, feeds, outputs)[0]
    assert np.ptp(expected) > 0.1
    assert max_abs_error(run_onnx(onnx_path, feeds)[0], expected) <= 1e-5


def test_inlined_view_keeps_the_call_name_and_resolves_output_args(nested_calls):
    tf_graph = TfGraph(load_graph_def(nested_calls[0]))
    assert inline_functions(tf_graph) == 2
    call = tf_graph["StatefulPartitionedCall"]
    assert call.op_type == "Identity" and call.inputs == [("StatefulPartitionedCall/Identity", 0)]
    inner = tf_graph["StatefulPartitionedCall/PartitionedCall"]
    assert inner.op_type == "IdentityN" and inner.attr("T") == ["float32", "float32"]
    cast = tf_graph["StatefulPartitionedCall/PartitionedCall/Cast"]
    assert cast.inputs == [("StatefulPartitionedCall/PartitionedCall/TopKV2", 1)]   # TopKV2:indices:0
    sub = tf_graph["StatefulPartitionedCall/sub"]
    assert sub.inputs[1] == ("StatefulPartitionedCall/PartitionedCall", 1)
    assert inline_functions(tf_graph) == 0


def _graph_with_call(n_inputs: int):
    """A GraphDef by hand: call f(x) where f returns (Neg(x), x) — one output is the argument."""
    from tensorboard.compat.proto import graph_pb2
    graph_def = graph_pb2.GraphDef()
    x = graph_def.node.add(name="x", op="Placeholder")
    x.attr["dtype"].type = 1
    call = graph_def.node.add(name="call", op="PartitionedCall", input=["x"] * n_inputs)
    call.attr["f"].func.name = "f"
    call.attr["Tout"].list.type.extend([1, 1])
    graph_def.node.add(name="sum", op="AddV2", input=["call", "call:1"]).attr["T"].type = 1
    fdef = graph_def.library.function.add()
    fdef.signature.name = "f"
    fdef.signature.input_arg.add(name="arg", type=1)
    fdef.signature.output_arg.add(name="neg", type=1)
    fdef.signature.output_arg.add(name="same", type=1)
    fdef.node_def.add(name="n", op="Neg", input=["arg"]).attr["T"].type = 1
    fdef.node_def.add(name="unused", op="Exp", input=["arg"]).attr["T"].type = 1
    fdef.ret["neg"] = "n:y:0"
    fdef.ret["same"] = "arg"
    return graph_def


def test_hand_written_library_returns_an_argument_and_drops_dead_nodes(tmp_path):
    from tf2ir.ir.onnx.compile import compile_to_file
    from tf2ir.parser.pipeline import convert_graph_def
    tf_graph = TfGraph(_graph_with_call(1))
    inline_functions(tf_graph)
    assert "call/unused" not in tf_graph and tf_graph["call/n"].inputs == [("x", 0)]
    assert tf_graph["call"].inputs == [("call/n", 0), ("x", 0)]
    graph, _ = convert_graph_def(_graph_with_call(1), "hand.pb", input_shapes={"x": (3,)})
    out = str(tmp_path / "hand.onnx")
    compile_to_file(graph, out)
    x = np.array([1, 2, 3], np.float32)
    np.testing.assert_array_equal(run_onnx(out, {"x": x})[0], np.zeros(3, np.float32))


def test_wrong_argument_count_names_the_call():
    with pytest.raises(ConversionError, match="takes 1 inputs, the call gives 2") as info:
        inline_functions(TfGraph(_graph_with_call(2)))
    assert info.value.node == "call"
