"""Concat flattening on the lowered ONNX graph: a Concat whose input is another Concat on
the same axis, read by it alone, takes that Concat's inputs in its place (Inception's
branches concatenated twice)."""

from __future__ import annotations

from tf2ir.ir.onnx.passes.lowered import LoweredGraph, attr_value


def flatten_concats(g: LoweredGraph) -> int:
    """Splice single-use inner Concats of the same axis into their outer Concat; return how
    many inner Concats went."""
    concats = [n for n in g.nodes if n.op_type == "Concat" and n.domain in ("", "ai.onnx")]
    if len(concats) < 2:
        return 0
    users, producers = g.consumers(), g.producers()
    dead: set = set()
    for outer in concats:          # topological order: inner Concats are flattened first
        axis = attr_value(outer, "axis")
        rank = g.rank(outer.output[0])
        inputs = []
        for name in outer.input:
            inner = producers.get(name)
            if inner is not None and inner.op_type == "Concat" and id(inner) not in dead \
                    and inner.domain in ("", "ai.onnx") and name not in g.pinned \
                    and len(users.get(name, [])) == 1 and axis is not None \
                    and _same_axis(attr_value(inner, "axis"), axis, rank):
                inputs.extend(inner.input)
                dead.add(id(inner))
                for moved in inner.input:
                    users[moved] = [outer if u is inner else u for u in users.get(moved, [])]
            else:
                inputs.append(name)
        if inputs != list(outer.input):     # (a one-input inner Concat keeps the count)
            del outer.input[:]
            outer.input.extend(inputs)
    g.keep_only(dead)
    return len(dead)


def _same_axis(a, b, rank) -> bool:
    if a is None:
        return False
    if a == b:
        return True
    return rank is not None and a % rank == b % rank
