"""The `src` protocols plugins are typed against (`tf2ir.plugins.tfnode`) match the parser's
node classes, at run time and for the type checker, so the interface cannot drift from
what plugins really receive."""

from __future__ import annotations

import inspect
from typing import Protocol, Set

import pytest

from tests.test_typecheck import run_mypy
from tf2ir.ir import ConversionError
from tf2ir.parser.functions import FunctionalNode, FunctionLibrary
from tf2ir.parser.graph_view import TfGraph, graph_def_class
from tf2ir.parser.graph_view import TfNode as ParsedNode
from tf2ir.parser.scope_fusion import FusedNode
from tf2ir.parser.tflite_view import TfLiteNode
from tf2ir.plugins import FunctionalTfNode, FusedTfNode, IrOp, TfNode

NODE_MEMBERS = {"name", "op_type", "framework", "inputs", "control_inputs", "attrs", "attr", "attr_type",
                "has_attr"}
PROTOCOLS = {
    TfNode: (ParsedNode, NODE_MEMBERS),
    FusedTfNode: (FusedNode, NODE_MEMBERS | {"inner_nodes", "pass_name"}),
    FunctionalTfNode: (FunctionalNode, NODE_MEMBERS | {"convert_function"}),
}
# Each parser class a plugin may get as `src`, with the protocols it implements: a TFLite
# operator is a TfNode (framework "TFLITE") and, for WHILE/IF, a FunctionalTfNode.
IMPLEMENTATIONS = [(protocol, cls) for protocol, (cls, _) in PROTOCOLS.items()] + [
    (TfNode, TfLiteNode), (FunctionalTfNode, TfLiteNode)]


def members(protocol: type) -> Set[str]:
    """The public members a protocol declares, its protocol bases' included."""
    return {name for cls in protocol.__mro__
            if cls is not Protocol and getattr(cls, "_is_protocol", False)
            for name in vars(cls) if not name.startswith("_")}


def graph() -> TfGraph:
    graph_def = graph_def_class()()
    x = graph_def.node.add(name="x", op="Placeholder")
    x.attr["dtype"].type = 1
    graph_def.node.add(name="c", op="NoOp")
    y = graph_def.node.add(name="y", op="If", input=["x", "x:1", "^c"])
    y.attr["Tout"].list.type.extend([1])
    y.attr["then_branch"].func.name = "then_fn"
    return TfGraph(graph_def)


@pytest.mark.parametrize("protocol", list(PROTOCOLS), ids=lambda p: p.__name__)
def test_the_protocol_declares_what_plugins_may_use(protocol):
    assert members(protocol) == PROTOCOLS[protocol][1]
    for name in members(protocol):
        assert inspect.getdoc(getattr(protocol, name)), f"{protocol.__name__}.{name} has no docstring"


def instance_members(cls: type) -> Set[str]:
    """What an instance of a class without __slots__ sets in __init__ (TfLiteNode's name,
    op_type, inputs, ...): the class itself does not have them."""
    if cls is TfLiteNode:
        return set(vars(TfLiteNode("n", "ADD", [("x", 0)], {})))
    return set()


@pytest.mark.parametrize("protocol,cls", IMPLEMENTATIONS,
                         ids=lambda p: getattr(p, "__name__", str(p)))
def test_the_parser_class_has_every_member(protocol, cls):
    for name in members(protocol):
        assert hasattr(cls, name) or name in instance_members(cls), f"{cls.__name__} lacks {name}"
        declared = getattr(protocol, name)
        if inspect.isfunction(declared):        # a method: the same parameters, in order
            assert list(inspect.signature(getattr(cls, name)).parameters) == \
                list(inspect.signature(declared).parameters), f"{cls.__name__}.{name}"


