"""Built-in mappings for TF's array ops: reshaping, squeezing, expanding, transposing, padding,
casts, identities and the shape queries."""

from tf2ir.opp import array as array_ops
from tf2ir.plugins import DynamicInputOutputInfo, auto_mapping_dynamic, hookimpl, register_op


def parse_squeeze(src, op):
    op.set_attr("axis", list(src.attr("squeeze_dims", [])))


def parse_shape(src, op):
    op.set_attr("dtype", src.attr("out_type", "int32"))


def parse_cast(src, op):
    op.set_attr("dst_type", src.attr("DstT"))


def parse_pad(src, op):
    """Pad, PadV2 (with constant_values) and MirrorPad (mode REFLECT/SYMMETRIC)."""
    if len(op.inputs) == 2:
        op.inputs.append(None)
    op.set_attr("mode", src.attr("mode", "CONSTANT"))


def parse_identity_n(src, op):
    """IdentityN has no count attribute: T lists one dtype per port, on both sides."""
    auto_mapping_dynamic(src, op, [DynamicInputOutputInfo("input", "x", "T", "N"),
                                   DynamicInputOutputInfo("output", "y", "T", "N")])


def parse_out_type(src, op):
    """Size: TF's out_type is the IR op's output `dtype`."""
    op.set_attr("dtype", src.attr("out_type", "int32"))


def parse_shape_n(src, op):
    auto_mapping_dynamic(src, op, [DynamicInputOutputInfo("input", "x", "N"),
                                   DynamicInputOutputInfo("output", "y", "N")])
    op.set_attr("dtype", src.attr("out_type", "int32"))


MAPPINGS = [
    register_op("Reshape").origin_op_type("Reshape"),
    register_op("Squeeze").origin_op_type("Squeeze").parse_params_fn(parse_squeeze),
    register_op("ExpandDims").origin_op_type("ExpandDims"),
    register_op("Shape").origin_op_type("Shape").parse_params_fn(parse_shape),
    register_op("Cast").origin_op_type("Cast").parse_params_fn(parse_cast),
    register_op("Transpose").origin_op_type("Transpose"),
    register_op("Pad").origin_op_type("Pad", "PadV2", "MirrorPad").parse_params_fn(parse_pad),
    register_op("IdentityN").origin_op_type("IdentityN").parse_params_fn(parse_identity_n),
    register_op("Size").origin_op_type("Size").parse_params_fn(parse_out_type),
    register_op("Rank").origin_op_type("Rank"),
    register_op("ShapeN").origin_op_type("ShapeN").parse_params_fn(parse_shape_n),
]
# EnsureShape and CheckNumerics are passthroughs of the converter itself (parser/convert.py).


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS


@hookimpl
def tf2ir_op_prototypes():
    return list(array_ops.OPS)
