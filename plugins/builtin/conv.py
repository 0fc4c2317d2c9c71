"""Built-in mappings for TF's convolutions: Conv2D, DepthwiseConv2dNative, Conv3D and the
transposed convolutions. As in the CANN guide's Conv2D plugin, TF's data_format becomes the
formats the lowering reads: the data and the output in it, the filter in HWCN (DHWCN)."""

from tf2ir.plugins import auto_mapping, hookimpl, register_op
from tf2ir.opp import conv as conv_ops


def _declare_formats(op, data_input, fmt):
    op.set_input_format(data_input, fmt)
    op.set_input_format(1, "DHWCN" if len(fmt) == 5 else "HWCN")
    op.set_output_format(0, fmt)


def parse_conv(src, op):
    """Conv2D, DepthwiseConv2dNative (data NHWC or NCHW) and Conv3D (NDHWC or NCDHW)."""
    auto_mapping(src, op)
    _declare_formats(op, 0, op.get_attr("data_format", "NDHWC" if src.op_type == "Conv3D" else "NHWC"))


def parse_conv_backprop_input(src, op):
    """Conv2DBackpropInput / Conv3DBackpropInputV2: inputs (input_sizes, filter, out_backprop)."""
    auto_mapping(src, op)
    fmt = op.get_attr("data_format", "NDHWC" if src.op_type.startswith("Conv3D") else "NHWC")
    op.set_attr("dilations", op.get_attr("dilations") or [1] * len(fmt))
    _declare_formats(op, 2, fmt)


MAPPINGS = [
    register_op("Conv2D").origin_op_type("Conv2D").parse_params_fn(parse_conv),
    register_op("DepthwiseConv2D").origin_op_type("DepthwiseConv2dNative").parse_params_fn(parse_conv),
    register_op("Conv3D").origin_op_type("Conv3D").parse_params_fn(parse_conv),
    register_op("ConvBackpropInput").origin_op_type("Conv2DBackpropInput", "Conv3DBackpropInputV2")
    .parse_params_fn(parse_conv_backprop_input),
]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS


@hookimpl
def tf2ir_op_prototypes():
    return list(conv_ops.OPS)