def test_a_tflite_node_satisfies_the_protocols():
    """What a TFLITE plugin gets: the operator's name, TFLite op type, framework TFLITE, its
    options as attributes (no TF kind), and convert_function for WHILE/IF subgraphs."""
    node = TfLiteNode("y", "CONV_2D", [("x", 0), ("w", 0)],
                      {"padding": "SAME", "fused_activation_function": "RELU6"})
    assert isinstance(node, TfNode) and isinstance(node, FunctionalTfNode)
    assert not isinstance(node, FusedTfNode)
    assert (node.name, node.op_type, node.framework) == ("y", "CONV_2D", "TFLITE")
    assert (node.inputs, node.control_inputs) == ([("x", 0), ("w", 0)], [])
    assert node.attr("padding") == "SAME" and node.attr("stride_h", 1) == 1
    assert node.has_attr("fused_activation_function") and not node.has_attr("stride_h")
    assert node.attr_type("padding") is None
    assert graph()["y"].framework == "TENSORFLOW"
    with pytest.raises(ConversionError, match="subgraph"):   # no pipeline behind it
        node.convert_function("padding", [])


def test_parsed_nodes_satisfy_the_protocols():
    tf_graph = graph()
    node = tf_graph["y"]
    assert isinstance(node, TfNode)
    assert not isinstance(node, FusedTfNode) and not isinstance(node, FunctionalTfNode)
    assert (node.name, node.op_type, node.inputs, node.control_inputs) == \
        ("y", "If", [("x", 0), ("x", 1)], ["c"])
    assert node.attr("Tout") == ["float32"] and node.attr_type("Tout") == "list_type"
    assert node.has_attr("then_branch") and not node.has_attr("cond")
    assert node.attr("cond", 7) == 7 and node.attr_type("cond") is None

    fused = FusedNode("f", "MySoftplus", [("x", 0)], {"beta": 1.0},
                      inner_nodes=[tf_graph["x"]], pass_name="my_softplus")
    assert isinstance(fused, FusedTfNode)
    assert fused.pass_name == "my_softplus" and [n.name for n in fused.inner_nodes] == ["x"]
    assert fused.attrs == {"beta": 1.0} and fused.attr_type("beta") is None

    functional = FunctionalNode.of(node, FunctionLibrary(tf_graph, {}))
    assert isinstance(functional, FunctionalTfNode)
    assert functional.attrs == node.attrs


def test_the_type_checker_sees_the_parser_classes_as_the_protocols(tmp_path):
    """Statically too: the parser's classes are assignable to the protocols (member types
    included), and a class without them is not."""
    conforms = tmp_path / "conforms.py"
    conforms.write_text(
        "from tf2ir.parser.functions import FunctionalNode\n"
        "from tf2ir.parser.graph_view import TfNode as ParsedNode\n"
        "from tf2ir.parser.scope_fusion import FusedNode\n"
        "from tf2ir.parser.tflite_view import TfLiteNode\n"
        "from tf2ir.plugins import FunctionalTfNode, FusedTfNode, TfNode\n"
        "\n"
        "def check(node: ParsedNode, fused: FusedNode, functional: FunctionalNode,\n"
        "          lite: TfLiteNode) -> None:\n"
        "    a: TfNode = node\n"
        "    b: FusedTfNode = fused\n"
        "    c: FunctionalTfNode = functional\n"
        "    e: TfNode = lite\n"
        "    f: FunctionalTfNode = lite\n"
        "    d: FusedTfNode = node\n")
    status, output = run_mypy(str(conforms))
    errors = [line for line in output.splitlines() if ": error:" in line]
    assert len(errors) == 1 and "conforms.py:14: error: Incompatible types in assignment" \
        in errors[0], output


def test_control_flow_needs_a_functional_node():
    """The If plugin converts its branches through a FunctionalTfNode; a plain node (no
    function library attached) is refused with the reason."""
    from tf2ir.ir import Graph, TensorDesc
    from tf2ir.plugins.builtin.control import parse_params_if
    ir_graph = Graph()
    cond = ir_graph.add_input("cond", TensorDesc("bool", ()))
    x = ir_graph.add_input("x", TensorDesc("float32", (2,)))
    with pytest.raises(ConversionError, match="function library"):
        parse_params_if(graph()["y"], IrOp("If", "y", [cond, x], ir_graph))
