"""The lowered ONNX graph: the one graph the ONNX passes work on, from lowering to the file.

Nodes are light objects (`OnnxNode`: op type, domain, name, input and output names as tuples,
attributes as a dict of Python values); NodeProtos are made once, when the model is written.
The graph keeps, under every verb, what the passes used to rebuild by hand:

- an order: a doubly linked list with integer labels, so a node is inserted where its inputs
  exist (after their last producer, or before or after a node the caller names) in constant
  time, and "is a before b" is one comparison;
- use lists: each name's producer and its (node, input position) uses;
- an index by op type, so a pass visits only the nodes it rewrites.

A verb that would break the order (a node reading a name produced after it, a name produced
twice, a graph output left without a producer) raises `GraphInvariantError` at once, naming the
node; `check()` verifies everything from scratch (the pass manager runs it after every pass
with --check-passes and under the test suite). A node's fields are read-only to passes: its
input and output tuples cannot be mutated, and tests/test_layers.py asserts that no pass
assigns them or touches NodeProto lists."""


from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Set, Tuple

import numpy as np
import onnx

from tf2ir.ir.onnx.links import NodeOrder, order_key
from tf2ir.ir.onnx.node import (STANDARD, SUBGRAPH_OPS, GraphInvariantError, OnnxNode,
                                graph_reads)

__all__ = ["OnnxGraph", "OnnxNode", "GraphInvariantError", "graph_reads", "STANDARD",
           "SUBGRAPH_OPS"]


