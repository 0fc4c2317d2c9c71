"""The text IR: save → load → save gives identical bytes; malformed files name the line."""

from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest

from tf2ir.ir import ConversionError, Graph, TensorDesc, op_prototype
from tf2ir.ir import text as ir_text
from tf2ir.ir.infer import infer_graph

ALL_ATTRS_OP = "TextTestAllAttrs"


@pytest.fixture(autouse=True)
def all_attrs_prototype(extra_prototypes):
    """A prototype declaring one attribute of every stored type (removed afterwards)."""
    proto = (op_prototype(ALL_ATTRS_OP, "test op with one attribute of each type")
             .input("x").output("y")
             .attr("i", "int").attr("f", "float").attr("small", "float").attr("b", "bool")
             .attr("s", "str").attr("dt", "dtype").attr("is_", "ints").attr("fs", "floats")
             .attr("ss", "strs").attr("bs", "bools").attr("shp", "shape")
             .attr("unknown_shape", "shape", None).attr("t", "tensor")
             .attr("fn", "func", "body"))
    proto.infer(lambda node: [node.inputs[0].desc])
    extra_prototypes(proto)
    return proto


def build_graph() -> Graph:
    g = Graph("main")
    x = g.add_input("x", TensorDesc("float32", (None, 8, 8, 3), "NHWC", "NHWC"))
    u = g.add_input("u", TensorDesc("float32", None))
    spaced = g.add_input("in put", TensorDesc("int32", (2,)))
    w = g.add_const(np.arange(3 * 3 * 3 * 4, dtype=np.float32).reshape(3, 3, 3, 4) / 7, "w", "HWCN")
    ints = g.add_const(np.array([5, -6], np.int32), "ints")
    flags = g.add_const(np.array([[True, False], [False, True]]), "flags")
    axis = g.add_const(np.int64(3), "axis")
    words = g.add_const(np.array([b"ab", b"c\xff"], dtype=object), "words")
    empty = g.add_const(np.zeros((0, 2), np.float32), "empty")
    conv = g.add_node("Conv2D", [x, w, None], {
        "strides": [1, 1, 1, 1], "padding": "SAME", "dilations": [1, 1, 1, 1],
        "data_format": "NHWC", "explicit_paddings": []}, name="conv")
    conv.outputs[0].desc = TensorDesc("float32", (None, 8, 8, 4), "NHWC", "NHWC")
    concat = g.add_node("ConcatV2", [conv.outputs[0], conv.outputs[0], conv.outputs[0], axis],
                        {"N": 3}, name="concat")
    concat.outputs[0].desc = TensorDesc("float32", (None, 8, 8, 12), "NCHW", "NHWC")
    pack = g.add_node("Pack", [ints, spaced], {"axis": 0, "N": 2}, name="pack")
    pack.outputs[0].desc = TensorDesc("int32", (2, 2))
    everything = g.add_node(ALL_ATTRS_OP, [u], {
        "i": -3, "f": 2.5, "small": 1e-05, "b": True, "s": 'quote " and unicode \u00e9',
        "dt": "int64", "is_": [1, 2, 3], "fs": [0.5, 1e-05], "ss": ["a", "b c"],
        "bs": [True, False], "shp": (None, 3, None), "unknown_shape": None,
        "t": np.array([[1.5, 2.5]], np.float32), "fn": "body"}, name='all "attrs"')
    everything.outputs[0].desc = TensorDesc("float32", None)
    # An op without a prototype: attribute types are inferred from the values.
    extra = g.add_node("SomeCustomOp", [x, None], {
        "count": 4, "eps": 1e-05, "flag": False, "mode": "fast", "sizes": [3, 4],
        "scales": [1.0, 0.25], "names": ["p", "q"], "table": np.arange(5, dtype=np.int64),
        "data_format": "NHWC"}, name="custom", num_outputs=2)
    extra.outputs[0].desc = TensorDesc("float32", (None, 8, 8, 3), "NHWC", "NHWC")
    extra.outputs[1].desc = TensorDesc("int64", (), "ND", "NHWC")
    call = g.add_node("PartitionedCall", [x, concat.outputs[0]],
                      {"original_type": "FusedThing"}, name="call")
    call.outputs[0].desc = TensorDesc("float32", (None, 8, 8, 3))
    body = Graph("body")
    a = body.add_input("a", TensorDesc("float32", (None, 8, 8, 3), "NHWC", "NHWC"))
    body.add_input("b", TensorDesc("float32", (None, 8, 8, 12)))
    scale = body.add_const(np.full((3,), 0.5, np.float32), "scale")
    mul = body.add_node("Mul", [a, scale], name="mul")
    mul.outputs[0].desc = TensorDesc("float32", (None, 8, 8, 3))
    body.outputs.append(mul.outputs[0])
    call.subgraphs["body"] = body
    g.outputs.extend([call.outputs[0], pack.outputs[0], everything.outputs[0],
                      extra.outputs[1], flags, words, empty])
    return g


