"""Built-in mappings: shape, indexing and tensor-creation ops: slicing, gathering and scattering, tiling, filling, ranges, one-hot, space/batch/depth rearrangements."""

from tf2ir.plugins import hookimpl

MAPPINGS = []


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS
