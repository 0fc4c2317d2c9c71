"""Topological order without networkx: importing networkx costs about 0.1 s, more than a
small model's whole conversion, and every conversion orders its graphs and passes."""

from __future__ import annotations

import heapq
from typing import Any, Callable, Dict, Hashable, Iterable, List, Optional, Tuple, TypeVar

N = TypeVar("N", bound=Hashable)


class CycleError(ValueError):
    """The edges make a cycle: there is no topological order."""


def lexicographic_order(nodes: Iterable[N], edges: Iterable[Tuple[N, N]],
                        key: Optional[Callable[[N], Any]] = None) -> List[N]:
    """The nodes (and the edges' ends) in topological order, always taking the ready node
    of the smallest `key` (default: the node itself; ties by first appearance): the order
    networkx's `lexicographical_topological_sort` gives for the same graph. Raises
    `CycleError` when the edges make a cycle."""
    first: Dict[N, int] = {}
    for node in nodes:
        first.setdefault(node, len(first))
    successors: Dict[N, List[N]] = {}
    seen = set()
    for a, b in edges:
        first.setdefault(a, len(first))
        first.setdefault(b, len(first))
        if (a, b) not in seen:   # a repeated edge counts once, as in a DiGraph
            seen.add((a, b))
            successors.setdefault(a, []).append(b)
    indegree = dict.fromkeys(first, 0)
    for targets in successors.values():
        for b in targets:
            indegree[b] += 1
    rank = key if key is not None else (lambda node: node)
    ready = [(rank(n), i, n) for n, i in first.items() if not indegree[n]]
    heapq.heapify(ready)
    order: List[N] = []
    while ready:
        node = heapq.heappop(ready)[2]
        order.append(node)
        for b in successors.get(node, ()):
            indegree[b] -= 1
            if not indegree[b]:
                heapq.heappush(ready, (rank(b), first[b], b))
    if len(order) != len(first):
        raise CycleError("the graph has a cycle")
    return order


def find_cycle(nodes: Iterable[N], edges: Iterable[Tuple[N, N]]) -> List[Tuple[N, N]]:
    """The edges of one cycle, as networkx's `find_cycle` names it (only on the error path,
    so networkx is imported here)."""
    import networkx as nx
    dag = nx.DiGraph()
    dag.add_nodes_from(nodes)
    dag.add_edges_from(edges)
    return list(nx.find_cycle(dag))
