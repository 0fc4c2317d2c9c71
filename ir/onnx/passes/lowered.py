"""The lowered ONNX graph as ONNX passes see it: the node list and numpy initializers of a
LowerContext, the graph's input and output names, and use-def maps rebuilt on demand."""

from __future__ import annotations

import functools
from collections import defaultdict
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Set

import numpy as np
import onnx
from onnx import helper


_SUBGRAPH_OPS = {"If", "Loop", "Scan", "SequenceMap"}


def subgraph_names(node: onnx.NodeProto) -> Set[str]:
    """The names that nodes inside `node`'s graph attributes (If/Loop bodies) read."""
    names: Set[str] = set()
    for attr in node.attribute:
        for sub in list(attr.graphs) + ([attr.g] if attr.HasField("g") else []):
            for inner in sub.node:
                names.update(inner.input)
                names.update(subgraph_names(inner))
    return names


def attr_value(node: onnx.NodeProto, name: str, default=None):
    for attr in node.attribute:
        if attr.name == name:
            return helper.get_attribute_value(attr)
    return default


def set_attr(node: onnx.NodeProto, name: str, value) -> None:
    for i, attr in enumerate(node.attribute):
        if attr.name == name:
            del node.attribute[i]
            break
    node.attribute.append(helper.make_attribute(name, value))


class LoweredGraph:
    """Nodes in topological order, initializers by name, and the names that must survive
    (graph inputs, outputs, names read inside subgraphs). `ranks` holds known ranks (from
    the IR values, the initializers and what passes learn), `dtypes` the IR dtypes of the
    names that are IR values, `shapes` their IR shapes (a pass that changes what a name holds
    gives it a new name, so these stay true); `fresh` makes unique names."""

    def __init__(self, nodes: List[onnx.NodeProto], initializers: Dict[str, np.ndarray],
                 inputs: Sequence[str], outputs: Sequence[str], fresh: Callable[[str], str],
                 ranks: Optional[Dict[str, int]] = None, dtypes: Optional[Dict[str, str]] = None,
                 shapes: Optional[Dict[str, tuple]] = None):
        self.nodes = nodes
        self.initializers = initializers
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self._fresh = fresh
        self._hints: Dict[str, int] = {}
        self.ranks: Dict[str, int] = dict(ranks or {})
        self.dtypes: Dict[str, str] = dict(dtypes or {})
        self.shapes: Dict[str, tuple] = dict(shapes or {})   # IR values' (None: unknown dim)
        self.pinned: Set[str] = set(self.outputs)
        for node in nodes:
            if self.has_subgraphs(node):
                self.pinned |= subgraph_names(node)

    def fresh(self, hint: str) -> str:
        """A new unique name like `hint`; a repeated hint gets a counted suffix first, so
        the name source is not searched from _1 upwards each time."""
        count = self._hints.get(hint, 0)
        self._hints[hint] = count + 1
        return self._fresh(hint if not count else f"{hint}_{count}")

    # -- queries -----------------------------------------------------------------------
    def const(self, name: str) -> Optional[np.ndarray]:
        return self.initializers.get(name) if name else None

    def rank(self, name: str) -> Optional[int]:
        if name in self.initializers:
            return self.initializers[name].ndim
        return self.ranks.get(name)

    def producers(self) -> Dict[str, onnx.NodeProto]:
        return {out: node for node in self.nodes for out in node.output if out}

    def consumers(self) -> Dict[str, List[onnx.NodeProto]]:
        users: Dict[str, List[onnx.NodeProto]] = defaultdict(list)
        for node in self.nodes:
            for name in node.input:
                if name:
                    users[name].append(node)
        return users

    @staticmethod
    def has_subgraphs(node: onnx.NodeProto) -> bool:
        if node.op_type not in _SUBGRAPH_OPS and node.domain in ("", "ai.onnx"):
            return False            # standard ops other than If/Loop/Scan own no graphs
        return any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
                   for a in node.attribute)

    # -- verbs ---------------------------------------------------------------------------
    def add_initializer(self, array: np.ndarray, hint: str) -> str:
        name = self.fresh(hint)
        self.initializers[name] = np.asarray(array)
        self.ranks[name] = np.ndim(array)
        return name

    def make_node(self, op_type: str, inputs: Sequence[str], outputs: Sequence[str],
                  **attrs) -> onnx.NodeProto:
        return helper.make_node(op_type, list(inputs), list(outputs),
                                name=self.fresh(f"{op_type}_node"), **attrs)

    def keep_only(self, dead: Iterable[int]) -> None:
        """Drop the nodes whose id() is in `dead`."""
        dead = set(dead)
        if dead:
            self.nodes[:] = [n for n in self.nodes if id(n) not in dead]

    def toposort(self) -> None:
        """Order the nodes so each comes after its inputs' producers (stable otherwise)."""
        producers = {out: i for i, node in enumerate(self.nodes) for out in node.output if out}
        order: List[onnx.NodeProto] = []
        state = [0] * len(self.nodes)      # 0 new, 1 on the stack, 2 placed
        for start in range(len(self.nodes)):
            if state[start]:
                continue
            stack = [(start, 0)]
            state[start] = 1
            while stack:
                i, k = stack[-1]
                node = self.nodes[i]
                deps = list(node.input) + sorted(subgraph_names(node)) \
                    if self.has_subgraphs(node) else node.input
                while k < len(deps):
                    j = producers.get(deps[k], -1)
                    k += 1
                    if j >= 0 and state[j] == 0:
                        stack[-1] = (i, k)
                        stack.append((j, 0))
                        state[j] = 1
                        break
                else:
                    stack.pop()
                    state[i] = 2
                    order.append(node)
        self.nodes[:] = order


def replace_uses(nodes: Iterable[onnx.NodeProto], old: str, new: str) -> None:
    """Make every input `old` of `nodes` read `new`."""
    for node in nodes:
        for i, name in enumerate(node.input):
            if name == old:
                node.input[i] = new


# the size rule lives with both folders' (ir/fold_limits.py); re-exported for the passes here
from tf2ir.ir.fold_limits import FOLD_LIMIT_BYTES, broadcast_fits  # noqa: E402,F401


def accepts_lowered(run):
    """Transitional (issue 22): a pass written on OnnxGraph that a pass not yet converted
    calls with its LoweredGraph runs on an OnnxGraph of the same nodes (sharing the
    initializers), whose nodes then replace the LoweredGraph's."""
    @functools.wraps(run)
    def call(g, *args, **kwargs):
        if not isinstance(g, LoweredGraph):
            return run(g, *args, **kwargs)
        from tf2ir.ir.onnx.graph import GraphInvariantError, OnnxGraph

        def load():
            return OnnxGraph.from_protos(g.nodes, g.fresh, inputs=g.inputs, outputs=g.outputs,
                                         initializers=g.initializers, ranks=g.ranks,
                                         dtypes=g.dtypes, shapes=g.shapes)
        try:
            graph = load()
        except GraphInvariantError:     # a legacy pass may leave its nodes unsorted
            g.toposort()
            graph = load()
        count = run(graph, *args, **kwargs)
        g.nodes[:] = graph.to_protos()
        g.ranks, g.dtypes, g.shapes = graph.ranks, graph.dtypes, graph.shapes
        g.pinned = graph.pinned
        return count
    return call
