"""Built-in mappings for TF's image adjustments (contrast, saturation, hue), patch
extraction, NonMaxSuppressionV2 and the refused random box sampling (opp/imageops.py)."""

from tf2ir.opp import imageops
from tf2ir.plugins import hookimpl, register_op

MAPPINGS = [register_op(op).origin_op_type(op) for op in (
    "ExtractImagePatches", "AdjustContrastv2", "AdjustSaturation", "AdjustHue", "NonMaxSuppressionV2",
    "SampleDistortedBoundingBox", "SampleDistortedBoundingBoxV2")]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS


@hookimpl
def tf2ir_op_prototypes():
    return list(imageops.OPS)
