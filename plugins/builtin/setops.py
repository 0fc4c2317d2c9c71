"""Built-in mappings for TF's unique-with-counts and unique-along-an-axis ops (UniqueWithCounts,
UniqueWithCountsV2, UniqueV2), ListDiff, Bucketize, Roll, Cross and the softmax cross entropies
(SoftmaxCrossEntropyWithLogits, SparseSoftmaxCrossEntropyWithLogits)."""

from tf2ir.opp import setops as setops_ops
from tf2ir.plugins import auto_mapping, hookimpl, register_op


def parse_out_idx(src, op):
    auto_mapping(src, op)
    op.set_attr("out_idx", src.attr("out_idx", "int32"))


MAPPINGS = [
    register_op("UniqueWithCounts").origin_op_type("UniqueWithCounts", "UniqueWithCountsV2")
    .parse_params_fn(parse_out_idx),
    register_op("UniqueV2").origin_op_type("UniqueV2").parse_params_fn(parse_out_idx),
    register_op("ListDiff").origin_op_type("ListDiff").parse_params_fn(parse_out_idx),
    register_op("Bucketize").origin_op_type("Bucketize"),
    register_op("Roll").origin_op_type("Roll"),
    register_op("Cross").origin_op_type("Cross"),
    register_op("SoftmaxCrossEntropyWithLogits").origin_op_type("SoftmaxCrossEntropyWithLogits"),
    register_op("SparseSoftmaxCrossEntropyWithLogits")
    .origin_op_type("SparseSoftmaxCrossEntropyWithLogits"),
]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS


@hookimpl
def tf2ir_op_prototypes():
    return list(setops_ops.OPS)
