"""Conformance of the small semantic gaps of issue 11 §4: outputs of unknown rank, window ops
over a filter of unknown shape, errors that keep their cause."""

import numpy as np
import pytest

from tests.conformance.harness import (TOLERANCES, check_op, convert_function, rand,
                                        single_op_graph, spec)
from tf2ir.ir import ConversionError, TensorDesc

tf = pytest.importorskip("tensorflow")

# bfloat16 (the tests at the end): each op computed in bfloat16 by TensorFlow, compared within
# the bfloat16 tolerance
TESTED_DTYPES = {
    "Conv2D": ("bfloat16",), "Relu": ("bfloat16",), "Reshape": ("bfloat16",),
    "MatMul": ("bfloat16",), "AddV2": ("bfloat16",), "Softmax": ("bfloat16",),
    "Sum": ("bfloat16",), "Max": ("bfloat16",), "Mean": ("bfloat16",), "Sub": ("bfloat16",),
    "Mul": ("bfloat16",), "Maximum": ("bfloat16",), "Greater": ("bfloat16",),
    "SelectV2": ("bfloat16",), "ArgMax": ("bfloat16",), "Cast": ("bfloat16",),
}


# -- outputs of unknown rank -------------------------------------------------------------------------
def test_output_of_unknown_rank_converts_and_runs(tmp_path):
    """A Reshape to a run-time shape of unknown length has an output of unknown rank: the model
    is written (checked by onnx.checker except for that output's missing shape, which ONNX
    requires of a main-graph output and which an unknown rank cannot give) and runs."""
    import onnx
    fn = lambda x, s: tf.reshape(x, s) * 2.0  # noqa: E731
    specs = [spec((2, 3)), spec((None,), "int32", name="x1")]
    check_op(fn, [rand(2, 3), np.array([3, 2], np.int32)], specs=specs,
             extra_inputs=[[rand(2, 3), np.array([6], np.int32)],
                           [rand(2, 3), np.array([1, 2, 3], np.int32)]])
    path, graph, _, _ = convert_function(fn, specs, str(tmp_path))
    assert graph.outputs[0].desc.shape is None
    output = onnx.load(path).graph.output[0]
    assert output.type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    assert not output.type.tensor_type.HasField("shape")     # unknown rank, not a made-up one


# -- window ops over a filter of unknown shape -----------------------------------------------------
def f32(*shape):
    return TensorDesc("float32", shape)


@pytest.mark.parametrize("op_type,x,w,padding,expected", [
    ("Conv2D", f32(1, 5, 5, 3), f32(None, None, 3, 8), "VALID", (1, None, None, 8)),
    ("Conv2D", f32(1, 5, 5, 3), f32(None, None, 3, 8), "SAME", (1, 5, 5, 8)),
    ("Conv2D", f32(1, 5, 5, 3), f32(None, None, None, None), "VALID", (1, None, None, None)),
    ("DepthwiseConv2D", f32(1, 5, 5, 3), f32(None, 2, 3, 2), "VALID", (1, None, 4, 6)),
    ("Conv3D", f32(1, 4, 5, 6, 3), f32(None, 2, None, 3, 4), "VALID", (1, None, 4, None, 4)),
])
def test_inference_over_a_filter_of_unknown_shape(op_type, x, w, padding, expected):
    from tf2ir.ir import Graph
    from tf2ir.ir.infer import infer_graph
    g = Graph()
    rank = len(x.shape)
    node = g.add_node(op_type, [g.add_input("x", x), g.add_input("w", w), None],
                      {"strides": [1] * rank, "padding": padding}, "conv")
    g.outputs.append(node.outputs[0])
    infer_graph(g)
    assert node.outputs[0].desc.shape == expected


RUNTIME_FILTER_CASES = {
    "conv2d_same": (lambda x, w: tf.nn.conv2d(x, w, 1, "SAME"), (1, 5, 5, 3), (3, 3, 3, 8),
                    (1, 5, 5, 3), (None, None, 3, 8)),
    "conv2d_valid_s2": (lambda x, w: tf.nn.conv2d(x, w, 2, "VALID"), (1, 7, 7, 3), (3, 2, 3, 8),
                        (None, 7, 7, 3), (None, None, 3, 8)),
    "depthwise_same": (lambda x, w: tf.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "SAME"),
                       (1, 5, 5, 3), (3, 3, 3, 2), (1, 5, 5, 3), (None, None, 3, 2)),
    "conv3d_valid": (lambda x, w: tf.nn.conv3d(x, w, [1] * 5, "VALID"), (1, 5, 5, 5, 3),
                     (2, 2, 2, 3, 4), (1, 5, 5, 5, 3), (None, None, None, 3, 4)),
}


