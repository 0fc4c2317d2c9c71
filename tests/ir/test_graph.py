"""Graph, Node and Value: the mutation verbs keep use-def links right both ways."""

from __future__ import annotations

import numpy as np
import pytest

from tf2ir.ir import Graph, TensorDesc


def uses_are_consistent(graph: Graph) -> bool:
    """Every (node, index) in a value's use list matches node.inputs, and vice versa."""
    expected = {}
    for node in graph.nodes:
        for index, value in enumerate(node.inputs):
            if value is not None:
                expected.setdefault(id(value), []).append((node, index))
    for value in graph.values():
        got = sorted(((n.name, i) for n, i in value.uses))
        want = sorted(((n.name, i) for n, i in expected.pop(id(value), [])))
        if got != want:
            return False
    return not expected  # no node input points at a value the graph does not know


@pytest.fixture
def chain():
    """x → Relu(a) → Neg(b) → output, plus a constant feeding Add(c)."""
    g = Graph()
    x = g.add_input("x", TensorDesc("float32", (2, 3)))
    a = g.add_node("Relu", [x], name="a")
    b = g.add_node("Neg", [a.outputs[0]], name="b")
    w = g.add_const(np.ones((2, 3), np.float32), "w")
    c = g.add_node("Add", [b.outputs[0], w], name="c")
    g.outputs.append(c.outputs[0])
    return g, x, a, b, w, c


def test_add_node_links_inputs_and_outputs(chain):
    g, x, a, b, w, c = chain
    assert [n.name for n in g.nodes] == ["a", "b", "w", "c"]
    assert x.uses == [(a, 0)]
    assert a.outputs[0].producer is a and a.outputs[0].index == 0
    assert a.outputs[0].uses == [(b, 0)]
    assert w.uses == [(c, 1)]
    assert c.inputs == [b.outputs[0], w]
    assert a.graph is g
    assert uses_are_consistent(g)


def test_add_node_names_are_unique_and_outputs_numbered():
    g = Graph()
    first = g.add_node("Split", num_outputs=3, name="s")
    second = g.add_node("Split", num_outputs=2, name="s")
    assert first.name == "s" and second.name != "s"
    assert [v.name for v in first.outputs] == ["s", "s:1", "s:2"]
    assert [v.index for v in first.outputs] == [0, 1, 2]
    assert len({v.name for v in g.values()}) == 5
    assert g.value("s:2") is first.outputs[2]
    default = g.add_node("Relu")
    assert default.name == "Relu"


def test_add_node_with_explicit_output_descs():
    g = Graph()
    desc = TensorDesc("int64", (None, 4), "NHWC", "NHWC")
    node = g.add_node("Shape", output_names=["shape_out"], output_descs=[desc])
    assert node.outputs[0].name == "shape_out"
    assert node.outputs[0].desc is desc


def test_add_node_with_absent_optional_input():
    g = Graph()
    x = g.add_input("x", TensorDesc("float32", (2, 2)))
    node = g.add_node("Pad", [x, None, None])
    assert node.inputs == [x, None, None]
    assert x.uses == [(node, 0)]


def test_add_const_records_value_and_desc():
    g = Graph()
    v = g.add_const(np.arange(6, dtype=np.int32).reshape(2, 3), "k", fmt="NHWC")
    assert v.producer.op_type == "Const"
    assert v.desc.dtype == "int32" and v.desc.shape == (2, 3)
    assert v.desc.format == "NHWC" and v.desc.origin_format == "NHWC"
    np.testing.assert_array_equal(v.const_value, np.arange(6).reshape(2, 3))
    scalar = g.add_const(np.int64(7), "s")
    assert scalar.desc.dtype == "int64" and scalar.desc.shape == ()
    flag = g.add_const(np.array([True, False]), "flag")
    assert flag.desc.dtype == "bool"


def test_const_value_is_none_for_non_const(chain):
    g, x, a, *_ = chain
    assert x.const_value is None
    assert a.outputs[0].const_value is None


def test_replace_all_uses_with_moves_every_use(chain):
    g, x, a, b, w, c = chain
    # b and c both start using x where they used a's output; c's output is a graph output.
    g.set_input(c, 0, a.outputs[0])
    old = a.outputs[0]
    assert sorted(n.name for n, _ in old.uses) == ["b", "c"]
    g.replace_all_uses_with(old, x)
    assert old.uses == []
    assert b.inputs[0] is x and c.inputs[0] is x
    assert sorted((n.name, i) for n, i in x.uses) == [("a", 0), ("b", 0), ("c", 0)]
    assert uses_are_consistent(g)


def test_replace_all_uses_with_updates_graph_outputs(chain):
    g, x, a, b, w, c = chain
    other = g.add_node("Sub", [b.outputs[0], w], name="other")
    g.replace_all_uses_with(c.outputs[0], other.outputs[0])
    assert g.outputs == [other.outputs[0]]
    g.erase_node(c)       # now unused, so it may go
    assert c not in g.nodes and uses_are_consistent(g)


def test_replace_all_uses_with_itself_keeps_uses(chain):
    g, x, a, b, w, c = chain
    before = list(x.uses)
    g.replace_all_uses_with(x, x)
    assert x.uses == before
    assert uses_are_consistent(g)


def test_set_input_rewires_one_port(chain):
    g, x, a, b, w, c = chain
    g.set_input(c, 1, x)
    assert w.uses == []
    assert (c, 1) in x.uses
    g.set_input(c, 1, None)
    assert c.inputs[1] is None and (c, 1) not in x.uses
    assert uses_are_consistent(g)


