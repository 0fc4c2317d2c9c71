"""Verification of a graph against op prototypes, and shape/dtype inference.

Each node is checked for its input and output counts (dynamic and optional ports
included), its attributes (names, types, defaults filled in) and its input dtypes; then
its prototype's inference sets the output dtypes and shapes. A violation names the node.
"""

from __future__ import annotations

import copy
from typing import Optional

from tf2ir.ir.errors import ConversionError
from tf2ir.ir.graph import Graph, Node
from tf2ir.ir.prototype import check_attr_value, get_prototype, has_prototype


def verify_node(node: Node, infer: bool = True) -> None:
    def fail(message: str) -> ConversionError:
        return ConversionError(message, node=node.name, op_type=node.op_type)

    if not has_prototype(node.op_type):
        raise fail(f"IR op type {node.op_type} has no op prototype")
    proto = get_prototype(node.op_type)
    if not proto.accepts_input_count(len(node.inputs), node.attrs):
        raise fail(f"has {len(node.inputs)} inputs; prototype expects "
                   f"{', '.join(p.name + ('?' if p.kind == 'optional' else '*' if p.kind == 'dynamic' else '') for p in proto.inputs) or 'none'}")
    if not proto.accepts_output_count(len(node.outputs), node.attrs):
        raise fail(f"has {len(node.outputs)} outputs; prototype expects {len(proto.outputs)}")
    for spec, value in zip(proto.input_spec(len(node.inputs), node.attrs), node.inputs):
        if value is None:
            if spec.kind != "optional":
                raise fail(f"required input '{spec.name}' is missing")
            continue
        if spec.dtypes and value.desc.dtype not in spec.dtypes:
            raise fail(f"input '{spec.name}' has dtype {value.desc.dtype}; "
                       f"allowed: {', '.join(spec.dtypes)}")
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
            raise fail(f"attribute '{name}': {exc}") from None
    if infer and proto.infer_fn is not None:
        try:
            descs = proto.infer_fn(node)
        except ConversionError as exc:
            raise exc.located(node=node.name, op_type=node.op_type)
        except (ValueError, TypeError, IndexError, KeyError) as exc:
            raise fail(f"shape inference failed: {exc}") from None
        if len(descs) != len(node.outputs):
            raise fail(f"inference gave {len(descs)} outputs for {len(node.outputs)}")
        for value, desc in zip(node.outputs, descs):
            value.desc.dtype = desc.dtype
            value.desc.shape = desc.shape
            if desc.format != "ND":
                value.desc.format, value.desc.origin_format = desc.format, desc.origin_format
    for sub in node.subgraphs.values():
        verify_graph(sub, infer=infer)


def verify_graph(graph: Graph, infer: bool = True, model: Optional[str] = None) -> Graph:
    """Check every node against its prototype in topological order; infer output descs."""
    if not graph.is_topologically_sorted():
        graph.toposort()
    try:
        for node in graph.nodes:
            verify_node(node, infer)
        for value in graph.outputs:
            if value is None:
                raise ConversionError(f"graph {graph.name!r} has a missing output")
    except ConversionError as exc:
        raise exc.located(model=model)
    return graph
