"""Built-in TFLITE mappings of TFLite's 2-D pooling (data NHWC; Pool2DOptions: padding,
stride_h/w, filter_height/width, fused_activation_function):

- MAX_POOL_2D, AVERAGE_POOL_2D: the IR's MaxPool / AvgPool (SAME average counts only real
  data, as TFLite's does).
- L2_POOL_2D: sqrt of the average of the squares over each window, TFLite's definition (its
  SAME windows likewise count only real data).
"""

from tf2ir.plugins import hookimpl
from tf2ir.plugins.tflite import activation, padding, required, tflite_subgraph


def _attrs(src):
    return {"ksize": [1, src.attr("filter_height", 1), src.attr("filter_width", 1), 1],
            "strides": [1, src.attr("stride_h", 1), src.attr("stride_w", 1), 1],
            "padding": padding(src)}


def _pool(ir_type):
    def build(src, graph):
        y = graph.add_op(ir_type, [required(src, graph, 0)], _attrs(src), name="pool").outputs[0]
        graph.set_outputs([activation(graph, y, src.attr("fused_activation_function"), src)])
    return build


def l2_pool_2d(src, graph):
    squares = graph.add_op("Square", [required(src, graph, 0)], name="square").outputs[0]
    mean = graph.add_op("AvgPool", [squares], _attrs(src), name="pool").outputs[0]
    y = graph.add_op("Sqrt", [mean], name="sqrt").outputs[0]
    graph.set_outputs([activation(graph, y, src.attr("fused_activation_function"), src)])


MAPPINGS = [
    tflite_subgraph("MAX_POOL_2D").parse_op_to_graph_fn(_pool("MaxPool")),
    tflite_subgraph("AVERAGE_POOL_2D").parse_op_to_graph_fn(_pool("AvgPool")),
    tflite_subgraph("L2_POOL_2D").parse_op_to_graph_fn(l2_pool_2d),
]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS
