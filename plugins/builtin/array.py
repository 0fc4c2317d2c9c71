"""Built-in mappings for TF's array ops (reshape, slice, pad, pack, concat, cast, shape)."""

from tf2ir.opp import array as array_ops
from tf2ir.plugins import (
    DynamicInputOutputInfo, auto_mapping, auto_mapping_dynamic, hookimpl, register_op,
)


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


def dynamic(port_type, port, attr):
    """A parse fn for one dynamic port group counted by TF attribute `attr`."""
    def parse(src, op):
        auto_mapping_dynamic(src, op, [DynamicInputOutputInfo(port_type, port, attr)])
    return parse


def parse_identity_n(src, op):
    """IdentityN has no count attribute: T lists one dtype per port, on both sides."""
    auto_mapping_dynamic(src, op, [DynamicInputOutputInfo("input", "x", "T", "N"),
                                   DynamicInputOutputInfo("output", "y", "T", "N")])


MAPPINGS = [
    register_op("Reshape").origin_op_type("Reshape"),
    register_op("Squeeze").origin_op_type("Squeeze").parse_params_fn(parse_squeeze),
    register_op("ExpandDims").origin_op_type("ExpandDims"),
    register_op("Shape").origin_op_type("Shape").parse_params_fn(parse_shape),
    register_op("Cast").origin_op_type("Cast").parse_params_fn(parse_cast),
    register_op("Transpose").origin_op_type("Transpose"),
    register_op("Pad").origin_op_type("Pad", "PadV2", "MirrorPad").parse_params_fn(parse_pad),
    register_op("Pack").origin_op_type("Pack").parse_params_fn(dynamic("input", "x", "N")),
    register_op("ConcatV2").origin_op_type("ConcatV2").parse_params_fn(dynamic("input", "x", "N")),
    register_op("Unpack").origin_op_type("Unpack").parse_params_fn(dynamic("output", "y", "num")),
    register_op("Split").origin_op_type("Split").parse_params_fn(dynamic("output", "y", "num_split")),
    register_op("SplitV").origin_op_type("SplitV").parse_params_fn(dynamic("output", "y", "num_split")),
    register_op("IdentityN").origin_op_type("IdentityN").parse_params_fn(parse_identity_n),
    register_op("StridedSlice").origin_op_type("StridedSlice"),
    register_op("GatherV2").origin_op_type("GatherV2"),
]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS


@hookimpl
def tf2ir_op_prototypes():
    return list(array_ops.OPS)
