"""Built-in mappings for TF's neural-network ops (convolution, pooling, activations)."""

from tf2ir.plugins import auto_mapping, hookimpl, register_op
from tf2ir.opp import nn as nn_ops


def parse_conv(src, op):
    """Conv2D/DepthwiseConv2dNative: data in NHWC or NCHW, the filter in HWCN."""
    auto_mapping(src, op)
    fmt = op.get_attr("data_format", "NHWC")
    op.set_input_format(0, fmt)
    op.set_input_format(1, "HWCN")
    op.set_output_format(0, fmt)


def parse_data_format(src, op):
    auto_mapping(src, op)
    fmt = op.get_attr("data_format", "NHWC")
    op.set_input_format(0, fmt)
    op.set_output_format(0, fmt)


def parse_bias_add(src, op):
    auto_mapping(src, op)
    fmt = op.get_attr("data_format", "NHWC")
    if op.inputs[0].desc.rank == 4:
        op.set_input_format(0, fmt)
        op.set_output_format(0, fmt)


MAPPINGS = [
    register_op("Conv2D").origin_op_type("Conv2D").parse_params_fn(parse_conv),
    register_op("DepthwiseConv2D").origin_op_type("DepthwiseConv2dNative").parse_params_fn(parse_conv),
    register_op("MaxPool").origin_op_type("MaxPool").parse_params_fn(parse_data_format),
    register_op("AvgPool").origin_op_type("AvgPool").parse_params_fn(parse_data_format),
    register_op("BiasAdd").origin_op_type("BiasAdd", "BiasAddV1").parse_params_fn(parse_bias_add),
    register_op("Softmax").origin_op_type("Softmax"),
    register_op("LogSoftmax").origin_op_type("LogSoftmax"),
    register_op("Relu").origin_op_type("Relu"),
    register_op("Relu6").origin_op_type("Relu6"),
    register_op("Sigmoid").origin_op_type("Sigmoid"),
    register_op("Tanh").origin_op_type("Tanh"),
    register_op("Elu").origin_op_type("Elu"),
    register_op("Selu").origin_op_type("Selu"),
    register_op("Softplus").origin_op_type("Softplus"),
    register_op("Softsign").origin_op_type("Softsign"),
    register_op("LeakyRelu").origin_op_type("LeakyRelu"),
]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS


@hookimpl
def tf2ir_op_prototypes():
    return list(nn_ops.OPS)
