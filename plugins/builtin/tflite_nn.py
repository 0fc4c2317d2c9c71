"""Built-in TFLITE mappings of TFLite's NN ops: FULLY_CONNECTED, softmaxes, activations and
normalizations, onto the IR's TF ops.

- FULLY_CONNECTED (input, weights [out, in], optional bias): TFLite flattens an input of rank
  other than 2 to [-1, in]; MatMul by the transposed weights, the bias, the fused activation;
  with keep_num_dims the input's leading dims come back ([..., out]).
- SOFTMAX (beta: softmax(beta * x)), LOG_SOFTMAX: along the last axis.
- RELU, RELU6, LOGISTIC, TANH, ELU, LEAKY_RELU (alpha), GELU (approximate: tanh form):
  one-to-one; RELU_N1_TO_1, RELU_0_TO_1: ClipByValue; HARD_SWISH: x * relu6(x + 3) / 6;
  PRELU (input, alpha broadcast): relu(x) + alpha * min(x, 0).
- L2_NORMALIZATION: x / max(sqrt(sum(x^2)), 1e-6) along the last axis, TFLite's kernel
  (its epsilon bounds the norm, not the squared sum); LOCAL_RESPONSE_NORMALIZATION: LRN
  (radius, bias, alpha, beta).
"""

import numpy as np

from tf2ir.ir.errors import ConversionError
from tf2ir.plugins import hookimpl
from tf2ir.plugins.builtin import tflite_hybrid
from tf2ir.plugins.tflite import (activation, bias_add, data, input_desc, inputs_only, required,
                                  tflite_op, tflite_subgraph)

L2_NORM_EPSILON = 1e-6


def _i32(graph, values, name):
    return graph.const(np.array(values, np.int32), name)


def _fc_flat_input(src, graph, x, depth):
    """The input as TFLite's fully connected reads it: [-1, depth]."""
    if x.desc.rank == 2:
        return x
    return graph.add_op("Reshape", [x, _i32(graph, [-1, depth], "flat_shape")],
                        name="flatten").outputs[0]


def _fc_keep_dims(graph, x, y, units):
    """`y` [rows, units] back in `x`'s leading dims: [..., units]."""
    shape = x.desc.shape
    if shape is not None and sum(d is None for d in shape[:-1]) <= 1:
        target = _i32(graph, [-1 if d is None else d for d in shape[:-1]] + [units], "kept_shape")
    else:
        rank = x.desc.rank
        if rank is None:
            raise ConversionError("FULLY_CONNECTED with keep_num_dims needs the input's rank")
        dims = graph.add_op("Shape", [x], {"dtype": "int32"}, name="input_shape").outputs[0]
        lead = graph.add_op("Slice", [dims, _i32(graph, [0], "begin"), _i32(graph, [rank - 1], "size")],
                            name="leading").outputs[0]
        target = graph.add_op("ConcatV2", [lead, _i32(graph, [units], "units"), _i32(graph, 0, "axis")],
                              {"N": 2}, name="kept_shape").outputs[0]
    return graph.add_op("Reshape", [y, target], name="keep_num_dims").outputs[0]


def fully_connected(src, graph):
    fmt = src.attr("weights_format", 0)
    if fmt not in (0, "DEFAULT"):
        raise ConversionError(f"weights_format {fmt!r:.40} is not supported (DEFAULT only)",
                              node=src.name, op_type=src.op_type)
    desc = input_desc(src, graph, 1)
    w_shape = None if desc is None else desc.shape
    if w_shape is None or len(w_shape) != 2 or w_shape[1] is None:
        raise ConversionError(f"the weights must be [out, in] with a known depth, not {w_shape}",
                              node=src.name, op_type=src.op_type)
    units, depth = w_shape
    x = required(src, graph, 0)
    flat = _fc_flat_input(src, graph, x, depth)
    y = tflite_hybrid.fully_connected(src, graph, flat)     # hybrid: TFLite's int8 arithmetic
    if y is None:
        y = graph.add_op("MatMul", [flat, required(src, graph, 1), None],
                         {"transpose_x1": False, "transpose_x2": True}, name="matmul").outputs[0]
        y = bias_add(graph, y, data(src, graph, 2))
    y = activation(graph, y, src.attr("fused_activation_function"), src)
    if src.attr("keep_num_dims", False) and x.desc.rank != 2:
        if units is None:
            raise ConversionError("keep_num_dims needs the weights' output size",
                                  node=src.name, op_type=src.op_type)
        y = _fc_keep_dims(graph, x, y, units)
    graph.set_outputs([y])


