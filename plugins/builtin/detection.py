"""Built-in mappings for TF's detection-model ops: CropAndResize, ResizeArea,
MaxPoolWithArgmax and CTCGreedyDecoder (opp/detection.py)."""

from tf2ir.opp import detection
from tf2ir.plugins import auto_mapping, hookimpl, register_op


def parse_argmax_pool(src, op):
    auto_mapping(src, op)
    op.set_attr("Targmax", src.attr("Targmax", "int64"))


MAPPINGS = [register_op(op).origin_op_type(op) for op in (
    "CropAndResize", "ResizeArea", "CTCGreedyDecoder")] + [
    register_op("MaxPoolWithArgmax").origin_op_type("MaxPoolWithArgmax")
    .parse_params_fn(parse_argmax_pool)]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS


@hookimpl
def tf2ir_op_prototypes():
    return list(detection.OPS)
