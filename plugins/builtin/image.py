"""Built-in mappings: image and convolution ops beyond the basics: transposed and 3-D convolutions, 3-D pooling, batch normalization, resizing, non-max suppression, local response normalization."""

import numpy as np

from tf2ir.ir import ConversionError
from tf2ir.plugins import auto_mapping, hookimpl, register_op
from tf2ir.opp import image as image_ops


def _formats(op, data_inputs, fmt, filter_input=None):
    for index in data_inputs:
        op.set_input_format(index, fmt)
    if filter_input is not None:
        op.set_input_format(filter_input, "DHWCN" if len(fmt) == 5 else "HWCN")
    op.set_output_format(0, fmt)


def parse_conv3d(src, op):
    """Conv3D: data NDHWC (NCDHW is GPU-only in TF), the filter DHWCN."""
    auto_mapping(src, op)
    op.set_attr("data_format", op.get_attr("data_format", "NDHWC"))
    _formats(op, [0], op.get_attr("data_format"), filter_input=1)


def parse_conv_backprop_input(src, op):
    """Conv2DBackpropInput / Conv3DBackpropInputV2: inputs (input_sizes, filter, out_backprop)."""
    auto_mapping(src, op)
    default = "NDHWC" if src.op_type.startswith("Conv3D") else "NHWC"
    fmt = op.get_attr("data_format", default)
    op.set_attr("data_format", fmt)
    op.set_attr("dilations", op.get_attr("dilations") or [1] * len(fmt))
    _formats(op, [2], fmt, filter_input=1)


def parse_pool3d(src, op):
    auto_mapping(src, op)
    op.set_attr("data_format", op.get_attr("data_format", "NDHWC"))
    _formats(op, [0], op.get_attr("data_format"))


def parse_max_pool_v2(src, op):
    """MaxPoolV2 takes ksize and strides as inputs: they must be constants, and become the
    attributes of a MaxPool."""
    auto_mapping(src, op)
    for index, name in ((1, "ksize"), (2, "strides")):
        value = op.inputs[index].const_value
        if value is None:
            raise ConversionError(f"MaxPoolV2's {name} must be a constant")
        op.set_attr(name, [int(v) for v in np.asarray(value).reshape(-1)])
    op.inputs = op.inputs[:1]
    _formats(op, [0], op.get_attr("data_format", "NHWC"))


def parse_batch_norm(src, op):
    auto_mapping(src, op)
    _formats(op, [0], op.get_attr("data_format", "NHWC"))


def parse_resize(src, op):
    auto_mapping(src, op)
    _formats(op, [0], "NHWC")


def parse_nms(version):
    def parse(src, op):
        auto_mapping(src, op)
        op.set_attr("num_extra", {3: 0, 4: 1, 5: 2}[version])
        op.set_attr("selected_scores", version == 5)
        if version == 3:
            op.set_attr("pad_to_max_output_size", False)
    return parse


MAPPINGS = [
    register_op("Conv3D").origin_op_type("Conv3D").parse_params_fn(parse_conv3d),
    register_op("ConvBackpropInput").origin_op_type("Conv2DBackpropInput", "Conv3DBackpropInputV2")
    .parse_params_fn(parse_conv_backprop_input),
    register_op("MaxPool").origin_op_type("MaxPool3D").parse_params_fn(parse_pool3d),
    register_op("AvgPool").origin_op_type("AvgPool3D").parse_params_fn(parse_pool3d),
    register_op("MaxPool").origin_op_type("MaxPoolV2").parse_params_fn(parse_max_pool_v2),
    register_op("FusedBatchNorm").origin_op_type("FusedBatchNorm", "FusedBatchNormV2")
    .parse_params_fn(parse_batch_norm),
    register_op("FusedBatchNormV3").origin_op_type("FusedBatchNormV3").parse_params_fn(parse_batch_norm),
    register_op("LRN").origin_op_type("LRN"),
    register_op("ResizeBilinear").origin_op_type("ResizeBilinear").parse_params_fn(parse_resize),
    register_op("ResizeNearestNeighbor").origin_op_type("ResizeNearestNeighbor")
    .parse_params_fn(parse_resize),
    register_op("ResizeBicubic").origin_op_type("ResizeBicubic").parse_params_fn(parse_resize),
    register_op("NonMaxSuppression").origin_op_type("NonMaxSuppressionV3").parse_params_fn(parse_nms(3)),
    register_op("NonMaxSuppression").origin_op_type("NonMaxSuppressionV4").parse_params_fn(parse_nms(4)),
    register_op("NonMaxSuppression").origin_op_type("NonMaxSuppressionV5").parse_params_fn(parse_nms(5)),
]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS


@hookimpl
def tf2ir_op_prototypes():
    return list(image_ops.OPS)
