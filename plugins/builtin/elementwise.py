"""Built-in mappings: elementwise ops beyond the basic arithmetic: more unary math, integer division, comparisons, logical and bitwise ops, selection and clipping."""

from tf2ir.plugins import hookimpl

MAPPINGS = []


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS
