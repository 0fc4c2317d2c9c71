"""Built-in mappings for TF's concatenation ops and their inverses: ConcatV2 and Concat (v1),
Pack, Unpack, Split and SplitV."""

from tf2ir.opp import concat as concat_ops
from tf2ir.plugins import DynamicInputOutputInfo, auto_mapping_dynamic, hookimpl, register_op


def dynamic(port_type, port, attr):
    """A parse fn for one dynamic port group counted by TF attribute `attr`."""
    def parse(src, op):
        auto_mapping_dynamic(src, op, [DynamicInputOutputInfo(port_type, port, attr)])
    return parse


def parse_concat_v1(src, op):
    """Concat (v1) takes the axis first; the IR ConcatV2 takes it last."""
    op.inputs = op.inputs[1:] + op.inputs[:1]
    auto_mapping_dynamic(src, op, [DynamicInputOutputInfo("input", "x", "N")])


MAPPINGS = [
    register_op("Pack").origin_op_type("Pack").parse_params_fn(dynamic("input", "x", "N")),
    register_op("ConcatV2").origin_op_type("ConcatV2").parse_params_fn(dynamic("input", "x", "N")),
    register_op("ConcatV2").origin_op_type("Concat").parse_params_fn(parse_concat_v1),
    register_op("Unpack").origin_op_type("Unpack").parse_params_fn(dynamic("output", "y", "num")),
    register_op("Split").origin_op_type("Split").parse_params_fn(dynamic("output", "y", "num_split")),
    register_op("SplitV").origin_op_type("SplitV").parse_params_fn(dynamic("output", "y", "num_split")),
]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS


@hookimpl
def tf2ir_op_prototypes():
    return list(concat_ops.OPS)
