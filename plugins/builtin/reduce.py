"""Built-in mappings for TF's reductions and scans: Sum, Mean, Max, Min, Prod, ArgMax/ArgMin,
All/Any, EuclideanNorm, L2Loss, TopKV2, Cumsum/Cumprod and BoostedTreesBucketize."""

from tf2ir.opp import reduce as reduce_ops
from tf2ir.plugins import (
    DynamicInputOutputInfo, ImplyType, auto_mapping, auto_mapping_dynamic, hookimpl, register_op,
)


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


_REDUCTIONS = {"ReduceMean": "Mean", "ReduceSum": "Sum", "ReduceMax": "Max",
               "ReduceMin": "Min", "ReduceProd": "Prod"}

MAPPINGS = (
    [register_op(ir).origin_op_type(tf) for ir, tf in _REDUCTIONS.items()]
    + [register_op("ArgMax").origin_op_type("ArgMax"),
       register_op("ArgMin").origin_op_type("ArgMin"),
       register_op("ReduceAll").origin_op_type("All"),
       register_op("ReduceAny").origin_op_type("Any"),
       register_op("EuclideanNorm").origin_op_type("EuclideanNorm"),
       register_op("L2Loss").origin_op_type("L2Loss"),
       register_op("TopK").framework_type("TENSORFLOW").origin_op_type("TopKV2")
       .parse_params_fn(parse_top_k).imply_type(ImplyType.TVM),
       register_op("Cumsum").origin_op_type("Cumsum"),
       register_op("Cumprod").origin_op_type("Cumprod"),
       register_op("BoostedTreesBucketize").origin_op_type("BoostedTreesBucketize")
       .parse_params_fn(parse_bucketize)]
)


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS


@hookimpl
def tf2ir_op_prototypes():
    return list(reduce_ops.OPS)
