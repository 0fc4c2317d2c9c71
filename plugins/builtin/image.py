"""Built-in mappings for TF's image ops: resizing (NHWC images) and non-max suppression."""

from tf2ir.plugins import auto_mapping, hookimpl, register_op
from tf2ir.opp import image as image_ops


def parse_resize(src, op):
    auto_mapping(src, op)
    op.set_input_format(0, "NHWC")
    op.set_output_format(0, "NHWC")


def parse_nms(version):
    def parse(src, op):
        auto_mapping(src, op)
        op.set_attr("num_extra", {3: 0, 4: 1, 5: 2}[version])
        op.set_attr("selected_scores", version == 5)
        if version == 3:
            op.set_attr("pad_to_max_output_size", False)
    return parse


MAPPINGS = [
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
