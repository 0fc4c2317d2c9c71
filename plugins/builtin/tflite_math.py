"""Built-in TFLITE mappings of TFLite's elementwise math, comparisons, logic and selection:
ABS, NEG, EXP, LOG, SQRT, RSQRT, SQUARE, SIN, COS, CEIL, FLOOR, ROUND, SIGN; EQUAL, NOT_EQUAL,
LESS, LESS_EQUAL, GREATER, GREATER_EQUAL; LOGICAL_AND, LOGICAL_OR, LOGICAL_NOT; SELECT,
SELECT_V2; CAST, ZEROS_LIKE and ONES_LIKE. Each is the IR op TF's op of the same meaning maps
to; none takes options but CAST, whose target type is its output tensor's."""

from tf2ir.plugins import hookimpl
from tf2ir.plugins.tflite import inputs_only, output_dtype, tflite_op

# TFLite op → the IR op; one-to-one, no attributes.
UNARY = {"ABS": "Abs", "NEG": "Neg", "EXP": "Exp", "LOG": "Log", "SQRT": "Sqrt",
         "RSQRT": "Rsqrt", "SQUARE": "Square", "SIN": "Sin", "COS": "Cos", "CEIL": "Ceil",
         "FLOOR": "Floor",
         "ROUND": "Round",     # TFLite's RoundToNearest: half to even, as TF's Round
         "SIGN": "Sign"}
COMPARE = {"EQUAL": "Equal", "NOT_EQUAL": "NotEqual", "LESS": "Less", "LESS_EQUAL": "LessEqual",
           "GREATER": "Greater", "GREATER_EQUAL": "GreaterEqual"}
LOGICAL = {"LOGICAL_AND": "LogicalAnd", "LOGICAL_OR": "LogicalOr", "LOGICAL_NOT": "LogicalNot"}
OTHER = {"SELECT": "Select",          # v1: a vector condition picks rows, as TF's Select
         "SELECT_V2": "SelectV2", "ZEROS_LIKE": "ZerosLike", "ONES_LIKE": "OnesLike"}


def cast(src, op):
    """The target type is the output tensor's (CastOptions' in/out_data_type are often left
    out by the converter; where present they agree with the tensors). A quantized output is
    dequantized by the view, so its readers see float32."""
    op.set_attr("dst_type", output_dtype(src, 0))


MAPPINGS = (
    [tflite_op(ir, origin).parse_params_fn(inputs_only)
     for table in (UNARY, COMPARE, LOGICAL, OTHER) for origin, ir in table.items()]
    + [tflite_op("Cast", "CAST").parse_params_fn(cast)]
)


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS
