"""Built-in mappings for TF's pooling ops (MaxPool, AvgPool, their 3-D forms, MaxPoolV2): the
data and the output take the layout TF's data_format names."""

import numpy as np

from tf2ir.ir import ConversionError
from tf2ir.plugins import auto_mapping, hookimpl, register_op
from tf2ir.opp import pool as pool_ops


def _declare_formats(src, op):
    fmt = op.get_attr("data_format", "NDHWC" if src.op_type.endswith("3D") else "NHWC")
    op.set_input_format(0, fmt)
    op.set_output_format(0, fmt)


def parse_pool(src, op):
    auto_mapping(src, op)
    _declare_formats(src, op)


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
    _declare_formats(src, op)


MAPPINGS = [
    register_op("MaxPool").origin_op_type("MaxPool", "MaxPool3D").parse_params_fn(parse_pool),
    register_op("AvgPool").origin_op_type("AvgPool", "AvgPool3D").parse_params_fn(parse_pool),
    register_op("MaxPool").origin_op_type("MaxPoolV2").parse_params_fn(parse_max_pool_v2),
]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS


@hookimpl
def tf2ir_op_prototypes():
    return list(pool_ops.OPS)
