"""Built-in mappings for TF's neural-network ops: BiasAdd, softmax and activations."""

from tf2ir.ir import ConversionError
from tf2ir.plugins import auto_mapping, hookimpl, register_op
from tf2ir.opp import nn as nn_ops

BIAS_LAYOUTS = {(4, "NHWC"): "NHWC", (4, "NCHW"): "NCHW", (5, "NHWC"): "NDHWC", (5, "NCHW"): "NCDHW"}


def parse_bias_add(src, op):
    """BiasAdd: data_format NCHW puts the channels at dim 1, which the data's format says for
    4-D and 5-D data; 2-D data has them last in either layout."""
    auto_mapping(src, op)
    fmt = op.get_attr("data_format", "NHWC")
    rank = op.inputs[0].desc.rank
    layout = BIAS_LAYOUTS.get((rank, fmt))
    if layout is not None:
        op.set_input_format(0, layout)
        op.set_output_format(0, layout)
    elif fmt.startswith("NC") and rank != 2:
        raise ConversionError(f"data_format {fmt} needs 2-D, 4-D or 5-D data to say where the "
                              f"channels are; the rank is {'unknown' if rank is None else rank}")


MAPPINGS = [
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
