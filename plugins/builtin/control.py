"""Built-in one-to-many mappings (a TF op becomes a PartitionedCall whose subgraph holds the
IR ops that compute it: the guide's AddN → a chain of Adds) and TF2 functional control flow:
If/StatelessIf → If and While/StatelessWhile → While, whose branches, cond and body are
library functions converted through the same plugins into subgraphs."""

from typing import Sequence

from tf2ir.ir import ConversionError, Graph, TensorDesc
from tf2ir.ir.tensor import is_list_dtype
from tf2ir.plugins import FunctionalTfNode, IrOp, SubgraphBuilder, TfNode, hookimpl, register_op
from tf2ir.opp import control as control_ops


def parse_params_add_n(src: TfNode, op: IrOp) -> None:
    """The call keeps AddN's N inputs and its one output; original_type names the origin op."""
    if len(op.inputs) != src.attr("N"):
        raise ConversionError(f"AddN has {len(op.inputs)} inputs but N={src.attr('N')}")
    op.num_outputs = 1
    op.set_attr("original_type", "AddN")


def parse_op_to_graph_add_n(src: TfNode, graph: SubgraphBuilder) -> None:
    """x0 + x1 + ... + xN-1 as N-1 Adds over the Data nodes (N == 1: the input itself)."""
    total = graph.data(0)
    for index in range(1, len(graph.call.inputs)):
        total = graph.add_op("Add", [total, graph.data(index)], name=f"add{index - 1}").outputs[0]
    if total.producer is not None and total.producer.op_type == "Data":
        total = graph.add_op("Identity", [total], name="identity").outputs[0]
    graph.set_outputs([total])


def _function_graph(src: TfNode, attr: str, descs: Sequence[TensorDesc]) -> Graph:
    """The IR graph of the library function that attribute `attr` of `src` names, with
    inputs of these descs (the parser hands over a FunctionalTfNode)."""
    if not isinstance(src, FunctionalTfNode):
        raise ConversionError(f"{src.op_type} needs the GraphDef's function library to convert "
                              f"its function attribute '{attr}' (tf2ir.parser.functions."
                              "inline_functions attaches it)")
    return src.convert_function(attr, descs)


def _output_count(src: TfNode, attr: str) -> int:
    types = src.attr(attr)
    if not isinstance(types, list):
        raise ConversionError(f"attribute '{attr}' is missing")
    return len(types)


def parse_params_if(src: TfNode, op: IrOp) -> None:
    """input 0 is the condition, the rest are the branches' arguments."""
    if not op.inputs:
        raise ConversionError(f"{src.op_type} has no condition input")
    descs = [op.input_desc(i) for i in range(1, len(op.inputs))]
    op.num_outputs = _output_count(src, "Tout")
    for key in ("then_branch", "else_branch"):
        op.set_attr(key, _function_graph(src, key, descs))   # a Graph: becomes a subgraph


def parse_params_while(src: TfNode, op: IrOp) -> None:
    """The loop variables are the inputs; cond and body are converted with the loop
    variables' descs relaxed to TF's `output_shapes` (the shape invariants)."""
    from tf2ir.opp.control import merge_descs
    op.num_outputs = _output_count(src, "T")
    descs = [op.input_desc(i) for i in range(len(op.inputs))]
    shapes = src.attr("output_shapes")
    if isinstance(shapes, list) and len(shapes) == len(descs):
        # A list's TF shape is its handle's (a scalar), not its elements': kept as it is.
        descs = [d if is_list_dtype(d.dtype)
                 else merge_descs(d, TensorDesc(d.dtype, s, d.format, d.origin_format))
                 for d, s in zip(descs, shapes)]
    for key in ("cond", "body"):
        op.set_attr(key, _function_graph(src, key, descs))


MAPPINGS = [
    register_op("PartitionedCall").origin_op_type("AddN")
    .parse_params_fn(parse_params_add_n).parse_op_to_graph_fn(parse_op_to_graph_add_n),
    register_op("If").origin_op_type("If", "StatelessIf").parse_params_fn(parse_params_if),
    register_op("While").origin_op_type("While", "StatelessWhile")
    .parse_params_fn(parse_params_while),
]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS


@hookimpl
def tf2ir_op_prototypes():
    return list(control_ops.OPS)
