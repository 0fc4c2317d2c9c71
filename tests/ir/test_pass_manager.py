"""The one pass manager: computed order, one switch grammar (the last word wins), repeat
until stable, and checks after each pass that name the pass that broke the graph."""

from __future__ import annotations

import pytest

from tf2ir.ir import ConversionError, Graph, TensorDesc
from tf2ir.ir.passes import IR_PASSES
from tf2ir.ir.passes.manager import (
    PassManager, PassRecord, describe_passes, order_passes, resolve_switches,
)


def record(name, run=lambda g: 0, **kw) -> PassRecord:
    return PassRecord(name, kw.pop("kind", "ir"), run, **kw)


def test_order_follows_after_and_before_then_the_given_order():
    passes = [record("c"), record("a", after=("c",)), record("b", before=("c",)),
              record("d", after=("missing",))]
    assert [p.name for p in order_passes(passes)] == ["b", "c", "a", "d"]
    with pytest.raises(ConversionError, match="cycle"):
        order_passes([record("x", after=("y",)), record("y", after=("x",))])
    with pytest.raises(ConversionError, match="unique"):
        order_passes([record("x"), record("x", plugin="other")])


@pytest.mark.parametrize("words, expected", [
    (None, {"a", "b"}),
    ("off:all", set()),
    ("on:c,off:all", set()),                 # the last word wins ...
    ("off:all,on:c", {"c"}),                 # ... in this order too
    (["off:a", "on:a"], {"a", "b"}),         # repeated options read left to right
    ({"c": True, "all": False}, {"c"}),      # a dict: 'all' first, then the names
])
def test_one_switch_grammar(words, expected):
    passes = [record("a"), record("b"), record("c", default=False)]
    state = resolve_switches(passes, words, "--fusion")
    assert {name for name, on in state.items() if on} == expected


@pytest.mark.parametrize("word, needle", [
    ("a", "bad --passes value 'a'"), ("on:", "bad --passes value"),
    ("on:a,,off:b", "bad --passes value ''"), ("off:zzz", "unknown pass 'zzz'"),
    ("off:keep", "cannot be switched off")])
def test_bad_words_are_usage_errors(word, needle):
    passes = [record("a"), record("b"), record("keep", required=True)]
    with pytest.raises(ConversionError, match=needle) as info:
        resolve_switches(passes, word, "--passes")
    assert info.value.exit_code == 2


def test_required_passes_survive_off_all():
    passes = [record("a"), record("keep", required=True)]
    assert resolve_switches(passes, "off:all") == {"a": False, "keep": True}
    assert "(always)" in describe_passes(passes)


def test_a_repeating_pass_runs_until_it_rewrites_nothing():
    work = {"left": 3, "calls": 0}

    def step(graph):
        work["calls"] += 1
        if work["left"]:
            work["left"] -= 1
            return 1
        return 0
    manager = PassManager([record("step", step, repeat=True), record("once", step)])
    counts = manager.run(object())
    assert counts == {"step": 3, "once": 0} and work["calls"] == 5


def test_kind_filter_runs_only_that_kind():
    ran = []
    manager = PassManager([record("f", lambda g: ran.append("f") or 0, kind="fusion"),
                           record("o", lambda g: ran.append("o") or 0, kind="onnx")])
    manager.run(object(), kind="onnx")
    assert ran == ["o"]


def _graph_with_relu() -> Graph:
    graph = Graph("g")
    x = graph.add_input("x", TensorDesc("float32", (2,)))
    relu = graph.add_node("Relu", [x], output_descs=[TensorDesc("float32", (2,))])
    graph.outputs = [relu.outputs[0]]
    return graph


def test_checks_after_each_pass_name_the_pass_that_broke_the_graph():
    from tf2ir.ir.verify import check_graph

    def break_it(graph):
        graph.nodes[0].op_type = "NoSuchOp"      # a pass that leaves an unknown op behind
        return 1
    graph = _graph_with_relu()
    manager = PassManager([*IR_PASSES, record("breaker", break_it, plugin="my_plugin")],
                          check=check_graph)
    with pytest.raises(ConversionError) as info:
        manager.run(graph, kind="ir")
    message = str(info.value)
    assert "after ir pass breaker" in message and "NoSuchOp" in message
    assert info.value.plugin == "my_plugin"
    # Without the check the broken graph goes on unnoticed: the check is what catches it.
    PassManager([record("breaker", break_it)]).run(_graph_with_relu(), kind="ir")
