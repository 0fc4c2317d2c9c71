"""Built-in mapping for TF's batched per-class non-max suppression, CombinedNonMaxSuppression
(opp/suppression.py)."""

from tf2ir.opp import suppression
from tf2ir.plugins import hookimpl, register_op

MAPPINGS = [register_op("CombinedNonMaxSuppression").origin_op_type("CombinedNonMaxSuppression")]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS


@hookimpl
def tf2ir_op_prototypes():
    return list(suppression.OPS)
