"""Built-in mappings for TF's math ops (elementwise arithmetic, MatMul, reductions)."""

from tf2ir.plugins import (
    DynamicInputOutputInfo, ImplyType, auto_mapping, auto_mapping_dynamic, hookimpl, register_op,
)
from tf2ir.opp import math as math_ops


def parse_matmul(src, op):
    """TF names the transposes transpose_a/transpose_b; the IR op says x1/x2."""
    op.set_attr("transpose_x1", bool(src.attr("transpose_a", False)))
    op.set_attr("transpose_x2", bool(src.attr("transpose_b", False)))


def parse_bucketize(src, op):
    """The guide's dynamic I/O example: both input groups and the output group are counted
    by num_features."""
    auto_mapping_dynamic(src, op, [
        DynamicInputOutputInfo("input", "float_values", "num_features"),
        DynamicInputOutputInfo("input", "bucket_boundaries", "num_features"),
        DynamicInputOutputInfo("output", "y", "num_features"),
    ])


def parse_top_k(src, op):
    """The guide's computed-attribute example: `sorted` maps by name; TF has no `dim` or
    `largest`, TopKV2 always works on the last dim and takes the largest."""
    auto_mapping(src, op)
    op.set_attr("dim", -1)
    op.set_attr("largest", True)


_ELEMENTWISE = {
    "Add": ("Add", "AddV2"), "Sub": ("Sub",), "Mul": ("Mul",), "RealDiv": ("RealDiv",),
    "Maximum": ("Maximum",), "Minimum": ("Minimum",), "Pow": ("Pow",),
    "SquaredDifference": ("SquaredDifference",), "Rsqrt": ("Rsqrt",), "Sqrt": ("Sqrt",),
    "Exp": ("Exp",), "Log": ("Log",), "Reciprocal": ("Reciprocal", "Inv"), "Erf": ("Erf",),
    "Floor": ("Floor",), "Ceil": ("Ceil",), "Sin": ("Sin",), "Cos": ("Cos",), "Neg": ("Neg",),
    "Abs": ("Abs",), "Square": ("Square",), "Erfc": ("Erfc",),
}
_REDUCTIONS = {"ReduceMean": "Mean", "ReduceSum": "Sum", "ReduceMax": "Max",
               "ReduceMin": "Min", "ReduceProd": "Prod"}

MAPPINGS = (
    [register_op(ir).origin_op_type(*tf) for ir, tf in _ELEMENTWISE.items()]
    + [register_op(ir).origin_op_type(tf) for ir, tf in _REDUCTIONS.items()]
    + [register_op("MatMul").origin_op_type("MatMul").parse_params_fn(parse_matmul),
       register_op("TopK").framework_type("TENSORFLOW").origin_op_type("TopKV2")
       .parse_params_fn(parse_top_k).imply_type(ImplyType.TVM),
       register_op("BoostedTreesBucketize").origin_op_type("BoostedTreesBucketize")
       .parse_params_fn(parse_bucketize)]
)


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS


@hookimpl
def tf2ir_op_prototypes():
    return list(math_ops.OPS)
