"""Completing a graph against its op prototypes: attribute defaults filled in, values
normalised to their declared types, output dtypes and shapes inferred (this mutates; the
checks alone, which do not, are `tf2ir.ir.verify`).

Each node is first checked (input and output counts, dynamic and optional ports included,
input dtypes); then its attributes are completed and its prototype's inference sets the
output descs. A violation names the node.
"""

from __future__ import annotations

import copy
from typing import Optional

from tf2ir.ir.errors import ConversionError
from tf2ir.ir.graph import Graph, Node
from tf2ir.ir.prototype import check_attr_value
from tf2ir.ir.verify import check_ports


def infer_node(node: Node, infer: bool = True) -> None:
    def fail(message: str) -> ConversionError:
        return ConversionError(message, node=node.name, op_type=node.op_type)

    proto = check_ports(node)
    for name, spec in proto.attrs.items():
        if name not in node.attrs:
            if spec.required:
                raise fail(f"required attribute '{name}' ({spec.type}) is missing")
            node.attrs[name] = copy.deepcopy(spec.default)  # never share the prototype's list
            continue
        if node.attrs[name] is None and spec.default is None:
            continue
        try:
            node.attrs[name] = check_attr_value(spec.type, node.attrs[name])
        except TypeError as exc:
            raise fail(f"attribute '{name}': {exc}") from exc
    if infer and proto.infer_fn is not None:
        with proto.calling("shape inference", node):   # plugin code: errors name it
            descs = proto.infer_fn(node)
        if len(descs) != len(node.outputs):
            raise fail(f"inference gave {len(descs)} outputs for {len(node.outputs)}")
        for value, desc in zip(node.outputs, descs):
            value.desc.dtype = desc.dtype
            value.desc.shape = desc.shape
            if desc.format != "ND":
                value.desc.format, value.desc.origin_format = desc.format, desc.origin_format
    for sub in node.subgraphs.values():
        infer_graph(sub, infer=infer)


def infer_graph(graph: Graph, infer: bool = True, model: Optional[str] = None) -> Graph:
    """Check every node against its prototype in topological order; infer output descs."""
    if not graph.is_topologically_sorted():
        graph.toposort()
    try:
        for node in graph.nodes:
            infer_node(node, infer)
        for value in graph.outputs:
            if value is None:
                raise ConversionError(f"graph {graph.name!r} has a missing output")
    except ConversionError as exc:
        raise exc.located(model=model)
    return graph
