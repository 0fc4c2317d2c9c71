"""Built-in mappings for TF's selection by a condition: Select (v1) and SelectV2."""

from tf2ir.opp import select as select_ops
from tf2ir.plugins import hookimpl, register_op

# Each maps to the IR op of its name (auto mapping: the attributes keep their TF names).
MAPPINGS = [register_op(op_type).origin_op_type(op_type) for op_type in (
    "Select", "SelectV2")]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS


@hookimpl
def tf2ir_op_prototypes():
    return list(select_ops.OPS)
