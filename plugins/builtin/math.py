"""Built-in mappings for TF's math functions: roots, exponentials and logarithms, Erf/Erfc,
trigonometric and hyperbolic functions (Atan2 too), rounding, sign, Abs, Neg, Square,
Reciprocal/Inv and the float classes IsNan, IsInf, IsFinite."""

from tf2ir.opp import math as math_ops
from tf2ir.plugins import hookimpl, register_op

# IR op type → the TF op types it maps (auto mapping: the attributes keep their TF names).
_MATH = {
    "Rsqrt": ("Rsqrt",), "Sqrt": ("Sqrt",), "Exp": ("Exp",), "Log": ("Log",),
    "Reciprocal": ("Reciprocal", "Inv"), "Erf": ("Erf",), "Erfc": ("Erfc",),
    "Floor": ("Floor",), "Ceil": ("Ceil",), "Sin": ("Sin",), "Cos": ("Cos",), "Neg": ("Neg",),
    "Abs": ("Abs",), "Square": ("Square",),
    "Tan": ("Tan",), "Asin": ("Asin",), "Acos": ("Acos",), "Atan": ("Atan",),
    "Sinh": ("Sinh",), "Cosh": ("Cosh",), "Asinh": ("Asinh",), "Acosh": ("Acosh",),
    "Atanh": ("Atanh",), "Atan2": ("Atan2",), "Log1p": ("Log1p",), "Expm1": ("Expm1",),
    "Sign": ("Sign",), "Round": ("Round", "Rint"),   # both round half to even
    "IsNan": ("IsNan",), "IsInf": ("IsInf",), "IsFinite": ("IsFinite",),
}

MAPPINGS = [register_op(ir).origin_op_type(*tf) for ir, tf in _MATH.items()]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS


@hookimpl
def tf2ir_op_prototypes():
    return list(math_ops.OPS)
