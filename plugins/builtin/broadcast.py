"""Built-in mappings for TF's broadcast shape arithmetic: BroadcastArgs and
BroadcastGradientArgs."""

from tf2ir.opp import broadcast as broadcast_ops
from tf2ir.plugins import hookimpl, register_op

# Each maps to the IR op of its name (auto mapping).
MAPPINGS = [register_op(op_type).origin_op_type(op_type) for op_type in (
    "BroadcastArgs", "BroadcastGradientArgs")]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS


@hookimpl
def tf2ir_op_prototypes():
    return list(broadcast_ops.OPS)
