"""Built-in mappings for TF's special functions: Lgamma, Digamma, Polygamma, Zeta, Igamma,
Igammac, Betainc, BesselI0e and BesselI1e (the `bessel_i0e`/`bessel_i1e` of tf.math and
tf.math.special)."""

from tf2ir.opp import special as special_ops
from tf2ir.plugins import hookimpl, register_op

_SPECIAL = ("Lgamma", "Digamma", "Polygamma", "Zeta", "Igamma", "Igammac", "Betainc",
            "BesselI0e", "BesselI1e")

MAPPINGS = [register_op(op).origin_op_type(op) for op in _SPECIAL]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS


@hookimpl
def tf2ir_op_prototypes():
    return list(special_ops.OPS)
