"""Dead-code elimination on the lowered ONNX graph: nodes none of whose outputs is read
(by a later node, a subgraph, or as a graph output) are dropped, back to front."""

from __future__ import annotations

from collections import Counter

from tf2ir.ir.onnx.passes.lowered import LoweredGraph, subgraph_names


def remove_dead_nodes(g: LoweredGraph) -> int:
    """Drop unused nodes (and initializers nothing reads any more); return how many nodes."""
    reads = Counter(name for node in g.nodes for name in node.input if name)
    for node in g.nodes:
        if g.has_subgraphs(node):
            reads.update(subgraph_names(node))
    reads.update(g.pinned)
    dead = []
    for node in reversed(g.nodes):
        if any(reads[out] for out in node.output if out):
            continue
        dead.append(id(node))
        for name in node.input:
            if name:
                reads[name] -= 1
        if g.has_subgraphs(node):
            for name in subgraph_names(node):
                reads[name] -= 1
    g.keep_only(dead)
    for name in [n for n in g.initializers if reads[n] <= 0]:
        del g.initializers[name]
    return len(dead)