def test_erase_node_drops_uses_and_names(chain):
    g, x, a, b, w, c = chain
    dead = g.add_node("Exp", [x, w], name="dead")
    assert (dead, 0) in x.uses
    g.erase_node(dead)
    assert dead not in g.nodes
    assert (dead, 0) not in x.uses and (dead, 1) not in w.uses
    assert not g.has_value("dead")
    # The node name is free again.
    assert g.add_node("Exp", [x], name="dead").name == "dead"
    assert uses_are_consistent(g)


def test_erase_node_refuses_a_used_node(chain):
    g, x, a, b, w, c = chain
    with pytest.raises(ValueError, match="'a'"):
        g.erase_node(a)
    with pytest.raises(ValueError, match="'c'"):
        g.erase_node(c)        # its output is a graph output
    assert a in g.nodes and c in g.nodes
    assert uses_are_consistent(g)


def test_rewrite_then_erase(chain):
    """The fx-style rewrite: replace Neg(Relu(x)) by one new node, erase the old ones."""
    g, x, a, b, w, c = chain
    fused = g.add_node("Elu", [x], name="fused")
    g.replace_all_uses_with(b.outputs[0], fused.outputs[0])
    g.erase_node(b)
    g.erase_node(a)
    assert [n.name for n in g.nodes] == ["w", "c", "fused"]
    assert c.inputs[0] is fused.outputs[0]
    assert x.uses == [(fused, 0)]
    assert uses_are_consistent(g)
    assert not g.is_topologically_sorted()
    g.toposort()
    assert g.is_topologically_sorted()
    assert [n.name for n in g.nodes].index("fused") < [n.name for n in g.nodes].index("c")


def test_rename_value(chain):
    g, x, a, b, w, c = chain
    g.rename_value(a.outputs[0], "relu_out")
    assert a.outputs[0].name == "relu_out"
    assert g.value("relu_out") is a.outputs[0]
    assert not g.has_value("a")
    g.rename_value(a.outputs[0], "relu_out")  # renaming to its own name is a no-op
    with pytest.raises(ValueError, match="taken"):
        g.rename_value(a.outputs[0], "x")
    assert a.outputs[0].name == "relu_out" and g.value("x") is x


def test_new_value_names_avoid_taken_names():
    g = Graph()
    g.add_input("v", TensorDesc("float32", (1,)))
    node = g.add_node("Relu", [g.value("v")], name="n", output_names=["v"])
    assert node.outputs[0].name == "v_1"


def test_toposort_orders_producers_first():
    g = Graph()
    x = g.add_input("x", TensorDesc("float32", (1,)))
    # Build consumers before producers by rewiring after creation.
    last = g.add_node("Neg", [x], name="last")
    mid = g.add_node("Exp", [x], name="mid")
    first = g.add_node("Relu", [x], name="first")
    g.set_input(mid, 0, first.outputs[0])
    g.set_input(last, 0, mid.outputs[0])
    unrelated = g.add_node("Abs", [x], name="unrelated")
    assert not g.is_topologically_sorted()
    g.toposort()
    names = [n.name for n in g.nodes]
    assert names.index("first") < names.index("mid") < names.index("last")
    assert set(names) == {"first", "mid", "last", "unrelated"}
    assert g.is_topologically_sorted()
    assert unrelated in g.nodes


def test_toposort_is_stable_for_sorted_graphs(chain):
    g = chain[0]
    before = [n.name for n in g.nodes]
    g.toposort()
    assert [n.name for n in g.nodes] == before


def test_toposort_detects_cycles():
    g = Graph("loopy")
    x = g.add_input("x", TensorDesc("float32", (1,)))
    a = g.add_node("Relu", [x], name="a")
    b = g.add_node("Neg", [a.outputs[0]], name="b")
    g.set_input(a, 0, b.outputs[0])
    with pytest.raises(ValueError, match="cycle"):
        g.toposort()


def test_tensor_desc_helpers():
    desc = TensorDesc("float32", (None, 3))
    assert desc.rank == 2 and not desc.is_fully_known()
    assert TensorDesc("float32", None).rank is None
    assert TensorDesc("float32", ()).is_fully_known()
    desc.set_format("NCHW", "NHWC")
    assert (desc.format, desc.origin_format) == ("NCHW", "NHWC")
    assert str(desc) == "float32[?,3] NCHW origin=NHWC"
    with pytest.raises(ValueError, match="unknown format"):
        desc.set_format("XYZ")
    assert str(TensorDesc("int32", None)) == "int32[*]"


def test_insertion_points_place_new_nodes():
    g = Graph()
    x = g.add_input("x", TensorDesc("float32", (2,)))
    a = g.add_node("Relu", [x], name="a")
    b = g.add_node("Relu", [a.outputs[0]], name="b")
    with g.inserting_before(b):
        p = g.add_node("Relu", [a.outputs[0]], name="p")
        q = g.add_node("Relu", [p.outputs[0]], name="q")
    with g.inserting_after(a):
        r = g.add_node("Relu", [a.outputs[0]], name="r")
    g.add_node("Relu", [b.outputs[0]], name="end")
    assert [n.name for n in g.nodes] == ["a", "r", "p", "q", "b", "end"]
    assert q.graph is g and r.outputs[0].uses == []
