"""Built-in mappings for TF's slicing ops: Slice, StridedSlice, ReverseV2 and ReverseSequence."""

from tf2ir.opp import slicing as slicing_ops
from tf2ir.plugins import hookimpl, register_op

MAPPINGS = [
    register_op("Slice").origin_op_type("Slice"),
    register_op("StridedSlice").origin_op_type("StridedSlice"),
    register_op("ReverseV2").origin_op_type("ReverseV2"),
    register_op("ReverseSequence").origin_op_type("ReverseSequence"),
]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS


@hookimpl
def tf2ir_op_prototypes():
    return list(slicing_ops.OPS)
