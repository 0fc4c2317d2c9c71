"""Inlining: each PartitionedCall is replaced by the nodes of its subgraph `f`."""

from __future__ import annotations

from typing import Dict, List, Optional

from tf2ir.ir.errors import ConversionError
from tf2ir.ir.graph import Graph, Node, Value

CALL_OP = "PartitionedCall"
DATA_OP = "Data"
SUBGRAPH_KEY = "f"


def inline_subgraphs(graph: Graph) -> Graph:
    """Replace every PartitionedCall of `graph` (nested ones too) by its body, in place.

    Body nodes are copied in at the call's position as '<call>/<node>' (made unique),
    each Data node reads the call's input `index`, and the values the body outputs take
    over the call's uses and names. Returns `graph`.
    """
    for node in list(graph.nodes):
        for sub in node.subgraphs.values():
            inline_subgraphs(sub)
        if node.op_type == CALL_OP:
            _inline_call(graph, node)
    return graph


def _inline_call(graph: Graph, call: Node) -> None:
    body = call.subgraphs.get(SUBGRAPH_KEY)
    if body is None:
        raise ConversionError(f"has no subgraph {SUBGRAPH_KEY!r} to inline",
                              node=call.name, op_type=call.op_type)
    if len(body.outputs) != len(call.outputs):
        raise ConversionError(f"its subgraph has {len(body.outputs)} outputs for "
                              f"{len(call.outputs)} call outputs", node=call.name, op_type=call.op_type)
    if not body.is_topologically_sorted():
        body.toposort()
    mapped: Dict[int, Value] = {}
    new_nodes: List[Node] = []
    for inner in body.nodes:
        if inner.op_type == DATA_OP:
            mapped[id(inner.outputs[0])] = _call_input(call, inner)
            continue
        # A body may read values of the enclosing graph directly: those stay as they are.
        inputs: List[Optional[Value]] = [None if v is None else mapped.get(id(v), v)
                                         for v in inner.inputs]
        with graph.inserting_before(call):      # keeps the topological order
            new = graph.add_node(inner.op_type, inputs, dict(inner.attrs),
                                 f"{call.name}/{inner.name}",
                                 output_names=[f"{call.name}/{v.name}" for v in inner.outputs],
                                 output_descs=[v.desc.copy() for v in inner.outputs])
        new_nodes.append(new)
        new.subgraphs = dict(inner.subgraphs)
        for sub in new.subgraphs.values():
            _remap_captures(sub, mapped)
        for old, value in zip(inner.outputs, new.outputs):
            mapped[id(old)] = value

    results = [mapped.get(id(v), v) for v in body.outputs]
    names = [v.name for v in call.outputs]
    output_slots = {i: call.outputs.index(v) for i, v in enumerate(graph.outputs)
                    if any(v is o for o in call.outputs)}
    for old, result in zip(call.outputs, results):
        if result.desc.format == "ND" and old.desc.format != "ND":
            # The plugin declared the call output's layout: the tensor that replaces it keeps it.
            result.desc.set_format(old.desc.format, old.desc.origin_format)
        graph.replace_all_uses_with(old, result)
    graph.erase_node(call)
    _keep_names(graph, results, names, output_slots, {id(n) for n in new_nodes})


def _remap_captures(sub: Graph, mapped: Dict[int, Value]) -> None:
    """A nested subgraph (an If branch, a loop body) that reads values of the inlined body
    directly reads their inlined copies instead."""
    for node in sub.nodes:
        for index, value in enumerate(node.inputs):
            if value is not None and id(value) in mapped:
                sub.set_input(node, index, mapped[id(value)])
        for inner in node.subgraphs.values():
            _remap_captures(inner, mapped)


def _call_input(call: Node, data: Node) -> Value:
    index = data.attrs.get("index")
    value = call.inputs[index] if isinstance(index, int) and 0 <= index < len(call.inputs) else None
    if value is None:
        raise ConversionError(f"Data node '{data.name}' has index {index!r}; the call has "
                              f"{len(call.inputs)} inputs", node=call.name, op_type=call.op_type)
    return value


def _keep_names(graph: Graph, results: List[Value], names: List[str],
                output_slots: Dict[int, int], inlined: set) -> None:
    """Give each result the call output's name; where a result is not the body's own
    (a call input passed through) or feeds two outputs, a graph output gets an Identity."""
    renamed = set()
    for value, name in zip(results, names):
        own = value.producer is not None and id(value.producer) in inlined
        if own and id(value) not in renamed and not graph.has_value(name):
            graph.rename_value(value, name)
            renamed.add(id(value))
    for slot, k in output_slots.items():
        value, name = results[k], names[k]
        if value.name != name:
            identity = graph.add_node("Identity", [value], name=name, output_names=[name],
                                      output_descs=[value.desc.copy()])
            graph.outputs[slot] = identity.outputs[0]
