"""Built-in plugin modules imported by op type through the generated index: the manager's
answers are those of one that imports everything (winners, overrides, conflicts,
provenance, fusion passes and their order), and a third party's claims still decide."""

from __future__ import annotations

import os
import textwrap

import pytest
from tensorboard.compat.proto import graph_pb2, tensor_shape_pb2

from tf2ir.ir import ConversionError
from tf2ir.parser.graph_view import TfGraph
from tf2ir.parser.scope_fusion import apply_scope_fusion
from tf2ir.plugins import builtin_index as index_module
from tf2ir.plugins import manager as manager_module
from tf2ir.plugins.builtin import _index
from tf2ir.plugins.fusion import DeferredFusionPass, ScopeFusionPass
from tf2ir.plugins.manager import PLUGIN_PATH_ENV, PluginManager


@pytest.fixture(autouse=True)
def no_plugin_path(monkeypatch):
    monkeypatch.delenv(PLUGIN_PATH_ENV, raising=False)


def eager_manager(monkeypatch, **kwargs) -> PluginManager:
    """A manager without the index: every built-in module imported at once, as before."""
    with monkeypatch.context() as patch:
        patch.setattr(manager_module, "builtin_index", lambda: None)
        return PluginManager(**kwargs)


def imported(manager: PluginManager, short: str) -> bool:
    return manager.pm.get_plugin(f"builtin_{short}").module is not None


def write_plugin(directory, name: str, body: str) -> str:
    path = os.path.join(str(directory), f"{name}.py")
    with open(path, "w") as f:
        f.write("from tf2ir.plugins import hookimpl, register_op\n"
                "from tf2ir.ir import op_prototype\n" + textwrap.dedent(body))
    return path


def summary(manager: PluginManager):
    return {
        "registry": {k: (r.plugin, r.ir_type, r.priority, r.source)
                     for k, r in manager.registry.items()},
        "registrations": [(r.plugin, tuple(r.origin_types)) for r in manager.registrations],
        "overrides": [str(o) for o in manager.overrides],
        "prototypes": {k: (p.plugin, p.source) for k, p in manager.prototypes.items()},
        "prototype_overrides": [str(o) for o in manager.prototype_overrides],
        "passes": [(p.name, p.enabled, p.plugin, p.source) for p in manager.fusion_passes],
        "plugins": manager.plugin_names(),
    }


def test_a_lazy_manager_answers_as_an_eager_one(monkeypatch, tmp_path):
    write_plugin(tmp_path, "mine", """
        def parse(src, op):
            pass

        @hookimpl
        def tf2ir_op_mappings():
            return [register_op("Relu").origin_op_type("Conv2D").with_priority(3)
                    .parse_params_fn(parse),
                    register_op("Relu").origin_op_type("MyOwnOp").parse_params_fn(parse)]

        @hookimpl
        def tf2ir_op_prototypes():
            return [op_prototype("Sigmoid").input("x").output("y").with_priority(2)]
    """)
    eager = eager_manager(monkeypatch, plugin_dirs=[str(tmp_path)], use_env=False)
    lazy = PluginManager(plugin_dirs=[str(tmp_path)], use_env=False)
    assert lazy.lookup("AddV2").ir_type == eager.lookup("AddV2").ir_type == "Add"
    assert [str(o) for o in lazy.overrides_for(["Conv2D", "AddV2"])] == \
        [str(o) for o in eager.overrides_for(["Conv2D", "AddV2"])]
    assert summary(lazy) == summary(eager)


def test_a_conversion_imports_only_the_claimants_of_its_op_types():
    manager = PluginManager(entry_points=False, use_env=False)
    assert not imported(manager, "conv") and not imported(manager, "rnn")
    reg = manager.lookup("Conv2D")
    assert reg.plugin == "builtin_conv" and reg.source.endswith(os.path.join("builtin", "conv.py"))
    assert imported(manager, "conv") and not imported(manager, "rnn")
    assert manager.lookup("NoSuchTfOp") is None
    assert manager.resolve_prototype("NoSuchIrOp") is None
    assert manager.prototype_table.get("Conv2D").plugin == "builtin_conv"   # it asks the manager
    assert isinstance(next(p for p in manager.fusion_plan() if p.name == "gelu"),
                      DeferredFusionPass)


