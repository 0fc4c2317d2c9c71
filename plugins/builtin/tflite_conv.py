"""Built-in TFLITE mappings of TFLite's convolutions: each the IR's convolution with TFLite's
layouts declared as formats or rearranged into the IR's, its bias and fused activation.

- CONV_2D: filter OHWI, declared as format NHWC (N out, C in): Conv2D reads it as it is.
- DEPTHWISE_CONV_2D: filter [1, H, W, C * M], output channel c * M + m. With multiplier 1 it
  is format NHWC as well (N the multiplier 1, C the channels); with M > 1 it is reshaped to
  the IR's HWCN [H, W, C, M] (the same element order).
- TRANSPOSE_CONV (output_shape, weights OHWI, input, optional bias): ConvBackpropInput, whose
  filter is the forward convolution's HWCN (C the transposed convolution's output channels,
  N its input ones): OHWI transposed by [1, 2, 0, 3].
- CONV_3D: filter DHWIO, TF's own DHWCN.
"""

import numpy as np

from tf2ir.ir.errors import ConversionError
from tf2ir.plugins import hookimpl
from tf2ir.plugins.builtin import tflite_hybrid
from tf2ir.plugins.tflite import (OHWI, activation, bias_add, data, input_desc, padding,
                                  required, tflite_subgraph)


def _finish(src, graph, y):
    graph.set_outputs([activation(graph, y, src.attr("fused_activation_function"), src)])


def _window_attrs(src, dims="hw"):
    return {"strides": [1, *(src.attr(f"stride_{d}", 1) for d in dims), 1],
            "dilations": [1, *(src.attr(f"dilation_{d}factor", 1) for d in dims), 1],
            "padding": padding(src)}


def conv_2d(src, graph):
    x = required(src, graph, 0)
    attrs = dict(_window_attrs(src), data_format="NHWC")
    y = tflite_hybrid.conv_2d(src, graph, x, attrs)           # hybrid: TFLite's int8 arithmetic
    if y is None:
        y = graph.add_op("Conv2D", [x, required(src, graph, 1, OHWI), data(src, graph, 2)], attrs,
                         name="conv").outputs[0]
    _finish(src, graph, y)


def _depthwise_channels(src, x, w_shape):
    """(input channels, multiplier) of a depthwise filter [1, H, W, C * M]: C from the data's
    shape when known, else from the depth_multiplier option."""
    total = w_shape[3]
    channels = x.desc.shape[3] if x.desc.shape is not None and len(x.desc.shape) == 4 else None
    if channels is None:
        multiplier = src.attr("depth_multiplier", 1) or 1
        if total is None or total % multiplier:
            raise ConversionError(f"depthwise filter {list(w_shape)} and depth_multiplier "
                                  f"{multiplier} do not give the input channels",
                                  node=src.name, op_type=src.op_type)
        channels = total // multiplier
    if total is None or channels == 0 or total % channels:
        raise ConversionError(f"depthwise filter {list(w_shape)} does not fit {channels} input "
                              "channels", node=src.name, op_type=src.op_type)
    return channels, total // channels


def depthwise_conv_2d(src, graph):
    x = required(src, graph, 0)
    desc = input_desc(src, graph, 1)
    shape = None if desc is None else desc.shape
    if shape is None or len(shape) != 4 or shape[0] != 1:
        raise ConversionError(f"a depthwise filter must be [1, H, W, C * M], not {shape}",
                              node=src.name, op_type=src.op_type)
    channels, multiplier = _depthwise_channels(src, x, shape)
    hybrid = tflite_hybrid.conv_2d(src, graph, x, _window_attrs(src), depthwise=True)
    if hybrid is not None:                                      # TFLite's int8 arithmetic
        return _finish(src, graph, hybrid)
    if multiplier == 1:
        w = required(src, graph, 1, OHWI)            # [1, H, W, C]: N the multiplier, C the channels
    else:
        if None in shape[1:3]:
            raise ConversionError("a depthwise filter with multiplier > 1 needs a known spatial "
                                  "shape", node=src.name, op_type=src.op_type)
        hwcm = graph.const(np.array([shape[1], shape[2], channels, multiplier], np.int32), "hwcm")
        w = graph.add_op("Reshape", [required(src, graph, 1), hwcm], name="filter_hwcm").outputs[0]
    attrs = dict(_window_attrs(src), data_format="NHWC")
    y = graph.add_op("DepthwiseConv2D", [x, w, data(src, graph, 2)], attrs,
                     name="depthwise").outputs[0]
    _finish(src, graph, y)


def transpose_conv(src, graph):
    sizes, w, x = required(src, graph, 0), required(src, graph, 1), required(src, graph, 2)
    perm = graph.const(np.array([1, 2, 0, 3], np.int32), "ohwi_to_hwcn")
    hwcn = graph.add_op("Transpose", [w, perm], name="filter_hwcn").outputs[0]
    attrs = {"strides": [1, src.attr("stride_h", 1), src.attr("stride_w", 1), 1],
             "padding": padding(src)}
    y = graph.add_op("ConvBackpropInput", [sizes, hwcn, x], attrs, name="conv_transpose").outputs[0]
    _finish(src, graph, bias_add(graph, y, data(src, graph, 3)))


def conv_3d(src, graph):
    x, w = required(src, graph, 0), required(src, graph, 1)
    attrs = dict(_window_attrs(src, "dhw"), data_format="NDHWC")
    y = graph.add_op("Conv3D", [x, w, data(src, graph, 2)], attrs, name="conv3d").outputs[0]
    _finish(src, graph, y)


MAPPINGS = [
    tflite_subgraph("CONV_2D").parse_op_to_graph_fn(conv_2d),
    tflite_subgraph("DEPTHWISE_CONV_2D").parse_op_to_graph_fn(depthwise_conv_2d),
    tflite_subgraph("TRANSPOSE_CONV").parse_op_to_graph_fn(transpose_conv),
    tflite_subgraph("CONV_3D").parse_op_to_graph_fn(conv_3d),
]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS
