"""Built-in mappings for TF's ragged ops: RaggedRange, RaggedTensorToTensor, RaggedGather,
RaggedTensorToSparse, and the refused variant encodings (opp/ragged.py)."""

from tf2ir.opp import ragged as ragged_ops
from tf2ir.plugins import DynamicInputOutputInfo, auto_mapping_dynamic, hookimpl, register_op


def parse_to_tensor(src, op):
    auto_mapping_dynamic(src, op, [DynamicInputOutputInfo(
        "input", "row_partition_tensors", "num_row_partition_tensors")])


def parse_ragged_gather(src, op):
    auto_mapping_dynamic(src, op, [
        DynamicInputOutputInfo("input", "params_nested_splits", "PARAMS_RAGGED_RANK"),
        DynamicInputOutputInfo("output", "output_nested_splits", "OUTPUT_RAGGED_RANK")])


def parse_to_sparse(src, op):
    auto_mapping_dynamic(src, op, [DynamicInputOutputInfo("input", "rt_nested_splits",
                                                          "RAGGED_RANK")])


def parse_from_variant(src, op):
    op.num_outputs = int(src.attr("output_ragged_rank", 0)) + 1


MAPPINGS = [
    register_op("RaggedRange").origin_op_type("RaggedRange"),
    register_op("RaggedTensorToTensor").origin_op_type("RaggedTensorToTensor")
    .parse_params_fn(parse_to_tensor),
    register_op("RaggedGather").origin_op_type("RaggedGather")
    .parse_params_fn(parse_ragged_gather),
    register_op("RaggedTensorToSparse").origin_op_type("RaggedTensorToSparse")
    .parse_params_fn(parse_to_sparse),
    register_op("RaggedTensorToVariant").origin_op_type("RaggedTensorToVariant"),
    register_op("RaggedTensorFromVariant").origin_op_type("RaggedTensorFromVariant")
    .parse_params_fn(parse_from_variant),
]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS


@hookimpl
def tf2ir_op_prototypes():
    return list(ragged_ops.OPS)
