"""Built-in mapping for TF's PlaceholderWithDefault: a model input that takes its default when
it is not fed (an ONNX graph input with an initializer of the same name)."""

from tf2ir.opp import inputs as inputs_ops
from tf2ir.plugins import hookimpl, register_op


def parse_placeholder_with_default(src, op):
    """The declared shape (None: unknown rank) is what a fed value may have; the default is
    input 0."""
    op.set_attr("shape", src.attr("shape"))


MAPPINGS = [
    register_op("PlaceholderWithDefault").origin_op_type("PlaceholderWithDefault")
    .parse_params_fn(parse_placeholder_with_default),
]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS


@hookimpl
def tf2ir_op_prototypes():
    return list(inputs_ops.OPS)
