"""Concat flattening on the lowered ONNX graph: a Concat whose input is another Concat on
the same axis, read by it alone, takes that Concat's inputs in its place (Inception's
branches concatenated twice).

The outer Concat is rewired before the inner one goes, through the graph's verbs: removing
a Concat whose output is still read raises at once (issue 20: a one-input inner Concat
keeps the outer input count, and a count-based check left the outer one reading it)."""

from __future__ import annotations

from typing import List

from tf2ir.ir.onnx.graph import OnnxGraph


def flatten_concats(g: OnnxGraph) -> int:
    """Splice single-use inner Concats of the same axis into their outer Concat; return how
    many inner Concats went."""
    concats = g.of_type("Concat")
    if len(concats) < 2:
        return 0
    removed = 0
    for outer in concats:          # graph order: inner Concats are flattened first
        if outer.graph is not g:
            continue
        axis = outer.attr("axis")
        if axis is None:
            continue
        rank = g.rank(outer.output[0])
        inputs: List[str] = []
        spliced = []
        for name in outer.input:
            inner = g.producer(name)
            if inner is not None and inner.op_type == "Concat" and inner.standard \
                    and g.only_user(name) is outer \
                    and _same_axis(inner.attr("axis"), axis, rank):
                inputs.extend(inner.input)
                spliced.append(inner)
            else:
                inputs.append(name)
        if spliced:
            g.set_inputs(outer, inputs)
            for inner in spliced:
                g.remove(inner)          # unread now (the verb refuses otherwise)
            removed += len(spliced)
    return removed


def _same_axis(a, b, rank) -> bool:
    if a is None:
        return False
    if a == b:
        return True
    return rank is not None and a % rank == b % rank
