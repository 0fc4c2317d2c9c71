"""Built-in mappings: elementwise ops beyond the basic arithmetic: more unary math, integer division, comparisons, logical and bitwise ops, selection and clipping."""

from tf2ir.plugins import hookimpl, register_op
from tf2ir.opp import elementwise as elementwise_ops

# IR op type → the TF op types it maps (auto mapping: the attributes keep their TF names).
_ELEMENTWISE = {
    "Tan": ("Tan",), "Asin": ("Asin",), "Acos": ("Acos",), "Atan": ("Atan",),
    "Sinh": ("Sinh",), "Cosh": ("Cosh",), "Asinh": ("Asinh",), "Acosh": ("Acosh",),
    "Atanh": ("Atanh",), "Log1p": ("Log1p",), "Expm1": ("Expm1",),
    "Sign": ("Sign",), "Round": ("Round", "Rint"),   # both round half to even
    "IsNan": ("IsNan",), "IsInf": ("IsInf",), "IsFinite": ("IsFinite",),
    "Div": ("Div",), "TruncateDiv": ("TruncateDiv",), "FloorDiv": ("FloorDiv",),
    "FloorMod": ("FloorMod",), "TruncateMod": ("TruncateMod", "Mod"),  # Mod is C's fmod too
    "DivNoNan": ("DivNoNan",), "MulNoNan": ("MulNoNan",), "Xlogy": ("Xlogy",),
    "Xdivy": ("Xdivy",), "Atan2": ("Atan2",),
    "Equal": ("Equal",), "NotEqual": ("NotEqual",), "Less": ("Less",),
    "LessEqual": ("LessEqual",), "Greater": ("Greater",), "GreaterEqual": ("GreaterEqual",),
    "ApproximateEqual": ("ApproximateEqual",),
    "LogicalAnd": ("LogicalAnd",), "LogicalOr": ("LogicalOr",), "LogicalNot": ("LogicalNot",),
    "Select": ("Select",), "SelectV2": ("SelectV2",), "ClipByValue": ("ClipByValue",),
    "BitwiseAnd": ("BitwiseAnd",), "BitwiseOr": ("BitwiseOr",), "BitwiseXor": ("BitwiseXor",),
    "Invert": ("Invert",), "LeftShift": ("LeftShift",), "RightShift": ("RightShift",),
    "ZerosLike": ("ZerosLike",), "OnesLike": ("OnesLike",),
}

MAPPINGS = [register_op(ir).origin_op_type(*tf) for ir, tf in _ELEMENTWISE.items()]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS


@hookimpl
def tf2ir_op_prototypes():
    return list(elementwise_ops.OPS)
