"""Built-in mappings for TF's bitwise ops: BitwiseAnd, BitwiseOr, BitwiseXor, Invert,
LeftShift, RightShift and Bitcast."""

from tf2ir.opp import bitwise as bitwise_ops
from tf2ir.plugins import hookimpl, register_op

# Each maps to the IR op of its name (auto mapping: the attributes keep their TF names).
MAPPINGS = [register_op(op_type).origin_op_type(op_type) for op_type in (
    "BitwiseAnd", "BitwiseOr", "BitwiseXor", "Invert", "LeftShift", "RightShift", "Bitcast")]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS


@hookimpl
def tf2ir_op_prototypes():
    return list(bitwise_ops.OPS)