def read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def test_save_load_save_gives_identical_bytes(tmp_path):
    first, second = str(tmp_path / "a.ir"), str(tmp_path / "b.ir")
    ir_text.save(build_graph(), first)
    ir_text.save(ir_text.load(first), second)
    assert read(first) == read(second)
    assert read(first + ".weights") == read(second + ".weights")
    assert os.path.getsize(first + ".weights") > 0
    # No temp files are left behind.
    assert sorted(os.listdir(tmp_path)) == ["a.ir", "a.ir.weights", "b.ir", "b.ir.weights"]


def test_text_shows_ports_formats_and_shapes(tmp_path):
    path = str(tmp_path / "m.ir")
    ir_text.save(build_graph(), path)
    text = read(path).decode()
    lines = text.split("\n")
    assert lines[0] == "tf2ir-ir 1"
    assert "input %x: float32[?,8,8,3] NHWC" in text
    assert "input %u: float32[*]" in text
    assert 'input %"in put": int32[2]' in text
    assert "ConcatV2(x0=%conv, x1=%conv, x2=%conv, concat_dim=%axis)" in text
    assert "Pack(x0=%ints, x1=%\"in put\")" in text
    assert "Conv2D(x=%x, filter=%w, bias=_)" in text
    assert "%w: float32[3,3,3,4] HWCN" in text
    assert "%concat: float32[?,8,8,12] NCHW origin=NHWC" in text
    assert '%"custom:1": int64[] ND origin=NHWC' in text
    assert "SomeCustomOp(in0=%x, in1=_)" in text
    assert "small: float 1e-05" in text and "eps: float 1e-05" in text
    assert 'shp: shape [null, 3, null]' in text and "unknown_shape: shape null" in text
    assert 'dt: dtype "int64"' in text
    assert 'subgraph "body" graph "body" {' in text
    assert "output %call" in text


def test_loaded_graph_matches_the_original(tmp_path):
    path = str(tmp_path / "m.ir")
    original = build_graph()
    ir_text.save(original, path)
    loaded = ir_text.load(path)
    assert [n.name for n in loaded.nodes] == [n.name for n in original.nodes]
    assert [n.op_type for n in loaded.nodes] == [n.op_type for n in original.nodes]
    for old, new in zip(original.nodes, loaded.nodes):
        assert [None if v is None else v.name for v in new.inputs] == \
            [None if v is None else v.name for v in old.inputs]
        assert [(v.name, v.desc) for v in new.outputs] == [(v.name, v.desc) for v in old.outputs]
        assert set(new.attrs) == set(old.attrs)
        for key, value in old.attrs.items():
            got = new.attrs[key]
            if isinstance(value, np.ndarray):
                assert got.dtype == value.dtype and got.shape == value.shape
                np.testing.assert_array_equal(got, value)
            elif isinstance(value, tuple) and key == "shp":
                assert got == value
            else:
                assert list(got) == list(value) if isinstance(value, (list, tuple)) else got == value
    assert [v.name for v in loaded.inputs] == ["x", "u", "in put"]
    assert loaded.value("u").desc.shape is None
    assert loaded.value("x").desc == TensorDesc("float32", (None, 8, 8, 3), "NHWC", "NHWC")
    assert [v.name for v in loaded.outputs] == [v.name for v in original.outputs]
    np.testing.assert_array_equal(loaded.value("w").const_value, original.value("w").const_value)
    assert loaded.value("axis").const_value.dtype == np.int64
    assert loaded.value("axis").const_value.shape == () and loaded.value("axis").const_value == 3
    assert loaded.value("flags").const_value.dtype == np.bool_
    assert list(loaded.value("words").const_value) == [b"ab", b"c\xff"]
    assert loaded.value("empty").const_value.shape == (0, 2)
    # Use lists are rebuilt.
    conv = loaded.value("conv")
    assert sorted(i for _, i in conv.uses) == [0, 1, 2]
    assert loaded.value("x").uses[0][0].name == "conv"
    # The subgraph comes back under its key, owned by the node.
    call = next(n for n in loaded.nodes if n.name == "call")
    body = call.subgraphs["body"]
    assert body.name == "body" and [n.op_type for n in body.nodes] == ["Const", "Mul"]
    assert [v.name for v in body.inputs] == ["a", "b"] and body.outputs[0].name == "mul"
    np.testing.assert_array_equal(body.value("scale").const_value, np.full(3, 0.5, np.float32))


def test_weights_are_aligned_and_viewed(tmp_path):
    path = str(tmp_path / "m.ir")
    ir_text.save(build_graph(), path)
    text = read(path).decode()
    offsets = [json.loads(m)["offset"] for m in re.findall(r'value: tensor (\{[^}]*"offset"[^}]*\})', text)]
    assert offsets and all(o % 64 == 0 for o in offsets)
    loaded = ir_text.load(path)
    w = loaded.value("w").const_value
    assert not w.flags.owndata  # a view of the weights file, not a copy


