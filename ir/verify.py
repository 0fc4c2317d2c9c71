"""Verification of a graph against its op prototypes: checks only, nothing is changed.

`check_graph` is what `--check-passes` runs after every pass and what a saved IR is held
to: nodes in topological order, each node's port counts, input dtypes and attributes as its
prototype declares them, subgraphs too. A violation is a ConversionError naming the node.
Completing a graph (defaults, inferred shapes) is `tf2ir.ir.infer`.
"""

from __future__ import annotations

from typing import Optional

from tf2ir.ir.errors import ConversionError
from tf2ir.ir.graph import Graph, Node
from tf2ir.ir.prototype import OpPrototype, check_attr_value, prototypes_of


def _port_list(specs) -> str:
    marks = {"optional": "?", "dynamic": "*"}
    return ", ".join(p.name + marks.get(p.kind, "") for p in specs) or "none"


def check_ports(node: Node) -> OpPrototype:
    """The node's op has a prototype (in its graph's table), and its inputs and outputs fit
    it (counts, required inputs present, input dtypes allowed); returns the prototype."""
    def fail(message: str) -> ConversionError:
        return ConversionError(message, node=node.name, op_type=node.op_type)

    proto = prototypes_of(node.graph).find(node.op_type)
    if proto is None:
        raise fail(f"IR op type {node.op_type} has no op prototype")
    if not proto.accepts_input_count(len(node.inputs), node.attrs):
        raise fail(f"has {len(node.inputs)} inputs; prototype expects {_port_list(proto.inputs)}")
    if not proto.accepts_output_count(len(node.outputs), node.attrs):
        raise fail(f"has {len(node.outputs)} outputs; prototype expects "
                   f"{_port_list(proto.outputs)}")
    for spec, value in zip(proto.input_spec(len(node.inputs), node.attrs), node.inputs):
        if value is None:
            if spec.kind != "optional":
                raise fail(f"required input '{spec.name}' is missing")
            continue
        if spec.dtypes and value.desc.dtype not in spec.dtypes:
            raise fail(f"input '{spec.name}' has dtype {value.desc.dtype}; "
                       f"allowed: {', '.join(spec.dtypes)}")
    return proto


def check_node(node: Node) -> None:
    """`check_ports`, and every declared attribute present (or defaulted) with a value of
    its declared type; subgraphs are checked too."""
    proto = check_ports(node)
    for name, spec in proto.attrs.items():
        if name not in node.attrs:
            if spec.required:
                raise ConversionError(f"required attribute '{name}' ({spec.type}) is missing",
                                      node=node.name, op_type=node.op_type)
            continue
        if node.attrs[name] is None and spec.default is None:
            continue
        try:
            check_attr_value(spec.type, node.attrs[name])
        except TypeError as exc:
            raise ConversionError(f"attribute '{name}': {exc}", node=node.name,
                                  op_type=node.op_type) from exc
    for sub in node.subgraphs.values():
        check_graph(sub)


def check_graph(graph: Graph, model: Optional[str] = None) -> None:
    """Check every node of `graph` (see the module docstring); raise on the first violation."""
    try:
        if not graph.is_topologically_sorted():
            raise ConversionError(f"graph {graph.name!r} is not in topological order")
        for node in graph.nodes:
            check_node(node)
        if any(value is None for value in graph.outputs):
            raise ConversionError(f"graph {graph.name!r} has a missing output")
    except ConversionError as exc:
        raise exc.located(model=model)
