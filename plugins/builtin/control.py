"""Built-in one-to-many mappings: a TF op becomes a PartitionedCall whose subgraph holds
the IR ops that compute it (the guide's AddN → a chain of Adds)."""

from tf2ir.ir import ConversionError
from tf2ir.plugins import hookimpl, register_op


def parse_params_add_n(src, op):
    """The call keeps AddN's N inputs and its one output; original_type names the origin op."""
    if len(op.inputs) != src.attr("N"):
        raise ConversionError(f"AddN has {len(op.inputs)} inputs but N={src.attr('N')}")
    op.num_outputs = 1
    op.set_attr("original_type", "AddN")


def parse_op_to_graph_add_n(src, graph):
    """x0 + x1 + ... + xN-1 as N-1 Adds over the Data nodes (N == 1: the input itself)."""
    total = graph.data(0)
    for index in range(1, len(graph.call.inputs)):
        total = graph.add_op("Add", [total, graph.data(index)], name=f"add{index - 1}").outputs[0]
    if total.producer.op_type == "Data":
        total = graph.add_op("Identity", [total], name="identity").outputs[0]
    graph.set_outputs([total])


MAPPINGS = [
    register_op("PartitionedCall").origin_op_type("AddN")
    .parse_params_fn(parse_params_add_n).parse_op_to_graph_fn(parse_op_to_graph_add_n),
]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS
