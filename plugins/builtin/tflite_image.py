"""Built-in TFLITE mappings of TFLite's image and block ops, one-to-one onto the IR's TF ops
(data NHWC, TF's undeclared layout):

- RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR (images, size): align_corners, half_pixel_centers.
- SPACE_TO_DEPTH, DEPTH_TO_SPACE: block_size (DCR order, as TF).
- SPACE_TO_BATCH_ND (x, block_shape, paddings), BATCH_TO_SPACE_ND (x, block_shape, crops).
"""

from tf2ir.ir.errors import ConversionError
from tf2ir.plugins import hookimpl
from tf2ir.plugins.tflite import inputs_only, tflite_op


def resize(src, op):
    align, half = bool(src.attr("align_corners", False)), bool(src.attr("half_pixel_centers", False))
    if align and half:
        raise ConversionError("align_corners and half_pixel_centers cannot both be set",
                              node=src.name, op_type=src.op_type)
    op.set_attr("align_corners", align)
    op.set_attr("half_pixel_centers", half)


def block_size(src, op):
    op.set_attr("block_size", int(src.attr("block_size", 0)))


MAPPINGS = [
    tflite_op("ResizeBilinear", "RESIZE_BILINEAR").parse_params_fn(resize),
    tflite_op("ResizeNearestNeighbor", "RESIZE_NEAREST_NEIGHBOR").parse_params_fn(resize),
    tflite_op("SpaceToDepth", "SPACE_TO_DEPTH").parse_params_fn(block_size),
    tflite_op("DepthToSpace", "DEPTH_TO_SPACE").parse_params_fn(block_size),
    tflite_op("SpaceToBatchND", "SPACE_TO_BATCH_ND").parse_params_fn(inputs_only),
    tflite_op("BatchToSpaceND", "BATCH_TO_SPACE_ND").parse_params_fn(inputs_only),
]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS
