"""Built-in mappings for TF's indexing ops: gathering and scattering by index (GatherV2,
GatherNd, ScatterNd, TensorScatterUpdate/Add) and computing indices (Where, OneHot, Unique,
InvertPermutation)."""

from tf2ir.opp import indexing as indexing_ops
from tf2ir.plugins import hookimpl, register_op


def parse_unique(src, op):
    op.set_attr("out_idx", src.attr("out_idx", "int32"))


MAPPINGS = [
    register_op("GatherV2").origin_op_type("GatherV2"),
    register_op("GatherNd").origin_op_type("GatherNd"),
    register_op("ScatterNd").origin_op_type("ScatterNd"),
    register_op("TensorScatterUpdate").origin_op_type("TensorScatterUpdate"),
    register_op("TensorScatterAdd").origin_op_type("TensorScatterAdd"),
    register_op("Where").origin_op_type("Where"),
    register_op("OneHot").origin_op_type("OneHot"),
    register_op("Unique").origin_op_type("Unique").parse_params_fn(parse_unique),
    register_op("InvertPermutation").origin_op_type("InvertPermutation"),
]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS


@hookimpl
def tf2ir_op_prototypes():
    return list(indexing_ops.OPS)
