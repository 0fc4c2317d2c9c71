"""Dead-code elimination on the lowered ONNX graph: nodes none of whose outputs is read
(by a later node, a subgraph, or as a graph output) are dropped, back to front. Inside
If/Loop bodies too, and an If output nothing reads leaves both branches (with what only it
needed), and a Loop variable that the body passes through unchanged becomes a read of the
Loop's input (ONNX bodies see the outer scope). TF's lowering prunes the same, so a model
converted from a SavedModel and from a .pb frozen the TF default way come out the same.

One walk from the last node to the first: a node is looked at when every reader of its
outputs has been, so a dead chain goes whole, and a subgraph owner's bodies are pruned
before the names they read are judged. A body is pruned as a graph of its own (an OnnxGraph
of its nodes, the outer names open) and written back as a new GraphProto."""

from __future__ import annotations

from collections import Counter
from typing import Callable, List, Optional, Sequence

import onnx

from tf2ir.ir.onnx.graph import GraphInvariantError, OnnxGraph, OnnxNode, graph_reads


def remove_dead_nodes(g: OnnxGraph) -> int:
    """Drop unused nodes (and initializers nothing reads any more); return how many nodes."""
    count = _prune(g)
    pinned = g.pinned
    for name in [n for n in g.initializers if not g.use_count(n) and n not in pinned]:
        del g.initializers[name]
    return count


def _prune(g: OnnxGraph) -> int:
    """Remove the dead nodes of `g`, back to front, pruning subgraph owners on the way."""
    outputs = set(g.outputs)
    # names the bodies of subgraph owners read, counted per owner (kept as owners go)
    inner: Counter = Counter()
    for node in g:
        if node.subgraphs:
            inner.update(_reads(node))
    count = 0
    for node in reversed(g.nodes):
        if node.graph is not g:
            continue
        if not any(o and (g.use_count(o) or o in outputs or inner[o]) for o in node.output):
            if node.subgraphs:
                inner.subtract(_reads(node))
            g.remove(node)
            count += 1
        elif node.subgraphs:
            inner.subtract(_reads(node))
            node, pruned = _prune_owner(g, node, lambda o: bool(
                g.use_count(o) or o in outputs or inner[o]))
            inner.update(_reads(node))
            count += pruned
    return count


def _reads(node: OnnxNode) -> set:
    names: set = set()
    for sub in node.subgraphs:
        names |= graph_reads(sub)
    return names


def _prune_owner(g: OnnxGraph, node: OnnxNode, read: Callable[[str], bool]):
    """Hoist a Loop's pass-through variables, drop an If's unread outputs, prune the bodies;
    return the node (a new one where its inputs or outputs changed) and the inner nodes
    removed."""
    if node.standard and node.op_type == "Loop":
        node = _hoist_invariants(g, node)
    if node.standard and node.op_type == "If":
        keep = [i for i, o in enumerate(node.output) if o and read(o)]
        if keep and len(keep) < len(node.output):
            attrs = dict(node.attrs)
            for key in ("then_branch", "else_branch"):
                body = node.attr(key)
                if isinstance(body, onnx.GraphProto):
                    attrs[key] = _body(body, outputs=[body.output[i] for i in keep])
            node = _replace(g, node, node.input, [node.output[i] for i in keep], attrs)
    count = 0
    for key in sorted(node.attrs):
        body = node.attr(key)
        if not isinstance(body, onnx.GraphProto):
            continue
        sub = _body_graph(body, g.fresh)
        removed = _prune(sub) if sub is not None else 0
        if removed:
            assert sub is not None       # removed is 0 without a body graph
            g.set_attr(node, key, _body(body, nodes=sub.to_protos()))
            count += removed
    return node, count


def _hoist_invariants(g: OnnxGraph, loop: OnnxNode) -> OnnxNode:
    """Remove the loop-carried variables the body returns unchanged: the body (and whoever
    read the Loop's output for one) reads the Loop's input instead."""
    body = loop.attr("body")
    if not isinstance(body, onnx.GraphProto) or len(body.input) != len(loop.input):
        return loop
    producers = {o: n for n in body.node for o in n.output}
    candidates = []
    for k in range(len(loop.input) - 2):
        if k >= len(loop.output) or 1 + k >= len(body.output):
            break
        arg, result, outer = body.input[2 + k].name, body.output[1 + k].name, loop.input[2 + k]
        source = producers.get(result)
        passes = result == arg or (source is not None and source.op_type == "Identity"
                                   and list(source.input) == [arg])
        if passes and outer and not (loop.output[k] and g.is_pinned(loop.output[k])):
            candidates.append(k)
    if not candidates:
        return loop
    dropped_outputs = {1 + k for k in candidates}
    sub = _body_graph(body, g.fresh, outputs=[o.name for i, o in enumerate(body.output)
                                              if i not in dropped_outputs])
    if sub is None:
        return loop
    hoisted = []
    for k in candidates:
        arg, outer = body.input[2 + k].name, loop.input[2 + k]
        if sub.is_pinned(arg):      # another body output, or a nested body, reads it
            continue
        sub.replace_uses(arg, outer)
        if loop.output[k]:
            g.replace_uses(loop.output[k], outer)
        hoisted.append(k)
    if not hoisted:
        return loop
    gone = set(hoisted)
    inputs = [n for i, n in enumerate(loop.input) if i - 2 not in gone]
    outputs = [n for i, n in enumerate(loop.output) if i not in gone]
    attrs = dict(loop.attrs)
    attrs["body"] = _body(body, nodes=sub.to_protos(),
                          inputs=[v for i, v in enumerate(body.input) if i - 2 not in gone],
                          outputs=[v for i, v in enumerate(body.output) if i - 1 not in gone])
    return _replace(g, loop, inputs, outputs, attrs)


def _replace(g: OnnxGraph, node: OnnxNode, inputs: Sequence[str], outputs: Sequence[str],
             attrs: dict) -> OnnxNode:
    """A node like `node` of these inputs, outputs and attributes in its stead."""
    g.remove(node, keep_uses=True)
    return g.add_node(node.op_type, inputs, list(outputs), domain=node.domain, name=node.name,
                      **attrs)


def _body_graph(body: onnx.GraphProto, fresh: Callable[[str], str],
                outputs: Optional[List[str]] = None) -> Optional[OnnxGraph]:
    """The nodes of `body` as a graph (names it does not produce are outer ones), or None
    where they are not in order."""
    try:
        return OnnxGraph.from_protos(body.node, fresh, inputs=[v.name for v in body.input],
                                     outputs=outputs if outputs is not None
                                     else [v.name for v in body.output], open_scope=True)
    except GraphInvariantError:
        return None


def _body(body: onnx.GraphProto, nodes=None, inputs=None, outputs=None) -> onnx.GraphProto:
    """A copy of `body` with these nodes, inputs (ValueInfoProtos) and outputs."""
    new = onnx.GraphProto()
    new.CopyFrom(body)
    for field, values in (("node", nodes), ("input", inputs), ("output", outputs)):
        if values is not None:
            new.ClearField(field)
            getattr(new, field).extend(values)
    return new
