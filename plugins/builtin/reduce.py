"""Built-in mappings: reductions and linear algebra beyond the basics: arg-max/min, boolean reductions, cumulative sums and products, batched matrix products, einsum."""

from tf2ir.plugins import hookimpl

MAPPINGS = []


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS
