"""Built-in mapping of the fallback delegate's TFSubgraph nodes (parser/fallback.py cuts
them when `--fallback tf` is given): the node types the segment by the descs of its inputs
(TensorFlow's shape inference gives the descs of its outputs)."""

import base64

from tf2ir.ir import ConversionError
from tf2ir.opp import fallback as fallback_ops
from tf2ir.plugins import hookimpl, register_op


def parse_tf_subgraph(src, op) -> None:
    """The segment typed by its inputs' descs: TF's dtypes and shapes of its outputs."""
    typed = getattr(src, "typed", None)
    if typed is None:
        raise ConversionError("a TFSubgraph node comes from the fallback delegate "
                              "(--fallback tf) only")
    graph_def, dtypes, shapes = typed([op.input_desc(i) for i in range(len(op.inputs))])
    op.num_outputs = len(src.output_names)
    op.set_attr("graph_def", base64.b64encode(graph_def).decode("ascii"))
    op.set_attr("input_names", list(src.input_names))
    op.set_attr("output_names", list(src.output_names))
    op.set_attr("output_dtypes", dtypes)
    op.set_attr("output_shapes", shapes)
    op.set_attr("op_types", list(src.op_types))


MAPPINGS = [register_op("TFSubgraph").origin_op_type("TFSubgraph")
            .parse_params_fn(parse_tf_subgraph)]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS


@hookimpl
def tf2ir_op_prototypes():
    return list(fallback_ops.OPS)