class OnnxGraph(NodeOrder):
    """The lowered graph: ordered nodes with maintained use lists, numpy initializers by name,
    the graph's input and output names. `ranks`, `dtypes` and `shapes` hold what is known of
    names (from the IR values, initializers and what passes learn; a pass that changes what a
    name holds gives it a new name, so they stay true); `fresh` makes unique names."""

    def __init__(self, fresh: Callable[[str], str], inputs: Sequence[str] = (),
                 outputs: Sequence[str] = (), initializers: Optional[Dict[str, np.ndarray]] = None,
                 ranks: Optional[Dict[str, int]] = None, dtypes: Optional[Dict[str, str]] = None,
                 shapes: Optional[Dict[str, tuple]] = None, open_scope: bool = False):
        self.initializers: Dict[str, np.ndarray] = initializers if initializers is not None else {}
        self.inputs: List[str] = list(inputs)
        self._input_set = set(self.inputs)
        self.outputs: List[str] = list(outputs)
        self._fresh = fresh
        self._hints: Dict[str, int] = {}
        self.ranks: Dict[str, int] = dict(ranks or {})
        self.dtypes: Dict[str, str] = dict(dtypes or {})
        self.shapes: Dict[str, tuple] = dict(shapes or {})
        # a subgraph body being lowered reads names of the enclosing graphs and its own inputs,
        # declared later: any name nothing here produces is taken as one of those
        self._open = open_scope
        self._init_order()
        self._output_set = set(self.outputs)

    # -- names ---------------------------------------------------------------------------
    def fresh(self, hint: str) -> str:
        """A new unique name like `hint`; a repeated hint gets a counted suffix first, so the
        name source is not searched from _1 upwards each time."""
        count = self._hints.get(hint, 0)
        self._hints[hint] = count + 1
        return self._fresh(hint if not count else f"{hint}_{count}")

    @property
    def pinned(self) -> Set[str]:
        """Names that must keep their meaning: graph outputs and names subgraphs read."""
        return set(self._output_set) | set(self._subgraph_read_count)

    def read_names(self) -> Set[str]:
        """Every name a node or a subgraph reads."""
        return set(self._uses) | set(self._subgraph_read_count)

    def is_pinned(self, name: str) -> bool:
        return name in self._output_set or name in self._subgraph_read_count

    # -- queries -------------------------------------------------------------------------
    def producer(self, name: str) -> Optional[OnnxNode]:
        return self._producer.get(name) if name else None

    def uses(self, name: str) -> List[Tuple[OnnxNode, int]]:
        """(node, input position) for each use of `name` in this graph's nodes."""
        return list(self._uses.get(name, ()))

    def users(self, name: str) -> List[OnnxNode]:
        """The distinct nodes reading `name`, in graph order."""
        seen: Dict[OnnxNode, None] = {}
        for node, _ in self._uses.get(name, ()):
            seen[node] = None
        return sorted(seen, key=order_key)

    def use_count(self, name: str) -> int:
        """How many node inputs read `name` (not counting graph outputs or subgraphs)."""
        return len(self._uses.get(name, ()))

    def only_user(self, name: str) -> Optional[OnnxNode]:
        """The one node reading `name` once, when `name` is read by it alone and not pinned."""
        uses = self._uses.get(name, ())
        if len(uses) != 1 or self.is_pinned(name):
            return None
        return next(iter(uses))[0]

    def const(self, name: str) -> Optional[np.ndarray]:
        return self.initializers.get(name) if name else None

    def rank(self, name: str) -> Optional[int]:
        if name in self.initializers:
            return self.initializers[name].ndim
        return self.ranks.get(name)

    def available(self, name: str, before: Optional[OnnxNode] = None) -> bool:
        """Whether `name` can be read by a node at `before`'s place (None: at the end)."""
        if not name or name in self.initializers or name in self._input_set:
            return True
        producer = self._producer.get(name)
        if producer is None:
            return self._open
        return before is None or producer._order < before._order

    def add_graph_input(self, name: str) -> None:
        """Declare `name` a graph input (an optional input a lowering adds, with its default)."""
        if name in self._producer:
            raise GraphInvariantError(f"{name!r} is produced by a node already")
        if name not in self._input_set:
            self.inputs.append(name)
            self._input_set.add(name)

    # -- verbs: initializers -----------------------------------------------------------
    def add_initializer(self, array: np.ndarray, hint: str) -> str:
        name = self.fresh(hint)
        self.initializers[name] = np.asarray(array)
        self.ranks[name] = np.ndim(array)
        return name

    # -- verbs: nodes --------------------------------------------------------------------
    def add_node(self, op_type: str, inputs: Sequence[str], outputs: Any = 1, *,
                 domain: str = "", name: Optional[str] = None, before: Optional[OnnxNode] = None,
                 after: Optional[OnnxNode] = None, **attrs) -> OnnxNode:
        """Insert a node: before or after the node named (else right after the last producer
        of its inputs: the earliest place it can run). `outputs` is a count of fresh names or
        the names; a name other nodes already read (its producer removed in this rewrite)
        must be produced before all of them."""
        if isinstance(outputs, int):
            outputs = [self.fresh(op_type) for _ in range(outputs)]
        node = OnnxNode(op_type, inputs, outputs, name or self.fresh(f"{op_type}_node"), domain,
                        {k: v for k, v in attrs.items() if v is not None})
        self.insert(node, before=before, after=after)
        return node

    def append(self, node: OnnxNode) -> OnnxNode:
        """Add `node` at the end (lowering emits in order); its inputs must exist."""
        if node.graph is not None:
            raise GraphInvariantError(f"{node!r} is in a graph already")
        self._append(node)
        return node

    def insert(self, node: OnnxNode, before: Optional[OnnxNode] = None,
               after: Optional[OnnxNode] = None) -> OnnxNode:
        if node.graph is not None:
            raise GraphInvariantError(f"{node!r} is in a graph already")
        if before is None and after is None:
            after = self._last_producer(node)
            if after is None:
                before = self._head
        prev: Optional[OnnxNode]
        nxt: Optional[OnnxNode]
        if after is not None:
            self._check_member(after)
            prev, nxt = after, after._next
        else:
            if before is not None:
                self._check_member(before)
            prev = before._prev if before is not None else self._tail
            nxt = before
        self._link(node, prev, nxt)
        try:
            self._check_reads(node)
            self._claim_outputs(node)
        except GraphInvariantError:
            self._unlink(node)
            raise
        self._index(node)
        return node

    def set_input(self, node: OnnxNode, index: int, name: str) -> None:
        """Make input `index` of `node` read `name` (appending when index is the input count;
        '' is an absent optional input)."""
        self._check_member(node)
        if name and not self.available(name, node):
            raise GraphInvariantError(f"{node!r} cannot read {name!r}: "
                                      + self._why_unavailable(name))
        inputs = list(node.input)
        if index == len(inputs):
            inputs.append(name)
        else:
            self._drop_use(inputs[index], node, index)
            inputs[index] = name
        node.input = tuple(inputs)
        self._add_use(name, node, index)

    def set_inputs(self, node: OnnxNode, names: Sequence[str]) -> None:
        """Replace every input of `node`."""
        self.set_op(node, node.op_type, names)

    def set_op(self, node: OnnxNode, op_type: str, inputs: Optional[Sequence[str]] = None,
               attrs: Optional[Dict[str, Any]] = None, domain: Optional[str] = None) -> None:
        """Turn `node` into another op in place (same outputs, same place): new op type, inputs
        (None: kept) and attributes (None: kept; a dict replaces them all)."""
        self._check_member(node)
        if inputs is not None:
            inputs = tuple(inputs)
            for name in inputs:
                if name and not self.available(name, node):
                    raise GraphInvariantError(f"{node!r} cannot read {name!r}: "
                                              + self._why_unavailable(name))
            for index, old in enumerate(node.input):
                self._drop_use(old, node, index)
            node.input = inputs
            for index, name in enumerate(inputs):
                self._add_use(name, node, index)
        if op_type != node.op_type or (domain is not None and domain != node.domain):
            self._by_type.get(node.op_type, {}).pop(node, None)
            node.op_type = op_type
            if domain is not None:
                node.domain = domain
            self._by_type.setdefault(op_type, {})[node] = None
        if attrs is not None:
            node.attrs = {k: v for k, v in attrs.items() if v is not None}
        self._track_subgraphs(node)

    def set_attr(self, node: OnnxNode, name: str, value: Any) -> None:
        """Set one attribute (None removes it)."""
        self._check_member(node)
        if value is None:
            node.attrs.pop(name, None)
        else:
            node.attrs[name] = value
        self._track_subgraphs(node)

    def replace_uses(self, old: str, new: str) -> int:
        """Make every node reading `old` read `new` (`old` must not be pinned: a graph output
        keeps its name); returns how many inputs changed."""
        if old == new:
            return 0
        if self.is_pinned(old):
            raise GraphInvariantError(f"{old!r} is a graph output or read by a subgraph: its "
                                      "producer must keep writing it")
        uses = self._uses.get(old, {})
        for node, _ in uses:
            if not self.available(new, node):
                raise GraphInvariantError(f"{node!r} cannot read {new!r}: "
                                          + self._why_unavailable(new))
        moved = list(uses)
        for node, index in moved:
            self._drop_use(old, node, index)
            inputs = list(node.input)
            inputs[index] = new
            node.input = tuple(inputs)
            self._add_use(new, node, index)
        return len(moved)

    def rename_output(self, node: OnnxNode, index: int, name: str) -> None:
        """Give output `index` of `node` a new name (one nothing else produces); the uses of
        the old name are left to the caller, which must rewire or drop them."""
        self._check_member(node)
        old = node.output[index]
        if name and (name in self._producer or name in self.initializers
                     or name in self._input_set):
            raise GraphInvariantError(f"{name!r} is produced already")
        if self._producer.get(old) is node:
            del self._producer[old]
        outputs = list(node.output)
        outputs[index] = name
        node.output = tuple(outputs)
        if name:
            self._producer[name] = node
            for user, _ in self._uses.get(name, ()):
                if user._order <= node._order:
                    raise GraphInvariantError(f"{user!r} reads {name!r} before {node!r}")

    def remove(self, node: OnnxNode, *, keep_uses: bool = False) -> None:
        """Take `node` out. Its outputs must be unread and not graph outputs, unless
        `keep_uses`: the caller then adds a node producing them (before their users) in the
        same rewrite; `check()` finds any left dangling."""
        self._check_member(node)
        if not keep_uses:
            for name in node.output:
                if name and (self._uses.get(name) or self.is_pinned(name)):
                    raise GraphInvariantError(f"removing {node!r} leaves {name!r} unproduced "
                                              "while it is read")
        for index, name in enumerate(node.input):
            self._drop_use(name, node, index)
        for name in node.output:
            if self._producer.get(name) is node:
                del self._producer[name]
        self._by_type.get(node.op_type, {}).pop(node, None)
        self._track_subgraphs(node, dropped=True)
        self._unlink(node)
        node.graph = None

    def move_before(self, node: OnnxNode, anchor: OnnxNode) -> None:
        """Place `node` just before `anchor` (its inputs must exist there, and every user of its
        outputs must come after)."""
        self._check_member(node)
        self._check_member(anchor)
        if node is anchor:
            return
        saved = (node._prev, node._next, node._order)
        self._unlink(node)
        node.graph = self
        self._link(node, anchor._prev, anchor)
        try:
            self._check_reads(node)
            self._check_users(node)
        except GraphInvariantError:
            self._unlink(node)
            node.graph = self
            self._link(node, saved[0], saved[1])
            raise

    # -- whole-graph ---------------------------------------------------------------------
    def snapshot(self) -> Any:
        """A state `restore` brings back (a pass that tries a rewrite and keeps it only when
        it pays)."""
        return ([(n, n.op_type, n.domain, n.input, n.output, dict(n.attrs)) for n in self],
                dict(self.initializers), dict(self.ranks), list(self.outputs))

    def restore(self, state: Any) -> None:
        rows, initializers, ranks, outputs = state
        for node in list(self):
            self.remove(node, keep_uses=True)
        self.initializers.clear()
        self.initializers.update(initializers)
        self.ranks = ranks
        self.outputs = outputs
        self._output_set = set(outputs)
        for node, op_type, domain, inputs, outputs_, attrs in rows:
            node.op_type, node.domain, node.input, node.output = op_type, domain, inputs, outputs_
            node.attrs = attrs
            self._append(node)

    def _append(self, node: OnnxNode) -> None:
        """Link `node` at the end, as lowering, loading and restoring do (the hot path: every
        emitted node). At the end, a name is readable when anything produces it, and a
        name already read cannot be produced (its readers would come first)."""
        producer, initializers, inputs = self._producer, self.initializers, self._input_set
        for name in node.input:
            if name and name not in producer and name not in initializers \
                    and name not in inputs and not self._open:
                raise GraphInvariantError(f"{node!r} would read {name!r} where nothing "
                                          "produces it")
        for name in node.output:
            if name and (name in producer or name in initializers or name in inputs
                         or name in self._uses):
                raise GraphInvariantError(f"{node!r} would produce {name!r}, which exists "
                                          "or is read before it")
        self._link(node, self._tail, None)
        if node.attrs and node.subgraphs:
            try:
                self._check_reads(node)
            except GraphInvariantError:
                self._unlink(node)
                raise
        for name in node.output:
            if name:
                producer[name] = node
        uses = self._uses
        for index, name in enumerate(node.input):
            if name:
                entry = uses.get(name)
                if entry is None:
                    uses[name] = {(node, index): None}
                else:
                    entry[(node, index)] = None
        by_type = self._by_type.get(node.op_type)
        if by_type is None:
            self._by_type[node.op_type] = {node: None}
        else:
            by_type[node] = None
        if node.attrs:
            self._track_subgraphs(node)

    def to_protos(self) -> List[onnx.NodeProto]:
        return [node.to_proto() for node in self]

    @classmethod
    def from_protos(cls, nodes: Iterable[onnx.NodeProto], fresh: Callable[[str], str],
                    **kwargs) -> "OnnxGraph":
        graph = cls(fresh, **kwargs)
        for proto in nodes:
            graph._append(OnnxNode.from_proto(proto))
        return graph

    # -- internals -----------------------------------------------------------------------
