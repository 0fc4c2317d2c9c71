"""The TensorFlow fallback delegate (`--fallback tf`): the nodes no plugin maps are cut into
segments that TensorFlow runs, in the manner of MindSpore Lite's Delegate.

Walking the kept nodes in topological order, every unmapped node joins the segment of one
of its unmapped producers, or starts a new one. Contracting a segment into one node must not
make a cycle: a node never joins a segment that reaches it through a node outside that
segment, so a run that would close a cycle is split. Each segment becomes one
`FallbackNode` of op type TFSubgraph, whose inputs are the tensors the segment reads from
outside and whose outputs are the tensors the rest of the graph (or the model's outputs)
read; it carries the segment's GraphDef, with a Placeholder per input. The TFSubgraph
plugin (plugins/builtin/fallback.py) types it by running TF's shape inference, and the
runtime entry runs it with TensorFlow.

A segment holds only op types that compute (ir/onnx/trust.py, the list the runtime entry
checks again before TensorFlow runs a segment): a model whose unmapped nodes include one
that reads or writes files, runs Python or keeps state (WriteFile, PyFunc, VarHandleOp) is
refused with every such op type named, exit 3, before TensorFlow sees any of it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Dict, List, Sequence, Set, Tuple

from tf2ir.ir.errors import ConversionError, ExitStatus
from tf2ir.ir.names import fresh_name
from tf2ir.ir.onnx import trust
from tf2ir.ir.tensor import TensorDesc
from tf2ir.parser.attrs import TF_DTYPES
from tf2ir.parser.graph_view import TfGraph, TfNode

FALLBACK_OP = "TFSubgraph"
Tensor = Tuple[str, int]
_ENUMS = {name: enum for enum, name in TF_DTYPES.items()}


@dataclass
class Segment:
    """One run of unmapped nodes: its nodes (topological), what it reads and gives."""

    nodes: List[str]
    inputs: List[Tensor] = field(default_factory=list)
    outputs: List[Tensor] = field(default_factory=list)
    name: str = ""

    op_type_of: Dict[str, str] = field(default_factory=dict)   # node → its TF op type

    def op_types_counts(self) -> Dict[str, int]:
        counts: Dict[str, int] = {}
        for op in self.op_type_of.values():
            counts[op] = counts.get(op, 0) + 1
        return counts


class FallbackNode(TfNode):
    """The TFSubgraph node that stands for a segment: `graph_def` holds the segment's nodes
    (reading Placeholders `input_names`, one per input), `output_names` its outputs."""

    __slots__ = ("graph_def", "input_names", "output_names", "op_types")

    def typed(self, input_descs: Sequence[TensorDesc]) -> Tuple[bytes, List[str], list]:
        """The segment's GraphDef with its Placeholders typed by `input_descs`, and the
        dtypes and static shapes TensorFlow infers for its outputs."""
        from tf2ir.parser.frozen import import_tensorflow
        by_name = {n.name: n for n in self.graph_def.node}
        for name, desc in zip(self.input_names, input_descs):
            placeholder = by_name[name]
            if desc.dtype not in _ENUMS:
                raise ConversionError(f"a fallback segment cannot take a {desc.dtype} input")
            placeholder.attr["dtype"].type = _ENUMS[desc.dtype]
            shape = placeholder.attr["shape"].shape
            del shape.dim[:]
            shape.unknown_rank = desc.shape is None
            for dim in desc.shape or ():
                shape.dim.add().size = -1 if dim is None else dim
        data = self.graph_def.SerializeToString()
        tf = import_tensorflow()
        graph = tf.Graph()
        try:
            with graph.as_default():
                tf.compat.v1.import_graph_def(tf.compat.v1.GraphDef.FromString(data), name="")
            tensors = [graph.get_tensor_by_name(name) for name in self.output_names]
        except Exception as exc:
            first = (str(exc).strip().splitlines() or [""])[0]
            raise ConversionError(f"TensorFlow cannot import the fallback segment: "
                                  f"{type(exc).__name__}: {first}") from None
        dtypes = [TF_DTYPES.get(t.dtype.as_datatype_enum, str(t.dtype.name)) for t in tensors]
        shapes = [None if t.shape.rank is None else tuple(t.shape.as_list()) for t in tensors]
        return data, dtypes, shapes


def find_segments(tf_graph: TfGraph, kept: List[str], outputs: List[Tensor],
                  supported: Callable[[TfNode], bool]) -> List[Segment]:
    """The segments of the unmapped nodes among `kept` (topological order)."""
    segment_of: Dict[str, int] = {}
    reached: Dict[str, Set[int]] = {}   # segments that reach a node through an outside node
    segments: List[Segment] = []
    for name in kept:
        node = tf_graph.nodes[name]
        preds = [src for src, _ in node.inputs]
        blocked = set().union(*(reached[p] for p in preds)) if preds else set()
        if not supported(node):
            choice = next((segment_of[p] for p in preds if p in segment_of
                           and segment_of[p] not in blocked), None)
            if choice is None:
                choice = len(segments)
                segments.append(Segment([]))
            segment_of[name] = choice
            segments[choice].nodes.append(name)
            segments[choice].op_type_of[name] = node.op_type
        own = segment_of.get(name)
        reached[name] = blocked | {segment_of[p] for p in preds
                                   if p in segment_of and segment_of[p] != own}
    wanted = set(outputs)
    for segment in segments:
        members = set(segment.nodes)
        for name in segment.nodes:
            for tensor in tf_graph.nodes[name].inputs:
                if tensor[0] not in members and tensor not in segment.inputs:
                    segment.inputs.append(tensor)
        read = [t for n in kept if n not in members for t in tf_graph.nodes[n].inputs]
        for tensor in read + [t for t in outputs if t in wanted]:
            if tensor[0] in members and tensor not in segment.outputs:
                segment.outputs.append(tensor)
    return segments


def cut_segments(tf_graph: TfGraph, kept: List[str], outputs: List[Tensor],
                 supported: Callable[[TfNode], bool]
                 ) -> Tuple[List[str], List[Tensor], List[Segment]]:
    """Replace each segment of `tf_graph` by a FallbackNode; the new kept order, the output
    tensors (those a segment gave now read its node) and the segments."""
    segments = find_segments(tf_graph, kept, outputs, supported)
    if not segments:
        return kept, outputs, []
    moved: Dict[Tensor, Tensor] = {}
    first: Dict[str, FallbackNode] = {}
    built = []
    for segment in segments:
        segment.name = fresh_name(f"{segment.nodes[0]}/{FALLBACK_OP}", tf_graph.nodes)
        built.append(_fallback_node(tf_graph, segment))
    _refuse_untrusted(tf_graph, built)
    for segment, node in zip(segments, built):
        tf_graph.nodes[segment.name] = node
        first[segment.nodes[0]] = node
        moved.update({t: (segment.name, i) for i, t in enumerate(segment.outputs)})
    members = {n for s in segments for n in s.nodes}
    order: List[str] = []
    for name in kept:
        if name in first:
            order.append(first[name].name)
        if name not in members:
            order.append(name)
    for name in order:   # consumers (segments included) read the segments' nodes
        node = tf_graph.nodes[name]
        node.inputs = [moved.get(t, t) for t in node.inputs]
        node.control_inputs = [c for c in node.control_inputs if c not in members]
    for name in members:
        del tf_graph.nodes[name]
    return _topological(tf_graph, order), [moved.get(t, t) for t in outputs], segments


def _refuse_untrusted(tf_graph: TfGraph, nodes: List[FallbackNode]) -> None:
    """Every node a segment may not run (ir/onnx/trust.py), in one error: the op types with
    a count, an example node and the reason each."""
    found: Dict[str, List[trust.Refusal]] = {}
    for node in nodes:
        for refusal in trust.refusals(node.graph_def):
            found.setdefault(refusal.op_type, []).append(refusal)
    if not found:
        return
    parts = [f"{op} ({len(r)} node{'s' * (len(r) > 1)}, e.g. '{r[0].where}': {r[0].reason})"
             for op, r in sorted(found.items())]
    raise ConversionError(
        f"--fallback tf cannot give TensorFlow {len(found)} op type"
        f"{'s' * (len(found) > 1)}: {', '.join(parts)}; a fallback segment may run only op "
        "types that compute (docs/reliability.md: Running models you did not make)",
        model=tf_graph.model, exit_code=ExitStatus.UNSUPPORTED)


def _fallback_node(tf_graph: TfGraph, segment: Segment) -> FallbackNode:
    """The FallbackNode of `segment`: its GraphDef reads a Placeholder per input (typed when
    the plugin knows the inputs' descs)."""
    from tensorboard.compat.proto.graph_pb2 import GraphDef
    from tensorboard.compat.proto.node_def_pb2 import NodeDef
    graph_def = GraphDef()
    names = set(segment.nodes)
    input_names = []
    for i in range(len(segment.inputs)):
        name = fresh_name(f"tf2ir_input_{i}", names)
        names.add(name)
        input_names.append(name)
        graph_def.node.add(name=name, op="Placeholder")
    renamed = dict(zip(segment.inputs, input_names))
    for name in segment.nodes:
        original = tf_graph.nodes[name]
        copy = graph_def.node.add()
        copy.ParseFromString(original._def.SerializeToString())
        copy.input[:] = [renamed.get(t, f"{t[0]}:{t[1]}") for t in original.inputs]
    node = FallbackNode(NodeDef(name=segment.name, op=FALLBACK_OP,
                                input=[f"{s}:{p}" for s, p in segment.inputs]))
    node.graph_def = graph_def
    node.input_names = input_names
    node.output_names = [f"{s}:{p}" for s, p in segment.outputs]
    node.op_types = sorted(segment.op_types_counts())
    return node


def _topological(tf_graph: TfGraph, order: List[str]) -> List[str]:
    """`order` re-sorted so each node follows its inputs (a segment's node takes the place
    of its first node, and may read nodes that came later)."""
    position = {name: i for i, name in enumerate(order)}
    done: Set[str] = set()
    result: List[str] = []
    for start in order:
        stack = [(start, False)]
        while stack:
            name, expanded = stack.pop()
            if name in done:
                continue
            if expanded:
                done.add(name)
                result.append(name)
                continue
            stack.append((name, True))
            preds = sorted({s for s, _ in tf_graph.nodes[name].inputs if s in position
                            and s not in done}, key=position.__getitem__, reverse=True)
            stack.extend((p, False) for p in preds)
    return result
