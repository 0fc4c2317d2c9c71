"""Built-in TFLITE mappings of TFLite's convolutions: each the IR's convolution with TFLite's
layouts declared as formats (data NHWC, filter OHWI), its bias and fused activation."""

from tf2ir.plugins import hookimpl
from tf2ir.plugins.tflite import OHWI, activation, data, padding, tflite_subgraph


def conv_2d(src, graph):
    x, w = data(src, graph, 0), data(src, graph, 1, OHWI)
    attrs = {"strides": [1, src.attr("stride_h", 1), src.attr("stride_w", 1), 1],
             "dilations": [1, src.attr("dilation_hfactor", 1), src.attr("dilation_wfactor", 1), 1],
             "padding": padding(src), "data_format": "NHWC"}
    y = graph.add_op("Conv2D", [x, w, data(src, graph, 2)], attrs, name="conv").outputs[0]
    graph.set_outputs([activation(graph, y, src.attr("fused_activation_function"), src)])


MAPPINGS = [
    tflite_subgraph("CONV_2D").parse_op_to_graph_fn(conv_2d),
]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS
