"""Built-in mappings for TF's binary arithmetic: Add/AddV2, Sub, Mul, the divisions and
remainders (RealDiv, Div, FloorDiv, FloorMod, TruncateDiv, TruncateMod/Mod), Maximum, Minimum,
Pow, SquaredDifference, DivNoNan, MulNoNan, Xlogy, Xdivy and ClipByValue."""

from tf2ir.opp import arithmetic as arithmetic_ops
from tf2ir.plugins import hookimpl, register_op

# IR op type → the TF op types it maps (auto mapping: the attributes keep their TF names).
_ARITHMETIC = {
    "Add": ("Add", "AddV2"), "Sub": ("Sub",), "Mul": ("Mul",), "RealDiv": ("RealDiv",),
    "Maximum": ("Maximum",), "Minimum": ("Minimum",), "Pow": ("Pow",),
    "SquaredDifference": ("SquaredDifference",),
    "Div": ("Div",), "TruncateDiv": ("TruncateDiv",), "FloorDiv": ("FloorDiv",),
    "FloorMod": ("FloorMod",), "TruncateMod": ("TruncateMod", "Mod"),  # Mod is C's fmod too
    "DivNoNan": ("DivNoNan",), "MulNoNan": ("MulNoNan",), "Xlogy": ("Xlogy",),
    "Xdivy": ("Xdivy",), "ClipByValue": ("ClipByValue",),
}

MAPPINGS = [register_op(ir).origin_op_type(*tf) for ir, tf in _ARITHMETIC.items()]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS


@hookimpl
def tf2ir_op_prototypes():
    return list(arithmetic_ops.OPS)
