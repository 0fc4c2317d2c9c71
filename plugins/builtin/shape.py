"""Built-in mappings: shape, indexing and tensor-creation ops: slicing, gathering and scattering, tiling, filling, ranges, one-hot, space/batch/depth rearrangements."""

from tf2ir.plugins import DynamicInputOutputInfo, auto_mapping_dynamic, hookimpl, register_op
from tf2ir.opp import shape as shape_ops


def parse_out_type(src, op):
    """Size: TF's out_type is the IR op's output `dtype`."""
    op.set_attr("dtype", src.attr("out_type", "int32"))


def parse_shape_n(src, op):
    auto_mapping_dynamic(src, op, [DynamicInputOutputInfo("input", "x", "N"),
                                   DynamicInputOutputInfo("output", "y", "N")])
    op.set_attr("dtype", src.attr("out_type", "int32"))


def parse_concat_v1(src, op):
    """Concat (v1) takes the axis first; the IR ConcatV2 takes it last."""
    op.inputs = op.inputs[1:] + op.inputs[:1]
    auto_mapping_dynamic(src, op, [DynamicInputOutputInfo("input", "x", "N")])


def parse_unique(src, op):
    op.set_attr("out_idx", src.attr("out_idx", "int32"))


def parse_default_value(src, op):
    """PlaceholderWithDefault becomes its default value (an Identity of input 0): the converted
    model has no input for it. Its declared shape is dropped; the default's shape is exact."""


MAPPINGS = [
    register_op("Slice").origin_op_type("Slice"),
    register_op("Tile").origin_op_type("Tile"),
    register_op("Fill").origin_op_type("Fill"),
    register_op("Range").origin_op_type("Range"),
    register_op("LinSpace").origin_op_type("LinSpace"),
    register_op("Size").origin_op_type("Size").parse_params_fn(parse_out_type),
    register_op("Rank").origin_op_type("Rank"),
    register_op("ShapeN").origin_op_type("ShapeN").parse_params_fn(parse_shape_n),
    register_op("Where").origin_op_type("Where"),
    register_op("OneHot").origin_op_type("OneHot"),
    register_op("Unique").origin_op_type("Unique").parse_params_fn(parse_unique),
    register_op("InvertPermutation").origin_op_type("InvertPermutation"),
    register_op("ReverseV2").origin_op_type("ReverseV2"),
    register_op("ReverseSequence").origin_op_type("ReverseSequence"),
    register_op("BroadcastTo").origin_op_type("BroadcastTo"),
    register_op("GatherNd").origin_op_type("GatherNd"),
    register_op("ScatterNd").origin_op_type("ScatterNd"),
    register_op("TensorScatterUpdate").origin_op_type("TensorScatterUpdate"),
    register_op("TensorScatterAdd").origin_op_type("TensorScatterAdd"),
    register_op("ConcatV2").origin_op_type("Concat").parse_params_fn(parse_concat_v1),
    register_op("SpaceToBatchND").origin_op_type("SpaceToBatchND"),
    register_op("BatchToSpaceND").origin_op_type("BatchToSpaceND"),
    register_op("DepthToSpace").origin_op_type("DepthToSpace"),
    register_op("SpaceToDepth").origin_op_type("SpaceToDepth"),
    register_op("MatrixBandPart").origin_op_type("MatrixBandPart"),
    register_op("Identity").origin_op_type("PlaceholderWithDefault").parse_params_fn(parse_default_value),
]
# EnsureShape and CheckNumerics are passthroughs of the converter itself (parser/convert.py).


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS


@hookimpl
def tf2ir_op_prototypes():
    return list(shape_ops.OPS)
