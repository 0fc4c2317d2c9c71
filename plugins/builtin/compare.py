"""Built-in mappings for TF's comparisons: Less, LessEqual, Greater, GreaterEqual, Equal,
NotEqual and ApproximateEqual."""

from tf2ir.opp import compare as compare_ops
from tf2ir.plugins import hookimpl, register_op

# Each maps to the IR op of its name (auto mapping: the attributes keep their TF names).
MAPPINGS = [register_op(op_type).origin_op_type(op_type) for op_type in (
    "Less", "LessEqual", "Greater", "GreaterEqual", "Equal", "NotEqual", "ApproximateEqual")]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS


@hookimpl
def tf2ir_op_prototypes():
    return list(compare_ops.OPS)
