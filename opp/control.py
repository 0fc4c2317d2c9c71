"""Composite ops: PartitionedCall, which owns a subgraph `f` (the one-to-many mapping of
the CANN guide), and Data, the subgraph's placeholder for one input of the call."""

from __future__ import annotations

from tf2ir.ir import ConversionError, TensorDesc, op_prototype

SUBGRAPH_KEY = "f"

partitioned_call = (
    op_prototype("PartitionedCall", "Runs subgraph `f`: Data node `index` i reads input i; "
                                    "the subgraph's outputs are the call's outputs.")
    .dynamic_input("args").dynamic_output("output")
    .attr("original_type", "str", doc="the origin op type this call stands for"))

data = (op_prototype("Data", "Input `index` of the PartitionedCall that owns this subgraph.")
        .output("y").attr("index", "int"))


def _copy(desc: TensorDesc) -> TensorDesc:
    return TensorDesc(desc.dtype, desc.shape, desc.format, desc.origin_format)


@partitioned_call.infer
def _infer_partitioned_call(node):
    from tf2ir.ir.verify import verify_graph
    body = node.subgraphs.get(SUBGRAPH_KEY)
    if body is None:
        raise ConversionError(f"PartitionedCall has no subgraph {SUBGRAPH_KEY!r}")
    for inner in body.nodes:
        if inner.op_type == "Data":
            index = inner.attrs.get("index")
            if not isinstance(index, int) or not 0 <= index < len(node.inputs):
                raise ConversionError(f"Data node '{inner.name}' has index {index!r}; "
                                      f"the call has {len(node.inputs)} inputs")
            inner.outputs[0].desc = _copy(node.inputs[index].desc)
    verify_graph(body)
    return [_copy(value.desc) for value in body.outputs]


data.infer(lambda node: [_copy(node.outputs[0].desc)])   # the owning call sets it


def _not_inlined(ctx, node):
    raise ConversionError(f"{node.op_type} must be inlined before lowering "
                          "(tf2ir.ir.passes.inline_subgraphs)")


partitioned_call.lower(_not_inlined)
data.lower(_not_inlined)
