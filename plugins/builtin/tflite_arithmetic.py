"""Built-in TFLITE mappings of TFLite's binary arithmetic: ADD, SUB, MUL and DIV (with their
fused activation), FLOOR_DIV, FLOOR_MOD, POW, MAXIMUM, MINIMUM, SQUARED_DIFFERENCE, ATAN2,
ADD_N and BATCH_MATMUL, each the IR op TF's op of the same meaning maps to.

All broadcast as numpy does (TFLite's broadcasting is numpy's). A binary op with a fused
activation is a one-to-many mapping: the IR op and, unless the activation is NONE, its
activation after it (a one-node subgraph otherwise, inlined away). A quantized model's
operators compute in float in the view (QDQ), so the same mappings serve int8 models.
"""

from tf2ir.plugins import hookimpl
from tf2ir.plugins.tflite import activation, data, inputs_only, tflite_op, tflite_subgraph

# TFLite op → the IR op (TF's op of the same meaning); the fused ones carry an activation.
FUSED = {"ADD": "Add", "SUB": "Sub", "MUL": "Mul",
         # TFLite's DIV is true division for floats, C's truncating one for int32: TF's Div
         "DIV": "Div"}
PLAIN = {"FLOOR_DIV": "FloorDiv", "FLOOR_MOD": "FloorMod", "POW": "Pow",
         "MAXIMUM": "Maximum", "MINIMUM": "Minimum", "SQUARED_DIFFERENCE": "SquaredDifference",
         "ATAN2": "Atan2"}


def fused_binary(ir_type: str):
    """The subgraph fn of a binary op with `fused_activation_function`."""
    def build(src, graph):
        x, y = data(src, graph, 0), data(src, graph, 1)
        z = graph.add_op(ir_type, [x, y], name=ir_type.lower()).outputs[0]
        graph.set_outputs([activation(graph, z, src.attr("fused_activation_function"), src)])
    build.__name__ = f"tflite_{ir_type.lower()}"
    return build


def add_n(src, graph):
    """x0 + x1 + ... + xN-1 as N-1 Adds (N == 1: an Identity)."""
    total = graph.data(0)
    for index in range(1, len(graph.call.inputs)):
        total = graph.add_op("Add", [total, graph.data(index)], name=f"add{index - 1}").outputs[0]
    if len(graph.call.inputs) == 1:
        total = graph.add_op("Identity", [total], name="identity").outputs[0]
    graph.set_outputs([total])


def batch_matmul(src, op):
    """adj_x/adj_y transpose the last two dims of each operand (TF's adj_x/adj_y: real types);
    asymmetric_quantize_inputs concerns a hybrid kernel only, which the view computes in float."""
    op.set_attr("adj_x1", bool(src.attr("adj_x", False)))
    op.set_attr("adj_x2", bool(src.attr("adj_y", False)))


MAPPINGS = (
    [tflite_subgraph(origin).parse_op_to_graph_fn(fused_binary(ir)) for origin, ir in FUSED.items()]
    + [tflite_op(ir, origin).parse_params_fn(inputs_only) for origin, ir in PLAIN.items()]
    + [tflite_subgraph("ADD_N").parse_op_to_graph_fn(add_n),
       tflite_op("BatchMatMul", "BATCH_MATMUL").parse_params_fn(batch_matmul)]
)


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS
