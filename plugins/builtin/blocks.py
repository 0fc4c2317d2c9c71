"""Built-in mappings for TF's block rearrangements: SpaceToBatchND, BatchToSpaceND,
DepthToSpace and SpaceToDepth."""

from tf2ir.ir.errors import ConversionError
from tf2ir.opp import blocks as blocks_ops
from tf2ir.plugins import auto_mapping, hookimpl, register_op


def parse_depth_op(src, op):
    """DepthToSpace/SpaceToDepth: data_format becomes the formats of the data (NHWC, NCHW;
    TF's NCHW_VECT_C is refused)."""
    auto_mapping(src, op)
    fmt = op.get_attr("data_format", "NHWC")
    if fmt not in ("NHWC", "NCHW"):
        raise ConversionError(f"data_format {fmt} is not supported (NHWC or NCHW)")
    op.set_input_format(0, fmt)
    op.set_output_format(0, fmt)


MAPPINGS = [
    register_op("SpaceToBatchND").origin_op_type("SpaceToBatchND"),
    register_op("BatchToSpaceND").origin_op_type("BatchToSpaceND"),
    register_op("DepthToSpace").origin_op_type("DepthToSpace").parse_params_fn(parse_depth_op),
    register_op("SpaceToDepth").origin_op_type("SpaceToDepth").parse_params_fn(parse_depth_op),
]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS


@hookimpl
def tf2ir_op_prototypes():
    return list(blocks_ops.OPS)
