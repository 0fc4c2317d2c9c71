"""Built-in mappings for TF's sparse and partition ops: SparseToDense, SparseReshape,
SparseFillEmptyRows, DynamicPartition and DynamicStitch (opp/sparse.py)."""

from tf2ir.opp import sparse as sparse_ops
from tf2ir.plugins import DynamicInputOutputInfo, auto_mapping_dynamic, hookimpl, register_op


def parse_sparse_to_dense(src, op):
    op.set_attr("validate_indices", bool(src.attr("validate_indices", True)))


def parse_dynamic_partition(src, op):
    auto_mapping_dynamic(src, op, [DynamicInputOutputInfo("output", "outputs", "num_partitions")])


def parse_dynamic_stitch(src, op):
    auto_mapping_dynamic(src, op, [DynamicInputOutputInfo("input", "indices", "N"),
                                   DynamicInputOutputInfo("input", "data", "N")])


MAPPINGS = [
    register_op("SparseToDense").origin_op_type("SparseToDense")
    .parse_params_fn(parse_sparse_to_dense),
    register_op("SparseReshape").origin_op_type("SparseReshape"),
    register_op("SparseFillEmptyRows").origin_op_type("SparseFillEmptyRows"),
    register_op("DynamicPartition").origin_op_type("DynamicPartition")
    .parse_params_fn(parse_dynamic_partition),
    register_op("DynamicStitch").origin_op_type("DynamicStitch", "ParallelDynamicStitch")
    .parse_params_fn(parse_dynamic_stitch),
]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS


@hookimpl
def tf2ir_op_prototypes():
    return list(sparse_ops.OPS)