def test_round_trip_after_verification(tmp_path):
    """A verified graph (defaults filled in, descs inferred) also round-trips byte for byte."""
    g = Graph()
    x = g.add_input("x", TensorDesc("float32", (1, 5, 5, 2), "NHWC", "NHWC"))
    w = g.add_const(np.ones((3, 3, 2, 4), np.float32), "w", "HWCN")
    conv = g.add_node("Conv2D", [x, w, None], {"strides": [1, 2, 2, 1], "padding": "VALID"}, name="conv")
    act = g.add_node("LeakyRelu", [conv.outputs[0]], {"alpha": 1}, name="act")
    g.outputs.append(act.outputs[0])
    infer_graph(g)
    assert conv.attrs["dilations"] == [1, 1, 1, 1] and act.attrs["alpha"] == 1.0
    first, second = str(tmp_path / "a.ir"), str(tmp_path / "b.ir")
    ir_text.save(g, first)
    ir_text.save(ir_text.load(first), second)
    assert read(first) == read(second)
    assert "conv: float32[1,2,2,4] NHWC" in read(first).decode()


@pytest.mark.parametrize("attrs", [
    {"scales": [1, 0.5]},                         # mixed ints and floats are floats
    {"sizes": [np.int64(3), np.int64(4)], "n": np.int32(2), "g": np.float32(0.1)},
    {"shape": (None, 3), "unknown_rank": None, "known": (2, 3)},   # what TF shapes decode to
    {"shapes": [(None, 2), None, (4,)]},
    {"flag": np.bool_(True), "empty": []},
], ids=["mixed-floats", "numpy-scalars", "shapes", "shape-list", "bool-empty"])
def test_undeclared_attrs_round_trip(tmp_path, attrs):
    """Attributes no prototype declares (auto mapping appends them unchanged) keep their
    values through save/load, and a second save gives the same bytes."""
    g = Graph()
    x = g.add_input("x", TensorDesc("float32", (1,)))
    node = g.add_node("SomeCustomOp", [x], attrs, name="n")
    g.outputs.append(node.outputs[0])
    first, second = str(tmp_path / "a.ir"), str(tmp_path / "b.ir")
    ir_text.save(g, first)
    loaded = ir_text.load(first)
    ir_text.save(loaded, second)
    assert read(first) == read(second)
    got = loaded.nodes[0].attrs
    for key, value in attrs.items():
        if isinstance(value, (list, tuple)) and key != "shape":
            assert [tuple(v) if isinstance(v, (list, tuple)) else v for v in got[key]] == \
                [tuple(v) if isinstance(v, (list, tuple)) else v for v in value]
        else:
            assert got[key] == value
            assert type(got[key]) is not np.ndarray


def test_declared_attr_values_are_normalised_when_saved(tmp_path):
    """An unverified graph may hold 1 for a float attribute; the text must not depend on it."""
    g = Graph()
    x = g.add_input("x", TensorDesc("float32", (1,)))
    node = g.add_node("LeakyRelu", [x], {"alpha": 1}, name="n")
    g.outputs.append(node.outputs[0])
    first, second = str(tmp_path / "a.ir"), str(tmp_path / "b.ir")
    ir_text.save(g, first)
    ir_text.save(ir_text.load(first), second)
    assert read(first) == read(second)
    assert "alpha: float 1.0" in read(first).decode()


def test_graph_str_is_the_text_form():
    g = build_graph()
    assert str(g).startswith("tf2ir-ir 1\ngraph \"main\" {\n")
    assert str(g) == ir_text.graph_to_text(g)


def _corrupt(tmp_path, find: str, replace: str):
    path = str(tmp_path / "m.ir")
    ir_text.save(build_graph(), path)
    lines = read(path).decode().split("\n")
    number = next(i for i, line in enumerate(lines, start=1) if find in line)
    lines[number - 1] = lines[number - 1].replace(find, replace, 1)
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    return path, number


@pytest.mark.parametrize("find, replace, message", [
    ("-> %conv", "=> %conv", "expected '->'"),
    ("filter=%w", "filter=%nowhere", "unknown value %nowhere"),
    ("input %u", "inptu %u", "unknown statement"),
    ('padding: str "SAME"', 'padding: str SAME', "bad JSON"),
    ("i: int -3", "i: int \"three\"", "attribute i"),
])
def test_malformed_file_names_the_line(tmp_path, find, replace, message):
    path, number = _corrupt(tmp_path, find, replace)
    with pytest.raises(ConversionError) as info:
        ir_text.load(path)
    assert f"line {number}" in str(info.value)
    assert message in str(info.value)


def test_malformed_header_and_braces(tmp_path):
    path = str(tmp_path / "bad.ir")
    with open(path, "w") as f:
        f.write("tf2ir-ir 2\ngraph \"main\" {\n}\n")
    with pytest.raises(ConversionError, match="not a tf2ir IR file"):
        ir_text.load(path)
    with open(path, "w") as f:
        f.write("tf2ir-ir 1\ngraph \"main\" {\n  input %x: float32[1]\n")
    with pytest.raises(ConversionError, match="unbalanced"):
        ir_text.load(path)
    with pytest.raises(ConversionError, match="cannot read"):
        ir_text.load(str(tmp_path / "missing.ir"))
