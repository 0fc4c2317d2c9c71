"""Dead-code elimination on the lowered ONNX graph: nodes none of whose outputs is read
(by a later node, a subgraph, or as a graph output) are dropped, back to front. Inside
If/Loop bodies too, and an If output nothing reads leaves both branches (with what only it
needed), and a Loop variable that the body passes through unchanged becomes a read of the
Loop's input (ONNX bodies see the outer scope). TF's lowering prunes the same, so a model
converted from a SavedModel and from a .pb frozen the TF default way come out the same."""

from __future__ import annotations

from collections import Counter

import onnx

from tf2ir.ir.onnx.passes.lowered import LoweredGraph, subgraph_names


def _reads(nodes, outputs) -> Counter:
    reads = Counter(name for node in nodes for name in node.input if name)
    for node in nodes:
        reads.update(subgraph_names(node))
    reads.update(outputs)
    return reads


def _bodies(node: onnx.NodeProto):
    return [a.g for a in node.attribute if a.type == onnx.AttributeProto.GRAPH]


def _rename(nodes, old: str, new: str) -> None:
    """Make every read of `old` in `nodes` and the graphs inside them read `new`."""
    for node in nodes:
        for i, name in enumerate(node.input):
            if name == old:
                node.input[i] = new
        for body in _bodies(node):
            _rename(body.node, old, new)


def _hoist_invariants(loop: onnx.NodeProto, outer_nodes, outputs) -> None:
    """Remove the loop-carried variables the body returns unchanged: the body (and whoever
    read the Loop's output for one) reads the Loop's input instead."""
    (body,) = _bodies(loop)
    producers = {o: n for n in body.node for o in n.output}
    for k in reversed(range(len(loop.input) - 2)):
        if len(body.input) != len(loop.input) or k >= len(loop.output):
            return
        arg, result, outer = body.input[2 + k].name, body.output[1 + k].name, loop.input[2 + k]
        source = producers.get(result)
        passes = result == arg or (source is not None and source.op_type == "Identity"
                                   and list(source.input) == [arg])
        if not passes or not outer or loop.output[k] in outputs:
            continue
        _rename(body.node, arg, outer)
        _rename(outer_nodes, loop.output[k], outer)
        del loop.input[2 + k]
        del body.input[2 + k]
        del body.output[1 + k]
        del loop.output[k]


def _prune_node(node: onnx.NodeProto, reads: Counter, outer_nodes, outputs) -> int:
    """Prune inside `node`'s bodies; for an If, drop the outputs `reads` has no reader of
    (unless none is read: the whole If is dead code); for a Loop, hoist the variables it
    passes through. How many inner nodes went."""
    count = 0
    if node.op_type == "Loop":
        _hoist_invariants(node, outer_nodes, set(outputs))
    if node.op_type == "If":
        keep = [i for i, o in enumerate(node.output) if reads[o]]
        if keep and len(keep) < len(node.output):
            for body in _bodies(node):
                kept = [body.output[i] for i in keep]
                del body.output[:]
                body.output.extend(kept)
            kept_names = [node.output[i] for i in keep]
            del node.output[:]
            node.output.extend(kept_names)
    for body in _bodies(node):
        count += _prune(body.node, [o.name for o in body.output])
    return count


def _dead(nodes, reads: Counter) -> list:
    """Indices of the nodes nothing reads, back to front (`reads` is updated)."""
    dead = []
    for index in reversed(range(len(nodes))):
        node = nodes[index]
        if any(reads[out] for out in node.output if out):
            continue
        dead.append(index)
        for name in node.input:
            if name:
                reads[name] -= 1
        for name in subgraph_names(node):
            reads[name] -= 1
    return dead


def _prune(nodes, outputs) -> int:
    """Prune a subgraph's nodes (a repeated field) whose results are `outputs`, in place."""
    reads = _reads(nodes, outputs)
    count = sum(_prune_node(node, reads, nodes, outputs) for node in nodes if _bodies(node))
    dead = _dead(nodes, _reads(nodes, outputs))
    for index in dead:   # back to front
        del nodes[index]
    return count + len(dead)


def remove_dead_nodes(g: LoweredGraph) -> int:
    """Drop unused nodes (and initializers nothing reads any more); return how many nodes."""
    reads = _reads(g.nodes, g.outputs)
    count = sum(_prune_node(node, reads, g.nodes, g.outputs) for node in g.nodes
                if g.has_subgraphs(node))
    g.pinned = set(g.outputs) | {name for node in g.nodes if g.has_subgraphs(node)
                                 for name in subgraph_names(node)}
    reads = _reads(g.nodes, g.outputs)
    dead = _dead(g.nodes, reads)
    g.keep_only(id(g.nodes[i]) for i in dead)
    for name in [n for n in g.initializers if reads[n] <= 0]:
        del g.initializers[name]
    return count + len(dead)
