"""The per-node paths of mapping kept lean (issue 22, "Linear and lean") and unchanged in
what they do: plugin_code (entered twice a node), port expansion, value naming."""

from __future__ import annotations

import pytest

from tf2ir.ir.errors import ConversionError, plugin_code
from tf2ir.ir.graph import Graph
from tf2ir.ir.prototype import OpPrototype, PortSpec


def test_plugin_code_names_the_plugin_and_place_of_what_it_raises():
    with pytest.raises(ConversionError) as info:
        with plugin_code("its parse function", "my_ops", node="n", op_type="Foo"):
            raise RuntimeError("broken")
    error = info.value
    assert (error.plugin, error.node, error.op_type) == ("my_ops", "n", "Foo")
    assert error.message == "its parse function failed: RuntimeError: broken"
    assert isinstance(error.__cause__, RuntimeError)


def test_plugin_code_locates_a_conversion_error_it_passes_on():
    raised = ConversionError("bad attr", node="inner")
    with pytest.raises(ConversionError) as info:
        with plugin_code("shape inference", "my_ops", node="outer", op_type="Foo"):
            raise raised
    assert info.value is raised
    assert (raised.plugin, raised.node, raised.op_type) == ("my_ops", "inner", "Foo")


def test_plugin_code_turns_sys_exit_into_an_error_and_lets_other_base_exceptions_pass():
    with pytest.raises(ConversionError, match=r"its kernel called sys.exit\(3\)"):
        with plugin_code("its kernel", "my_ops"):
            raise SystemExit(3)
    with pytest.raises(GeneratorExit):
        with plugin_code("its kernel", "my_ops"):
            raise GeneratorExit()


def test_builtin_code_fails_the_node_only_for_node_failures():
    with pytest.raises(ConversionError) as info:
        with plugin_code("shape inference", "tf2ir", builtin=True, node="n"):
            raise ValueError("rank")
    assert info.value.plugin is None and info.value.node == "n"
    with pytest.raises(AttributeError):   # tf2ir's own bug passes unchanged
        with plugin_code("shape inference", "tf2ir", builtin=True, node="n"):
            raise AttributeError("oops")


def test_plugin_code_lets_a_clean_block_run():
    with plugin_code("its parse function", "my_ops") as entered:
        done = True
    assert done and entered is None


def test_ports_without_a_dynamic_group_fit_their_own_count_only():
    proto = OpPrototype("Foo", inputs=[PortSpec("x"), PortSpec("y", "optional")],
                        outputs=[PortSpec("z")])
    assert proto.input_spec(2) == proto.inputs and proto.input_spec(2) is not proto.inputs
    assert not proto.accepts_input_count(1) and not proto.accepts_input_count(3)
    assert proto.input_names(2) == ["x", "y"]
    dynamic = OpPrototype("Bar", inputs=[PortSpec("a"), PortSpec("x", "dynamic", count_attr="N")])
    assert [p.name for p in dynamic.input_spec(3, {"N": 2})] == ["a", "x", "x"]
    assert dynamic.input_names(3) == ["a", "x0", "x1"]
    assert not dynamic.accepts_input_count(3, {"N": 3})


def test_values_keep_free_names_and_number_taken_ones():
    graph = Graph("g")
    x = graph.add_input("x", None)
    first = graph.add_node("Relu", [x], name="r").outputs[0]
    second = graph.add_node("Relu", [first], name="r").outputs[0]
    assert (first.name, second.name) == ("r", "r_1")
    assert graph.add_input("x", None).name == "x_1"
