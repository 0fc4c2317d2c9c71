"""The parser's per-node work stays linear (issue 22, "Linear and lean"): the graph view
reads inputs without a call per plain name, and a GraphDef whose nodes come after their
inputs (the usual file) is kept in file order without the heap sort."""

from __future__ import annotations

import random

import pytest
from tensorboard.compat.proto import graph_pb2

from tf2ir.ir import toposort
from tf2ir.parser.graph_view import TfGraph, split_tensor_name


def _graph(edges, order):
    """A GraphDef of the nodes `order` (file order), node b reading each a of (a, b)."""
    graph_def = graph_pb2.GraphDef()
    for name in order:
        node = graph_def.node.add(name=name, op="Placeholder" if not any(
            b == name for _, b in edges) else "AddN")
        node.input.extend(a for a, b in edges if b == name)
    return graph_def


def test_inputs_are_split_as_split_tensor_name_splits_them():
    graph_def = graph_pb2.GraphDef()
    for name in ("a", "b", "c", "odd:x", "d"):
        graph_def.node.add(name=name, op="Placeholder")
    graph_def.node.add(name="n", op="AddN", input=["a", "b:1", "^c", "odd:x", "d:0", "^b"])
    node = TfGraph(graph_def)["n"]
    assert node.inputs == [("a", 0), ("b", 1), split_tensor_name("odd:x"), ("d", 0)]
    assert node.inputs[2] == ("odd:x", 0)
    assert node.control_inputs == ["c", "b"]


def test_a_graph_in_file_order_is_kept_without_the_heap_sort(monkeypatch):
    edges = [("x", "a"), ("a", "b"), ("x", "b"), ("b", "c"), ("y", "d")]
    graph = TfGraph(_graph(edges, ["x", "y", "a", "b", "d", "c", "unused"]))

    def refuse(*_args, **_kwargs):
        raise AssertionError("the heap sort ran on a graph already in order")
    monkeypatch.setattr(toposort, "lexicographic_order", refuse)
    assert graph.upstream(["c", "d"]) == ["x", "y", "a", "b", "d", "c"]
    assert graph.upstream(["b"]) == ["x", "a", "b"]


@pytest.mark.parametrize("seed", range(30))
def test_upstream_is_the_lexicographic_order_by_file_position(seed):
    rng = random.Random(seed)
    names = [f"n{i}" for i in range(12)]
    edges = [(names[i], names[j]) for j in range(12) for i in range(j)
             if rng.random() < 0.25]
    order = names[:] if seed % 3 == 0 else rng.sample(names, len(names))   # some shuffled
    graph = TfGraph(_graph(edges, order))
    roots = rng.sample(names, 3)
    needed, stack = set(), list(roots)
    while stack:
        name = stack.pop()
        if name not in needed:
            needed.add(name)
            stack.extend(a for a, b in edges if b == name)
    expected = toposort.lexicographic_order(
        needed, [(a, b) for a, b in edges if b in needed], key=order.index)
    assert graph.upstream(roots) == expected


def test_a_conversion_collects_garbage_in_batches_and_restores_the_thresholds(monkeypatch):
    """Collecting the young generation every 700 new objects walked the growing IR again
    and again (a third of the chain's mapping); a conversion widens it, then restores it."""
    import gc

    from tf2ir.parser import convert as convert_module
    from tf2ir.parser.pipeline import GC_GEN0_THRESHOLD, convert_graph_def, few_collections
    seen = []
    real = convert_module.Converter.run

    def run(self, *args, **kwargs):
        seen.append(gc.get_threshold())
        return real(self, *args, **kwargs)
    monkeypatch.setattr(convert_module.Converter, "run", run)
    graph_def = graph_pb2.GraphDef()
    node = graph_def.node.add(name="x", op="Placeholder")
    node.attr["dtype"].type = 1
    node.attr["shape"].shape.dim.add(size=2)
    graph_def.node.add(name="r", op="Relu", input=["x"]).attr["T"].type = 1
    saved = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        convert_graph_def(graph_def, "m")
        assert seen == [(GC_GEN0_THRESHOLD, 10, 10)]
        assert gc.get_threshold() == (700, 10, 10)
        with few_collections():   # nested: the outer setting holds, the caller's comes back
            with few_collections():
                assert gc.get_threshold() == (GC_GEN0_THRESHOLD, 10, 10)
            assert gc.get_threshold() == (GC_GEN0_THRESHOLD, 10, 10)
        assert gc.get_threshold() == (700, 10, 10)
    finally:
        gc.set_threshold(*saved)
