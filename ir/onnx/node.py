"""The nodes of the lowered ONNX graph (`OnnxNode`: op type, domain, name, input and output
names as tuples, attributes as Python values; a NodeProto only when the model is written) and
the error a rewrite that would break the graph raises."""

from __future__ import annotations

from typing import (TYPE_CHECKING, Any, Callable, Dict, Iterable, Iterator, List, Optional,
                    Sequence, Set, Tuple, Union)

import onnx
from onnx import helper

if TYPE_CHECKING:
    from tf2ir.ir.onnx.graph import OnnxGraph

STANDARD = ("", "ai.onnx")
SUBGRAPH_OPS = frozenset({"If", "Loop", "Scan", "SequenceMap"})


class GraphInvariantError(AssertionError):
    """A rewrite that would leave the graph out of order, dangling or ambiguous: a defect of
    the pass that tried it (never a user error)."""


class OnnxNode:
    """One ONNX node of an `OnnxGraph`. Read its fields; change them through the graph's verbs
    (`set_input`, `set_op`, `set_attr`, ...), which keep the use lists and the order true."""

    __slots__ = ("op_type", "domain", "name", "input", "output", "attrs", "graph",
                 "_prev", "_next", "_order")

    def __init__(self, op_type: str, inputs: Sequence[str], outputs: Sequence[str], name: str,
                 domain: str = "", attrs: Optional[Dict[str, Any]] = None):
        self.op_type = op_type
        self.domain = domain or ""
        self.name = name
        self.input: Tuple[str, ...] = tuple(inputs)
        self.output: Tuple[str, ...] = tuple(outputs)
        self.attrs: Dict[str, Any] = dict(attrs or {})
        self.graph: Optional["OnnxGraph"] = None
        self._prev: Optional["OnnxNode"] = None
        self._next: Optional["OnnxNode"] = None
        self._order = 0

    @property
    def standard(self) -> bool:
        """Whether the node is in ONNX's default domain."""
        return self.domain in STANDARD

    def attr(self, name: str, default: Any = None) -> Any:
        """An attribute's Python value (a GraphProto for a subgraph), or `default`."""
        value = self.attrs.get(name, default)
        if isinstance(value, onnx.AttributeProto):
            return helper.get_attribute_value(value)
        return value

    @property
    def subgraphs(self) -> List[onnx.GraphProto]:
        """The graphs the node's attributes hold (If branches, Loop bodies)."""
        if not self.attrs or (self.domain in STANDARD and self.op_type not in SUBGRAPH_OPS):
            return []
        graphs: List[onnx.GraphProto] = []
        for value in self.attrs.values():
            value = helper.get_attribute_value(value) \
                if isinstance(value, onnx.AttributeProto) else value
            if isinstance(value, onnx.GraphProto):
                graphs.append(value)
            elif isinstance(value, (list, tuple)) and value \
                    and all(isinstance(v, onnx.GraphProto) for v in value):
                graphs.extend(value)
        return graphs

    def to_proto(self) -> onnx.NodeProto:
        proto = onnx.NodeProto(op_type=self.op_type, input=self.input, output=self.output,
                               name=self.name)
        if self.domain:
            proto.domain = self.domain
        for key, value in sorted(self.attrs.items()):
            if isinstance(value, onnx.AttributeProto):
                proto.attribute.append(value)
            elif value is not None:
                proto.attribute.append(helper.make_attribute(key, value))
        return proto

    @classmethod
    def from_proto(cls, proto: onnx.NodeProto) -> "OnnxNode":
        """A node holding `proto`'s fields (attributes kept as AttributeProtos, decoded when
        read, so a foreign model's attributes are written back exactly)."""
        return cls(proto.op_type, proto.input, proto.output, proto.name, proto.domain,
                   {a.name: a for a in proto.attribute})

    def __repr__(self) -> str:
        return f"<OnnxNode {self.op_type} {self.name!r}>"


def walk_protos(nodes: Iterable[onnx.NodeProto]) -> Iterator[onnx.NodeProto]:
    """`nodes` and the nodes of the graphs their attributes hold (If branches, Loop and Scan
    bodies), depth first: the one walk over ONNX subgraphs."""
    for node in nodes:
        yield node
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                yield from walk_protos(attr.g.node)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for sub in attr.graphs:
                    yield from walk_protos(sub.node)


def read_names(nodes: Iterable[onnx.NodeProto]) -> Set[str]:
    """The names `nodes` (and the nodes of their subgraphs) read."""
    return {name for node in walk_protos(nodes) for name in node.input}


def graph_reads(graph: onnx.GraphProto) -> Set[str]:
    """The names the nodes of `graph` (and of its own subgraphs) read."""
    return read_names(graph.node)


class OpEmitter:
    """`ctx.op.<OnnxOp>(*inputs, out=None, outputs=None, domain="", **attrs)` (see
    `LowerContext.op`); opp's Emitter adds a working dtype and its constants."""

    __slots__ = ("ctx",)

    def __init__(self, ctx: Any):
        self.ctx = ctx

    def __getattr__(self, onnx_op: str) -> Callable[..., Any]:
        if onnx_op.startswith("__"):
            raise AttributeError(onnx_op)
        emit = self.ctx.emit

        def write(*inputs: str, out: Optional[str] = None,
                  outputs: Union[None, int, Sequence[str]] = None, domain: str = "", **attrs):
            if outputs is None:
                return emit(onnx_op, inputs, [out] if out else 1, domain, **attrs)[0]
            if out is not None:
                raise TypeError(f"ctx.op.{onnx_op}: give out= or outputs=, not both")
            return emit(onnx_op, inputs, outputs, domain, **attrs)
        return write