def test_a_third_party_override_of_a_builtin_op_type_wins_and_is_reported(tmp_path):
    path = write_plugin(tmp_path, "over", """
        @hookimpl
        def tf2ir_op_mappings():
            return [register_op("Relu").origin_op_type("Conv2D").with_priority(5)]
    """)
    manager = PluginManager(plugin_dirs=[path], use_env=False)
    assert imported(manager, "conv")   # decided when the manager was made
    assert manager.lookup("Conv2D").plugin == path
    [override] = manager.overrides_for(["Conv2D"])
    assert override.winner.plugin == path and [r.plugin for r in override.losers] == ["builtin_conv"]


def test_an_equal_priority_claim_on_a_builtin_op_type_fails_when_the_manager_is_made(tmp_path):
    path = write_plugin(tmp_path, "tie", """
        @hookimpl
        def tf2ir_op_mappings():
            return [register_op("Relu").origin_op_type("MaxPool")]
    """)
    with pytest.raises(ConversionError, match="origin op type MaxPool is claimed by"):
        PluginManager(plugin_dirs=[path], use_env=False)


def test_a_third_party_prototype_override_is_in_force_without_importing_everything(tmp_path):
    path = write_plugin(tmp_path, "proto", """
        @hookimpl
        def tf2ir_op_prototypes():
            return [op_prototype("Relu6").input("x").output("y").with_priority(5)]
    """)
    manager = PluginManager(plugin_dirs=[path], use_env=False, entry_points=False)
    assert manager.prototype_table.get("Relu6").plugin == path
    assert not imported(manager, "rnn")
    assert [str(o) for o in manager.prototype_overrides] == [
        f"prototype Relu6: {path} (priority 5) overrides builtin_nn (priority 0)"]


def swish_graph(with_sigmoid: bool = True) -> TfGraph:
    graph_def = graph_pb2.GraphDef()
    x = graph_def.node.add(name="x", op="Placeholder")
    x.attr["dtype"].type = 1
    x.attr["shape"].shape.CopyFrom(tensor_shape_pb2.TensorShapeProto(
        dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=4)]))
    gate = graph_def.node.add(name="gate", op="Sigmoid" if with_sigmoid else "Tanh", input=["x"])
    out = graph_def.node.add(name="out", op="Mul", input=["x", "gate"])
    for node in (gate, out):
        node.attr["T"].type = 1
    return TfGraph(graph_def)


def test_a_builtin_fusion_pass_is_imported_when_its_op_types_occur():
    manager = PluginManager(entry_points=False, use_env=False)
    assert apply_scope_fusion(swish_graph(with_sigmoid=False), manager) == {}
    assert not imported(manager, "fusion")
    assert apply_scope_fusion(swish_graph(), manager) == {"swish": 1}
    assert imported(manager, "fusion")
    swish = next(p for p in manager.fusion_passes if p.name == "swish")
    assert isinstance(swish, ScopeFusionPass) and swish.plugin == "builtin_fusion"


def test_a_stale_index_is_ignored(monkeypatch):
    builtin_index = index_module.builtin_index
    builtin_index.cache_clear()
    try:
        monkeypatch.setattr(_index, "SOURCES", {"builtin/gone.py": 1})
        assert builtin_index() is None
        manager = PluginManager(entry_points=False, use_env=False)
        assert manager.lookup("Conv2D").plugin == "builtin_conv"
        assert not any(isinstance(p, DeferredFusionPass) for p in manager.fusion_plan())
    finally:
        monkeypatch.undo()
        builtin_index.cache_clear()
    assert builtin_index() is not None
