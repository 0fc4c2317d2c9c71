"""Built-in mappings for TF's normalizations: FusedBatchNorm (V1-V3), whose data takes the
layout TF's data_format names, and LRN, whose data is NHWC."""

from tf2ir.plugins import auto_mapping, hookimpl, register_op
from tf2ir.opp import norm as norm_ops


def parse_batch_norm(src, op):
    auto_mapping(src, op)
    fmt = op.get_attr("data_format", "NHWC")
    op.set_input_format(0, fmt)
    op.set_output_format(0, fmt)


def parse_lrn(src, op):
    auto_mapping(src, op)
    op.set_input_format(0, "NHWC")
    op.set_output_format(0, "NHWC")


MAPPINGS = [
    register_op("FusedBatchNorm").origin_op_type("FusedBatchNorm", "FusedBatchNormV2")
    .parse_params_fn(parse_batch_norm),
    register_op("FusedBatchNormV3").origin_op_type("FusedBatchNormV3").parse_params_fn(parse_batch_norm),
    register_op("LRN").origin_op_type("LRN").parse_params_fn(parse_lrn),
]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS


@hookimpl
def tf2ir_op_prototypes():
    return list(norm_ops.OPS)
