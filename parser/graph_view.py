"""A view of a TF GraphDef: nodes by name, data and control inputs, attributes decoded
on demand. Plugins receive a `TfNode` as their `src`."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from tf2ir.ir import ConversionError
from tf2ir.parser.attrs import decode_attr


def graph_def_class():
    """The GraphDef message class: the compiled protos TensorBoard ships (TF's wire format,
    no TensorFlow import)."""
    from tensorboard.compat.proto import graph_pb2
    return graph_pb2.GraphDef


def split_tensor_name(name: str) -> Tuple[str, int]:
    """'node:1' → ('node', 1); 'node' → ('node', 0)."""
    node, sep, port = name.rpartition(":")
    if sep and port.isdigit():
        return node, int(port)
    return name, 0


class TfNode:
    """One NodeDef: name, op type, data inputs (as (node, port)), control inputs, attrs."""

    __slots__ = ("name", "op_type", "inputs", "control_inputs", "device", "_def", "_attrs", "_kinds")

    def __init__(self, node_def):
        self._def = node_def
        self.name: str = node_def.name
        self.op_type: str = node_def.op
        self.device: str = node_def.device
        self.inputs: List[Tuple[str, int]] = []
        self.control_inputs: List[str] = []
        for text in node_def.input:
            if text.startswith("^"):
                self.control_inputs.append(text[1:])
            else:
                self.inputs.append(split_tensor_name(text))
        self._attrs: Optional[Dict[str, Any]] = None
        self._kinds: Dict[str, str] = {}

    @property
    def attrs(self) -> Dict[str, Any]:
        """All attributes, decoded (TF strings as str, dtypes as IR dtype names)."""
        if self._attrs is None:
            attrs = {}
            for key in sorted(self._def.attr):
                try:
                    self._kinds[key], attrs[key] = decode_attr(self._def.attr[key])
                except ConversionError as exc:
                    raise exc.located(node=self.name, op_type=self.op_type)
            self._attrs = attrs
        return self._attrs

    def attr(self, name: str, default: Any = None) -> Any:
        return self.attrs.get(name, default)

    def attr_type(self, name: str) -> Optional[str]:
        """The TF kind of attribute `name`: int, float, bool, string, type, shape, tensor, list_*."""
        self.attrs
        return self._kinds.get(name)

    def has_attr(self, name: str) -> bool:
        return name in self._def.attr

    def __repr__(self) -> str:
        return f"<TfNode {self.op_type} '{self.name}'>"


class TfGraph:
    """Nodes of a GraphDef by name, in file order, plus the function library."""

    def __init__(self, graph_def, model: str = "<graph>"):
        self.model = model
        self.nodes: Dict[str, TfNode] = {}
        for node_def in graph_def.node:
            if not node_def.name or not node_def.op:
                raise ConversionError("not a TensorFlow GraphDef: a node has no name or op type",
                                      model=model)
            if node_def.name in self.nodes:
                raise ConversionError("duplicate node name", model=model, node=node_def.name)
            self.nodes[node_def.name] = TfNode(node_def)
        for node in self.nodes.values():
            for src, _ in node.inputs:
                if src not in self.nodes:
                    raise ConversionError(f"input '{src}' does not exist in the graph",
                                          model=model, node=node.name, op_type=node.op_type)
        self.library = graph_def.library

    def __getitem__(self, name: str) -> TfNode:
        return self.nodes[name]

    def __contains__(self, name: str) -> bool:
        return name in self.nodes

    def consumers_count(self) -> Dict[str, int]:
        counts = {name: 0 for name in self.nodes}
        for node in self.nodes.values():
            for src, _ in node.inputs:
                counts[src] += 1
            for src in node.control_inputs:
                if src in counts:
                    counts[src] += 1
        return counts

    def sinks(self) -> List[str]:
        """Nodes nothing consumes (data or control), except NoOps: the default outputs."""
        counts = self.consumers_count()
        return [name for name, n in counts.items()
                if n == 0 and self.nodes[name].op_type not in ("NoOp", "Assert", "SaveV2", "RestoreV2")]

    def upstream(self, roots: List[str]) -> List[str]:
        """Names of the nodes the roots need through data inputs, in a topological order."""
        import networkx as nx
        needed, stack = set(), list(roots)
        while stack:
            name = stack.pop()
            if name in needed:
                continue
            needed.add(name)
            stack.extend(src for src, _ in self.nodes[name].inputs)
        dag = nx.DiGraph()
        order = {name: i for i, name in enumerate(self.nodes)}
        dag.add_nodes_from(needed)
        for name in needed:
            for src, _ in self.nodes[name].inputs:
                dag.add_edge(src, name)
        try:
            return list(nx.lexicographical_topological_sort(dag, key=order.__getitem__))
        except nx.NetworkXUnfeasible:
            cycle = nx.find_cycle(dag)
            raise ConversionError(
                f"the graph has a cycle through '{cycle[0][0]}' (TF1 control flow loops are "
                "not supported)", model=self.model, node=cycle[0][0],
                op_type=self.nodes[cycle[0][0]].op_type) from None