def softmax(src, graph):
    x = required(src, graph, 0)
    beta = float(src.attr("beta", 1.0))
    if beta != 1.0:
        scale = graph.const(np.array(beta, np.dtype(x.desc.dtype)), "beta")
        x = graph.add_op("Mul", [x, scale], name="scaled").outputs[0]
    graph.set_outputs([graph.add_op("Softmax", [x], {"axis": -1}, name="softmax").outputs[0]])


def _clip(low, high):
    def build(src, graph):
        x = required(src, graph, 0)
        dtype = np.dtype(x.desc.dtype)
        bounds = [graph.const(np.array(v, dtype), n) for v, n in ((low, "low"), (high, "high"))]
        graph.set_outputs([graph.add_op("ClipByValue", [x, *bounds], name="clip").outputs[0]])
    return build


def hard_swish(src, graph):
    x = required(src, graph, 0)
    dtype = np.dtype(x.desc.dtype)
    shifted = graph.add_op("Add", [x, graph.const(np.array(3, dtype), "three")], name="plus3")
    gate = graph.add_op("Relu6", [shifted.outputs[0]], name="relu6").outputs[0]
    product = graph.add_op("Mul", [x, gate], name="mul").outputs[0]
    six = graph.const(np.array(6, dtype), "six")
    graph.set_outputs([graph.add_op("RealDiv", [product, six], name="hard_swish").outputs[0]])


def prelu(src, graph):
    x, alpha = required(src, graph, 0), required(src, graph, 1)
    zero = graph.const(np.array(0, np.dtype(x.desc.dtype)), "zero")
    positive = graph.add_op("Relu", [x], name="positive").outputs[0]
    negative = graph.add_op("Minimum", [x, zero], name="negative").outputs[0]
    scaled = graph.add_op("Mul", [alpha, negative], name="scaled").outputs[0]
    graph.set_outputs([graph.add_op("Add", [positive, scaled], name="prelu").outputs[0]])


def l2_normalization(src, graph):
    x = required(src, graph, 0)
    dtype = np.dtype(x.desc.dtype)
    squares = graph.add_op("Square", [x], name="square").outputs[0]
    total = graph.add_op("ReduceSum", [squares, _i32(graph, [-1], "axis")], {"keep_dims": True},
                         name="sum").outputs[0]
    norm = graph.add_op("Sqrt", [total], name="norm").outputs[0]
    eps = graph.const(np.array(L2_NORM_EPSILON, dtype), "epsilon")
    bounded = graph.add_op("Maximum", [norm, eps], name="bounded").outputs[0]
    y = graph.add_op("RealDiv", [x, bounded], name="normalized").outputs[0]
    graph.set_outputs([activation(graph, y, src.attr("fused_activation_function"), src)])


def last_axis(src, op):
    op.set_attr("axis", -1)


def leaky_relu(src, op):
    op.set_attr("alpha", float(src.attr("alpha", 0.2)))


def gelu(src, op):
    op.set_attr("approximate", "tanh" if src.attr("approximate", False) else "none")


def lrn(src, op):
    op.set_attr("depth_radius", int(src.attr("radius", 5)))
    for name, default in (("bias", 1.0), ("alpha", 1.0), ("beta", 0.5)):
        op.set_attr(name, float(src.attr(name, default)))


MAPPINGS = [
    tflite_subgraph("FULLY_CONNECTED").parse_op_to_graph_fn(fully_connected),
    tflite_subgraph("SOFTMAX").parse_op_to_graph_fn(softmax),
    tflite_op("LogSoftmax", "LOG_SOFTMAX").parse_params_fn(last_axis),
    tflite_op("Relu", "RELU").parse_params_fn(inputs_only),
    tflite_op("Relu6", "RELU6").parse_params_fn(inputs_only),
    tflite_op("Sigmoid", "LOGISTIC").parse_params_fn(inputs_only),
    tflite_op("Tanh", "TANH").parse_params_fn(inputs_only),
    tflite_op("Elu", "ELU").parse_params_fn(inputs_only),
    tflite_op("LeakyRelu", "LEAKY_RELU").parse_params_fn(leaky_relu),
    tflite_op("Gelu", "GELU").parse_params_fn(gelu),
    tflite_op("LRN", "LOCAL_RESPONSE_NORMALIZATION").parse_params_fn(lrn),
    tflite_subgraph("RELU_N1_TO_1").parse_op_to_graph_fn(_clip(-1, 1)),
    tflite_subgraph("RELU_0_TO_1").parse_op_to_graph_fn(_clip(0, 1)),
    tflite_subgraph("HARD_SWISH").parse_op_to_graph_fn(hard_swish),
    tflite_subgraph("PRELU").parse_op_to_graph_fn(prelu),
    tflite_subgraph("L2_NORMALIZATION").parse_op_to_graph_fn(l2_normalization),
]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS
