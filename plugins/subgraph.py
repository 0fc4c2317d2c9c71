"""One-to-many mapping: a plugin registered as `register_op("PartitionedCall")` with a
parse-op-to-graph fn builds the call's subgraph `f` through a `SubgraphBuilder`, as the
CANN guide's ParseOpToGraphFn does (AddN → a chain of Adds)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Optional, Sequence

import numpy as np

from tf2ir.ir import ConversionError, Graph, Node, TensorDesc, Value
from tf2ir.ir.prototype import prototypes_of
from tf2ir.ir.infer import infer_node
from tf2ir.plugins.mapping import IrOp
from tf2ir.plugins.tfnode import TfNode

if TYPE_CHECKING:
    from tf2ir.plugins.registry import OpRegistration

CALL_OP = "PartitionedCall"
SUBGRAPH_KEY = "f"


class SubgraphBuilder:
    """The graph a parse-op-to-graph fn fills: `data(i)` stands for input i of the original
    op, `add_op` adds IR ops (verified as they are added), `set_outputs` ends it."""

    def __init__(self, call: IrOp):
        self.call = call                  # the PartitionedCall IrOp, after parse-params
        self.graph = Graph(call.name, call.graph.prototypes)   # the mapped graph's table
        self._data: Dict[int, Value] = {}

    def data(self, index: int, name: Optional[str] = None) -> Value:
        """The output of the Data node for input `index` of the original op."""
        if index in self._data:
            return self._data[index]
        value = self.call.inputs[index] if 0 <= index < len(self.call.inputs) else None
        if value is None:
            raise ConversionError(f"Data index {index} is out of range: the call has "
                                  f"{len(self.call.inputs)} inputs")
        desc = value.desc
        node = self.graph.add_node("Data", [], {"index": index}, name or f"data_{index}",
                                   output_descs=[desc.copy()])
        self._data[index] = node.outputs[0]
        return node.outputs[0]

    def add_op(self, op_type: str, inputs: Sequence[Optional[Value]] = (),
               attrs: Optional[Dict[str, Any]] = None, name: Optional[str] = None,
               num_outputs: Optional[int] = None) -> Node:
        """Add IR op `op_type`; its output descs are inferred at once."""
        proto = prototypes_of(self.graph).find(op_type)
        if proto is None:
            raise ConversionError(f"IR op type {op_type} has no op prototype")
        if num_outputs is None:
            num_outputs = proto.default_output_count(attrs) or 1
        node = self.graph.add_node(op_type, inputs, attrs, name, num_outputs=num_outputs)
        infer_node(node)
        return node

    def const(self, array: Any, name: str = "Const") -> Value:
        return self.graph.add_const(np.asarray(array), name)

    def set_outputs(self, values: Sequence[Value]) -> "SubgraphBuilder":
        """The subgraph's outputs, in the order of the original op's outputs."""
        self.graph.outputs = list(values)
        return self


def parse_partitioned_call(src: TfNode, op: IrOp) -> None:
    """The default parse-params fn of a one-to-many mapping: the call keeps the original
    op's inputs, takes its output count from the subgraph, and records `original_type`."""
    op.set_attr("original_type", src.op_type)


def build_subgraph(reg: OpRegistration, src: TfNode, op: IrOp) -> Optional[Graph]:
    """Run `reg`'s parse-op-to-graph fn for TF node `src` whose call is IrOp `op`; None when
    `reg` maps one-to-one. Sets op.num_outputs from the subgraph when the plugin did not."""
    if reg.parse_op_to_graph_fn_ is None:
        return None
    if op.op_type != CALL_OP:
        raise ConversionError(f"a parse-op-to-graph mapping must register IR op {CALL_OP}, "
                              f"not {op.op_type}")
    op.attrs.setdefault("original_type", src.op_type)
    builder = SubgraphBuilder(op)
    reg.parse_op_to_graph_fn_(src, builder)
    graph = builder.graph
    if not graph.outputs:
        raise ConversionError("the parse-op-to-graph fn set no subgraph outputs "
                              "(call graph.set_outputs([...]))")
    if op.num_outputs is None:
        op.num_outputs = len(graph.outputs)
    elif op.num_outputs != len(graph.outputs):
        raise ConversionError(f"the call has {op.num_outputs} outputs, its subgraph "
                              f"{len(graph.outputs)}")
    return graph