@pytest.mark.parametrize("case", sorted(RUNTIME_FILTER_CASES))
def test_convolution_with_a_run_time_filter(case):
    fn, x_shape, w_shape, x_spec, w_spec = RUNTIME_FILTER_CASES[case]
    check_op(fn, [rand(*x_shape), rand(*w_shape)], specs=[spec(x_spec), spec(w_spec, name="x1")])


# -- errors keep their cause -----------------------------------------------------------------------
def test_inference_failure_is_one_line_and_keeps_its_cause(monkeypatch):
    from tf2ir.ir import get_prototype
    monkeypatch.setattr(get_prototype("Relu"), "infer_fn", lambda node: [1 // 0])
    with pytest.raises(ConversionError) as info:
        single_op_graph("Relu", [f32(2, 3)])
    assert "node 'op'" in str(info.value) and "op Relu" in str(info.value)
    assert "\n" not in str(info.value)
    assert isinstance(info.value.__cause__, ZeroDivisionError)


def test_attribute_check_keeps_its_cause():
    from tf2ir.ir import Graph
    from tf2ir.ir.verify import check_graph
    g = Graph()
    x = g.add_input("x", f32(1, 4, 4, 1))
    g.outputs.append(g.add_node("MaxPool", [x], {"ksize": "2", "strides": [1, 1, 1, 1],
                                                  "padding": "VALID"}, "pool").outputs[0])
    with pytest.raises(ConversionError) as info:
        check_graph(g)
    assert "node 'pool'" in str(info.value) and "attribute 'ksize'" in str(info.value)
    assert isinstance(info.value.__cause__, TypeError)


# -- bfloat16 on onnxruntime's CPU backend ----------------------------------------------------------
BF16_TOLERANCE = TOLERANCES["bfloat16"]
_W_CONV = rand(3, 3, 3, 4)
_W_DENSE, _B_DENSE = rand(4, 5), rand(5)


def bfloat16_net(x):
    """A small network computed in bfloat16 (float32 at the edges: onnxruntime's Python API
    cannot hand bfloat16 arrays to or from numpy)."""
    h = tf.cast(x, tf.bfloat16)
    h = tf.nn.relu(tf.nn.conv2d(h, tf.constant(_W_CONV, tf.bfloat16), 1, "SAME"))
    h = tf.reshape(h, [-1, 4])
    h = tf.matmul(h, tf.constant(_W_DENSE, tf.bfloat16)) + tf.constant(_B_DENSE, tf.bfloat16)
    h = tf.nn.softmax(h)
    summed = tf.reduce_sum(h, axis=0) + tf.reduce_max(h, axis=0)
    return tf.cast(summed, tf.float32), tf.cast(tf.reduce_mean(h, axis=1), tf.float32)


def test_bfloat16_network_runs_on_the_cpu_backend():
    check_op(bfloat16_net, [rand(2, 4, 4, 3)], specs=[spec((None, 4, 4, 3))],
             extra_inputs=[[rand(1, 4, 4, 3)]], atol=BF16_TOLERANCE[0], rtol=BF16_TOLERANCE[1])


@pytest.mark.parametrize("name,fn", [
    ("add", lambda a, b: a + b), ("sub_mul", lambda a, b: (a - b) * a),
    ("matmul", lambda a, b: tf.matmul(a, b, transpose_b=True)),
    ("relu_max", lambda a, b: tf.maximum(tf.nn.relu(a), b)),
    ("where", lambda a, b: tf.where(a > b, a, b)),
    ("argmax", lambda a, b: tf.cast(tf.argmax(a + b, axis=1), tf.bfloat16)),
])
def test_bfloat16_ops(name, fn):
    def wrapped(a, b):
        return tf.cast(fn(tf.cast(a, tf.bfloat16), tf.cast(b, tf.bfloat16)), tf.float32)
    check_op(wrapped, [rand(3, 4), rand(3, 4)], atol=BF16_TOLERANCE[0], rtol=BF16_TOLERANCE[1])
