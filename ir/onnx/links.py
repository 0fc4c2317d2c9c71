"""The bookkeeping under the lowered ONNX graph: node order, producers, use lists and the op-type
index, kept true by every verb of `OnnxGraph` (ir/onnx/graph.py) and checked from scratch."""

from __future__ import annotations

from typing import Any, Dict, Iterator, List, Optional, Set, Tuple

from tf2ir.ir.onnx.node import STANDARD, GraphInvariantError, OnnxNode, graph_reads

_GAP = 1 << 20


class NodeOrder:
    """The order and use lists of an `OnnxGraph` (its base): a doubly linked list of nodes with
    integer order labels, each name's producer and (node, input position) uses, an index by
    op type, and the names subgraphs read; `check()` verifies them all from scratch."""

    # what OnnxGraph (the subclass) holds, which the checks here read
    initializers: Dict[str, Any]
    outputs: List[str]
    _input_set: Set[str]
    _open: bool

    def available(self, name: str, before: Optional[OnnxNode] = None) -> bool:
        raise NotImplementedError

    def _init_order(self) -> None:
        self._head: Optional[OnnxNode] = None
        self._tail: Optional[OnnxNode] = None
        self._count = 0
        self._producer: Dict[str, OnnxNode] = {}
        # name -> its (reader, input position) uses, a dict for constant-time removal
        self._uses: Dict[str, Dict[Tuple[OnnxNode, int], None]] = {}
        self._by_type: Dict[str, Dict[OnnxNode, None]] = {}
        self._subgraph_reads: Dict[OnnxNode, Set[str]] = {}
        self._subgraph_read_count: Dict[str, int] = {}   # name -> subgraph owners reading it

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[OnnxNode]:
        """The nodes in order, read live: a node removed before the walk reaches it is not
        visited, a node inserted after the walk's position is."""
        node = self._head
        while node is not None:
            following = node._next
            yield node
            node = node._next if node.graph is self else following

    @property
    def nodes(self) -> List[OnnxNode]:
        """The nodes in order (a new list: changing it changes nothing)."""
        return list(self)

    def of_type(self, *op_types: str, domain: Optional[str] = "") -> List[OnnxNode]:
        """The nodes of these op types (in the default domain unless `domain` says which; None:
        any), in graph order."""
        found: List[OnnxNode] = []
        for op_type in op_types:
            found.extend(n for n in self._by_type.get(op_type, ())
                         if domain is None or n.domain == domain
                         or (not domain and n.domain in STANDARD))
        found.sort(key=order_key)
        return found


    def check(self) -> None:
        """Verify every invariant from scratch: order labels increasing, each input produced
        earlier (or a graph input, initializer or outer name), each name produced once, use
        lists and the type index equal to what the nodes say, graph outputs produced."""
        produced: Dict[str, OnnxNode] = {}
        uses: Dict[str, List[Tuple[int, int]]] = {}
        last = None
        count = 0
        for node in self:
            count += 1
            if node.graph is not self:
                raise GraphInvariantError(f"{node!r} is listed but belongs elsewhere")
            if last is not None and node._order <= last._order:
                raise GraphInvariantError(f"order labels out of order at {node!r}")
            if not isinstance(node.input, tuple) or not isinstance(node.output, tuple):
                raise GraphInvariantError(f"{node!r}'s inputs/outputs were replaced by hand")
            for index, name in enumerate(node.input):
                if not name:
                    continue
                if name not in produced and name not in self.initializers \
                        and name not in self._input_set \
                        and (not self._open or name in self._producer):
                    where = self._producer.get(name)
                    raise GraphInvariantError(
                        f"{node!r} reads {name!r} " + ("before its producer "
                                                      f"{where!r}" if where else
                                                      "which nothing produces"))
                uses.setdefault(name, []).append((id(node), index))
            for name in node.output:
                if not name:
                    continue
                if name in produced or name in self.initializers or name in self._input_set:
                    raise GraphInvariantError(f"{name!r} is produced twice (by {node!r})")
                if self._producer.get(name) is not node:
                    raise GraphInvariantError(f"the producer map is stale for {name!r}")
                produced[name] = node
            for name in self._subgraph_reads.get(node, ()):
                if name in self._producer and name not in produced:
                    raise GraphInvariantError(f"a subgraph of {node!r} reads {name!r} before "
                                              "its producer")
            if node not in self._by_type.get(node.op_type, {}):
                raise GraphInvariantError(f"{node!r} is missing from the op-type index")
            last = node
        if count != self._count or len(self._producer) != len(produced):
            raise GraphInvariantError("the node count or producer map is stale")
        for name, recorded in self._uses.items():
            if sorted((id(n), i) for n, i in recorded) != sorted(uses.get(name, [])):
                raise GraphInvariantError(f"the use list of {name!r} is stale")
        if any(name not in self._uses and entries for name, entries in uses.items()):
            raise GraphInvariantError("a use list is missing")
        if sum(len(v) for v in self._by_type.values()) != count:
            raise GraphInvariantError("the op-type index holds removed nodes")
        for name in self.outputs:
            if name not in produced and name not in self._input_set \
                    and name not in self.initializers:
                raise GraphInvariantError(f"graph output {name!r} is not produced")

    def _check_member(self, node: OnnxNode) -> None:
        if node.graph is not self:
            raise GraphInvariantError(f"{node!r} is not in this graph")

    def _last_producer(self, node: OnnxNode) -> Optional[OnnxNode]:
        last = None
        for name in node.input:
            producer = self._producer.get(name) if name else None
            if producer is not None and (last is None or producer._order > last._order):
                last = producer
        for reads in ([graph_reads(g) for g in node.subgraphs] if node.subgraphs else ()):
            for name in reads:
                producer = self._producer.get(name)
                if producer is not None and (last is None or producer._order > last._order):
                    last = producer
        return last

    def _why_unavailable(self, name: str) -> str:
        producer = self._producer.get(name)
        return f"its producer {producer!r} comes later" if producer is not None \
            else "nothing produces it"

    def _check_reads(self, node: OnnxNode) -> None:
        for name in node.input:
            if name and not self.available(name, node):
                raise GraphInvariantError(f"{node!r} would read {name!r} where "
                                          + self._why_unavailable(name))
        for sub in node.subgraphs:          # outer names its branches read
            for name in graph_reads(sub):
                producer = self._producer.get(name)
                if producer is not None and producer._order >= node._order:
                    raise GraphInvariantError(f"a subgraph of {node!r} would read {name!r} "
                                              f"before {producer!r} produces it")

    def _check_users(self, node: OnnxNode) -> None:
        for name in node.output:
            for user, _ in self._uses.get(name, ()):
                if user._order <= node._order:
                    raise GraphInvariantError(f"{user!r} would read {name!r} before {node!r} "
                                              "produces it")

    def _claim_outputs(self, node: OnnxNode) -> None:
        for name in node.output:
            if not name:
                continue
            if name in self._producer or name in self.initializers or name in self._input_set:
                raise GraphInvariantError(f"{node!r} would produce {name!r}, which exists")
        self._check_users(node)
        for name in node.output:
            if name:
                self._producer[name] = node

    def _index(self, node: OnnxNode) -> None:
        for index, name in enumerate(node.input):
            self._add_use(name, node, index)
        self._by_type.setdefault(node.op_type, {})[node] = None
        self._track_subgraphs(node)

    def _track_subgraphs(self, node: OnnxNode, dropped: bool = False) -> None:
        """Record the names `node`'s subgraphs read (forget them when it is `dropped`)."""
        old = self._subgraph_reads.pop(node, None)
        if old:
            for name in old:
                left = self._subgraph_read_count[name] - 1
                if left:
                    self._subgraph_read_count[name] = left
                else:
                    del self._subgraph_read_count[name]
        graphs = () if dropped else node.subgraphs
        if graphs:
            reads: Set[str] = set()
            for sub in graphs:
                reads |= graph_reads(sub)
            self._subgraph_reads[node] = reads
            for name in reads:
                self._subgraph_read_count[name] = self._subgraph_read_count.get(name, 0) + 1

    def _add_use(self, name: str, node: OnnxNode, index: int) -> None:
        if name:
            self._uses.setdefault(name, {})[(node, index)] = None

    def _drop_use(self, name: str, node: OnnxNode, index: int) -> None:
        if not name:
            return
        uses = self._uses.get(name)
        if uses:
            uses.pop((node, index), None)
            if not uses:
                del self._uses[name]

    def _link(self, node: OnnxNode, prev: Optional[OnnxNode], nxt: Optional[OnnxNode]) -> None:
        node.graph = self       # type: ignore[assignment]  # (always an OnnxGraph, the subclass)
        node._prev, node._next = prev, nxt
        if prev is not None:
            prev._next = node
        else:
            self._head = node
        if nxt is not None:
            nxt._prev = node
        else:
            self._tail = node
        self._count += 1
        low = prev._order if prev is not None else 0
        if nxt is None:
            node._order = low + _GAP
        elif nxt._order - low > 1:
            node._order = (low + nxt._order) // 2
        else:
            self._relabel()

    def _unlink(self, node: OnnxNode) -> None:
        prev, nxt = node._prev, node._next
        if prev is not None:
            prev._next = nxt
        else:
            self._head = nxt
        if nxt is not None:
            nxt._prev = prev
        else:
            self._tail = prev
        node._prev = node._next = None
        node.graph = None
        self._count -= 1

    def _relabel(self) -> None:
        order = _GAP
        node = self._head
        while node is not None:
            node._order = order
            order += _GAP
            node = node._next



def order_key(node: OnnxNode) -> int:
    return node._order
