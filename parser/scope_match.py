"""Finding scope fusion candidates in the TF graph: name scopes, the op-type index, and the
generic matcher (a scope pattern's op-type counts, a structure through networkx's
DiGraphMatcher). The runner in `scope_fusion` rewrites what this finds."""

from __future__ import annotations

from typing import Dict, Iterable, List, Optional, Set, Tuple

from tf2ir.parser.graph_view import TfGraph
from tf2ir.plugins.fusion import ScopePattern, holds, needed_op_types

def name_scopes(tf_graph: TfGraph) -> Dict[str, List[str]]:
    """Scope path → names of the nodes under it (nested scopes included), Placeholders aside."""
    scopes: Dict[str, List[str]] = {}
    for name, node in tf_graph.nodes.items():
        if node.op_type == "Placeholder":
            continue
        parts = name.split("/")
        for i in range(1, len(parts)):
            scopes.setdefault("/".join(parts[:i]), []).append(name)
    return scopes


class GraphIndex:
    """The TF graph's name scopes and op-type counts, recomputed after each rewrite."""

    def __init__(self, tf_graph: TfGraph):
        self.tf = tf_graph
        self.stale = True
        self._edges: Optional[Set[Tuple[str, str]]] = None

    def refresh(self) -> "GraphIndex":
        if self.stale:
            self.scopes = name_scopes(self.tf)
            self.op_counts: Dict[str, int] = {}
            for node in self.tf.nodes.values():
                self.op_counts[node.op_type] = self.op_counts.get(node.op_type, 0) + 1
            self._edges = None
            self.stale = False
        return self

    def may_match(self, pattern: ScopePattern) -> bool:
        """False when the graph lacks op types the pattern needs (a quick necessary test)."""
        return holds(needed_op_types(pattern), self)

    def op_type_edges(self) -> Set[Tuple[str, str]]:
        """(producer op type, consumer op type) of every data edge (made when first asked)."""
        if self._edges is None:
            nodes = self.tf.nodes
            self._edges = {(nodes[src].op_type, node.op_type) for node in nodes.values()
                           for src, _ in node.inputs if src in nodes}
        return self._edges


def _search_graph(tf_graph: TfGraph, pattern: ScopePattern, inside: Optional[Set[str]]):
    """The data-flow graph to search: nodes of the pattern's op types (within `inside`,
    when given) and their neighbours, which only wildcards may match."""
    import networkx as nx
    structure = pattern.structure
    wanted = set().union(*(structure.op_types(l) or set() for l in structure.nodes))
    names = tf_graph.nodes if inside is None else inside
    core = {n for n in names if tf_graph.nodes[n].op_type in wanted}
    consumers: Dict[str, List[str]] = {}
    for node in tf_graph.nodes.values():
        for src, _ in node.inputs:
            if src in core:
                consumers.setdefault(src, []).append(node.name)
    graph = nx.DiGraph()
    for name in core:
        for user in [name] + consumers.get(name, []):
            for src, port in tf_graph.nodes[user].inputs:
                if graph.has_edge(src, user):
                    graph.edges[src, user]["ports"].add(port)
                elif src in core or user in core:
                    graph.add_edge(src, user, ports={port})
        graph.add_node(name)
    for name, data in graph.nodes(data=True):
        data["op"], data["core"] = tf_graph.nodes[name].op_type, name in core
    return graph


def _structure_matches(tf_graph: TfGraph, pattern: ScopePattern,
                       inside: Optional[Set[str]] = None) -> Iterable[Dict[str, str]]:
    """Label → node name for each occurrence of the pattern's structure (non-wildcard
    labels only on nodes in `inside`, when given)."""
    import networkx as nx
    from networkx.algorithms.isomorphism import DiGraphMatcher
    structure = pattern.structure
    graph = _search_graph(tf_graph, pattern, inside)
    shape = nx.DiGraph()
    labels = sorted(structure.nodes, key=lambda l: structure.op_types(l) is None)  # wildcards last
    for label in labels:
        shape.add_node(label, types=structure.op_types(label))
    shape.add_edges_from(structure.edges)

    def node_match(g, p):
        return p["types"] is None or (g["core"] and g["op"] in p["types"])
    seen = set()
    for mapping in DiGraphMatcher(graph, shape, node_match=node_match).subgraph_monomorphisms_iter():
        bound = {label: name for name, label in mapping.items()}
        members = frozenset(bound[l] for l in labels if structure.op_types(l) is not None)
        if members in seen or not _ports_agree(graph, shape, bound):
            continue
        seen.add(members)
        yield bound


def _ports_agree(graph, shape, bound) -> bool:
    """A pattern node feeding several pattern nodes must feed them one tensor."""
    for label in shape:
        users = list(shape.successors(label))
        if len(users) > 1:
            common = set.intersection(*(graph.edges[bound[label], bound[u]]["ports"] for u in users))
            if not common:
                return False
    return True


def find_candidates(tf_graph: TfGraph, pattern: ScopePattern, index: Optional[GraphIndex] = None,
                    ) -> List[Tuple[str, List[str], Dict[str, str]]]:
    """(scope, node names, structure labels) for each candidate match of `pattern`."""
    index = (index or GraphIndex(tf_graph)).refresh()
    if not index.may_match(pattern):
        return []
    found = []
    order = {name: i for i, name in enumerate(tf_graph.nodes)}
    if pattern.scope_re is not None:
        for scope, names in index.scopes.items():
            if not pattern.scope_re.search(scope):
                continue
            if not pattern.counts_match([tf_graph.nodes[n].op_type for n in names]):
                continue
            labels: Dict[str, str] = {}
            if pattern.structure is not None:
                labels = next(iter(_structure_matches(tf_graph, pattern, set(names))), None)
                if labels is None:
                    continue
            found.append((scope, names, labels))
    else:
        structure = pattern.structure
        for labels in _structure_matches(tf_graph, pattern):
            names = sorted((n for l, n in labels.items() if structure.op_types(l) is not None),
                           key=order.__getitem__)
            if pattern.counts_match([tf_graph.nodes[n].op_type for n in names]):
                found.append(("", names, labels))
    # in graph order; of nested scopes that start together, the innermost first
    found.sort(key=lambda c: (order[c[1][0]] if c[1] else 0, -c[0].count("/")))
    return found
