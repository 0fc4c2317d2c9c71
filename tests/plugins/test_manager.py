"""The plugin manager, the register_op builder and auto attribute mapping."""

from __future__ import annotations

import os
import textwrap

import numpy as np
import pytest

from tf2ir.ir import ConversionError, Graph, TensorDesc, has_prototype
from tf2ir.plugins import (
    TENSORFLOW, ImplyType, IrOp, OpRegistration, PluginManager, auto_mapping, register_op,
)
from tf2ir.plugins.manager import BUILTIN_MODULES, PLUGIN_PATH_ENV, Override

BUILTIN_NAMES = {*BUILTIN_MODULES, *("builtin_" + m.rsplit(".", 1)[1] for m in BUILTIN_MODULES)}


@pytest.fixture(autouse=True)
def no_plugin_path(monkeypatch):
    monkeypatch.delenv(PLUGIN_PATH_ENV, raising=False)


def write_plugin(directory, name, origin, ir_type="Relu", priority=None, marker=None):
    """A plugin module file mapping `origin` to `ir_type`; its parse fn sets attr marker."""
    priority_call = f".with_priority({priority})" if priority is not None else ""
    path = os.path.join(str(directory), f"{name}.py")
    with open(path, "w") as f:
        f.write(textwrap.dedent(f'''
            from tf2ir.plugins import hookimpl, register_op

            def parse(src, op):
                op.set_attr("marker", {marker or name!r})

            @hookimpl
            def tf2ir_op_mappings():
                return [register_op({ir_type!r}).origin_op_type({origin!r}){priority_call}
                        .parse_params_fn(parse)]
        '''))
    return os.path.abspath(path)


# -- built-ins --------------------------------------------------------------------------------
@pytest.mark.parametrize("origin, ir_type", [
    ("Conv2D", "Conv2D"), ("DepthwiseConv2dNative", "DepthwiseConv2D"), ("AddV2", "Add"),
    ("Add", "Add"), ("BiasAddV1", "BiasAdd"), ("MatMul", "MatMul"), ("Mean", "ReduceMean"),
    ("Inv", "Reciprocal"), ("MirrorPad", "Pad"), ("PadV2", "Pad"), ("Pack", "Pack"),
    ("ConcatV2", "ConcatV2"), ("StridedSlice", "StridedSlice"), ("Relu6", "Relu6"),
])
def test_builtins_are_registered(origin, ir_type):
    manager = PluginManager(use_env=False)
    reg = manager.lookup(origin)
    assert reg is not None and reg.ir_type == ir_type
    assert reg.plugin in BUILTIN_NAMES
    assert reg.source.endswith(os.path.join("plugins", "builtin", reg.source.rsplit(os.sep, 1)[-1]))


def test_every_builtin_targets_a_declared_prototype():
    manager = PluginManager(use_env=False)
    assert manager.registry, "no built-in mappings"
    missing = {o: r.ir_type for o, r in manager.registry.items() if not has_prototype(r.ir_type)}
    assert not missing
    assert manager.overrides == []
    assert manager.lookup("NoSuchTfOp") is None


def test_builtins_without_entry_points():
    manager = PluginManager(entry_points=False, use_env=False)
    assert set(manager.plugin_names()) == {"builtin_" + m.rsplit(".", 1)[1] for m in BUILTIN_MODULES}
    assert manager.lookup("AddV2").ir_type == "Add"
    # The built-in prototypes come through the same hook as a third party's, with provenance.
    assert manager.prototypes["Conv2D"].plugin == "builtin_conv"
    assert manager.prototypes["Conv2D"].source.endswith("conv.py")


def test_builtins_are_not_registered_twice():
    """Entry points announce the built-ins too; they must not end up as two claimants."""
    manager = PluginManager(entry_points=True, use_env=False)
    names = manager.plugin_names()
    assert len(names) == len(set(names)) == len(BUILTIN_MODULES)
    assert sum("Conv2D" in r.origin_types for r in manager.registrations) == 1


def test_provenance_belongs_to_each_manager(tmp_path):
    """Each manager's registrations are its own copies: a plugin's claim in one manager
    changes nothing in another."""
    write_plugin(tmp_path, "my_plugin", "Conv2D", "Relu", priority=5)
    plain = PluginManager(entry_points=False, use_env=False)
    with_plugin = PluginManager(plugin_dirs=[str(tmp_path)], use_env=False)
    assert plain.lookup("Conv2D").plugin == "builtin_conv"
    assert with_plugin.lookup("Conv2D").plugin.endswith("my_plugin.py")
    assert plain.lookup("Conv2D").ir_type == "Conv2D"


def test_builtin_parse_fns():
    manager = PluginManager(use_env=False)
    assert manager.lookup("Relu").parse_fn is auto_mapping      # no parse fn: auto mapping
    assert manager.lookup("MatMul").parse_fn.__name__ == "parse_matmul"


# -- plugin files ------------------------------------------------------------------------------
def test_plugin_dir_is_loaded(tmp_path):
    path = write_plugin(tmp_path, "my_plugin", "MyCustomOp", "Relu")
    (tmp_path / "_private.py").write_text("raise RuntimeError('must not be imported')\n")
    (tmp_path / "notes.txt").write_text("not a plugin")
    manager = PluginManager(plugin_dirs=[str(tmp_path)], use_env=False)
    reg = manager.lookup("MyCustomOp")
    assert reg.ir_type == "Relu"
    assert reg.plugin == path and reg.source == path
    assert path in manager.plugin_names()
    op = IrOp("Relu", "n", [], Graph())
    reg.parse_fn(None, op)
    assert op.attrs == {"marker": "my_plugin"}
    assert manager.lookup("Conv2D").ir_type == "Conv2D"   # built-ins are still there


def test_single_plugin_file_is_loaded(tmp_path):
    path = write_plugin(tmp_path, "one", "OneOp")
    manager = PluginManager(plugin_dirs=[path], use_env=False)
    assert manager.lookup("OneOp").plugin == path


def test_plugin_path_env_var(tmp_path, monkeypatch):
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    write_plugin(first, "alpha", "AlphaOp")
    write_plugin(second, "beta", "BetaOp", "Sigmoid")
    monkeypatch.setenv(PLUGIN_PATH_ENV, f"{first}{os.pathsep}{os.pathsep}{second}")
    manager = PluginManager()
    assert manager.lookup("AlphaOp").ir_type == "Relu"
    assert manager.lookup("BetaOp").ir_type == "Sigmoid"
    assert PluginManager(use_env=False).lookup("AlphaOp") is None


def test_same_dir_from_argument_and_env_is_loaded_once(tmp_path, monkeypatch):
    write_plugin(tmp_path, "alpha", "AlphaOp")
    monkeypatch.setenv(PLUGIN_PATH_ENV, str(tmp_path))
    manager = PluginManager(plugin_dirs=[str(tmp_path)])
    assert manager.lookup("AlphaOp").ir_type == "Relu"
    assert manager.overrides == []


def test_missing_plugin_path(tmp_path):
    with pytest.raises(ConversionError, match="does not exist"):
        PluginManager(plugin_dirs=[str(tmp_path / "nowhere")], use_env=False)


def test_equal_priority_conflict_names_both(tmp_path):
    a = write_plugin(tmp_path, "first_plugin", "SharedOp")
    b = write_plugin(tmp_path, "second_plugin", "SharedOp", "Sigmoid")
    with pytest.raises(ConversionError) as info:
        PluginManager(plugin_dirs=[str(tmp_path)], use_env=False)
    text = str(info.value)
    assert a in text and b in text and "SharedOp" in text and "equal priority" in text
    assert info.value.op_type == "SharedOp"


def test_conflict_with_a_builtin(tmp_path):
    path = write_plugin(tmp_path, "rival", "Conv2D", "Conv2D")
    with pytest.raises(ConversionError) as info:
        PluginManager(plugin_dirs=[str(tmp_path)], use_env=False)
    assert path in str(info.value) and "builtin_conv" in str(info.value)


def test_higher_priority_wins_and_is_reported(tmp_path):
    path = write_plugin(tmp_path, "better_conv", "Conv2D", "Conv2D", priority=10)
    manager = PluginManager(plugin_dirs=[str(tmp_path)], use_env=False)
    reg = manager.lookup("Conv2D")
    assert reg.plugin == path and reg.priority == 10
    op = IrOp("Conv2D", "n", [], Graph())
    reg.parse_fn(None, op)
    assert op.attrs == {"marker": "better_conv"}
    assert len(manager.overrides) == 1
    override = manager.overrides[0]
    assert isinstance(override, Override) and override.origin_type == "Conv2D"
    assert override.winner is reg
    assert [r.plugin for r in override.losers] == ["builtin_conv"]
    assert "Conv2D" in str(override) and path in str(override) and "builtin_conv" in str(override)
    # The other built-ins are untouched.
    assert manager.lookup("MaxPool").plugin == "builtin_pool"


def test_lower_priority_loses(tmp_path):
    write_plugin(tmp_path, "worse", "Relu", "Sigmoid", priority=-1)
    manager = PluginManager(plugin_dirs=[str(tmp_path)], use_env=False)
    assert manager.lookup("Relu").ir_type == "Relu"
    assert manager.overrides[0].winner.plugin == "builtin_nn"


def test_three_claimants_resolved_by_priority(tmp_path):
    write_plugin(tmp_path, "p1", "TriOp", priority=1, marker="one")
    write_plugin(tmp_path, "p5", "TriOp", priority=5, marker="five")
    write_plugin(tmp_path, "p3", "TriOp", priority=3, marker="three")
    manager = PluginManager(plugin_dirs=[str(tmp_path)], use_env=False)
    assert manager.lookup("TriOp").priority == 5
    assert [r.priority for r in manager.overrides[0].losers] == [3, 1]


@pytest.mark.parametrize("body, fragment", [
    ("raise RuntimeError('boom at import')\n", "boom at import"),
    ("def broken(:\n", "SyntaxError"),
    ("import tf2ir_no_such_module\n", "ModuleNotFoundError"),
])
def test_plugin_that_fails_to_import(tmp_path, body, fragment):
    path = tmp_path / "broken_plugin.py"
    path.write_text(body)
    with pytest.raises(ConversionError) as info:
        PluginManager(plugin_dirs=[str(tmp_path)], use_env=False)
    assert str(path) in str(info.value) and fragment in str(info.value)
    assert info.value.plugin == str(path)


def test_plugin_hook_that_fails(tmp_path):
    path = tmp_path / "hook_fails.py"
    path.write_text(textwrap.dedent('''
        from tf2ir.plugins import hookimpl

        @hookimpl
        def tf2ir_op_mappings():
            raise KeyError("missing table")
    '''))
    with pytest.raises(ConversionError) as info:
        PluginManager(plugin_dirs=[str(tmp_path)], use_env=False)
    assert str(path) in str(info.value) and "missing table" in str(info.value)


def test_plugin_returning_the_wrong_type(tmp_path):
    path = tmp_path / "wrong_type.py"
    path.write_text(textwrap.dedent('''
        from tf2ir.plugins import hookimpl

        @hookimpl
        def tf2ir_op_mappings():
            return ["Relu"]
    '''))
    with pytest.raises(ConversionError) as info:
        PluginManager(plugin_dirs=[str(tmp_path)], use_env=False)
    assert str(path) in str(info.value) and "register_op" in str(info.value)


def test_plugin_with_a_builder_error_at_import_is_named(tmp_path):
    path = tmp_path / "caffe_plugin.py"
    path.write_text(textwrap.dedent('''
        from tf2ir.plugins import register_op
        MAPPINGS = [register_op("Relu").framework_type("CAFFE")]
    '''))
    with pytest.raises(ConversionError) as info:
        PluginManager(plugin_dirs=[str(tmp_path)], use_env=False)
    assert str(path) in str(info.value) and "CAFFE" in str(info.value)


# -- register_op ------------------------------------------------------------------------------
def test_register_op_builder_chain():
    def parse(src, op):
        pass

    reg = (register_op("TopK").framework_type(TENSORFLOW).origin_op_type("TopKV2", "TopK")
           .parse_params_fn(parse).imply_type(ImplyType.AI_CPU).with_priority("3"))
    assert isinstance(reg, OpRegistration)
    assert reg.ir_type == "TopK" and reg.framework == TENSORFLOW
    assert reg.origin_types == ["TopKV2", "TopK"]
    assert reg.parse_fn is parse and reg.imply == "AI_CPU" and reg.priority == 3


def test_register_op_short_spellings_are_deprecated_and_defaults():
    def parse(src, op):
        pass

    with pytest.warns(DeprecationWarning, match="origin_op_type"):
        reg = register_op("Relu").origin("Relu").origin("Relu6")
    with pytest.warns(DeprecationWarning, match="parse_params_fn"):
        reg.parse_params(parse)
    assert reg.origin_types == ["Relu", "Relu6"] and reg.parse_fn is parse
    plain = register_op("Relu")
    assert plain.framework == TENSORFLOW and plain.imply == ImplyType.TVM and plain.priority == 0
    assert plain.parse_fn is auto_mapping


@pytest.mark.parametrize("framework", ["CAFFE", "ONNX", "tensorflow", ""])
def test_framework_type_rejects_other_frameworks(framework):
    with pytest.raises(ValueError, match="TENSORFLOW"):
        register_op("Relu").framework_type(framework)


@pytest.mark.parametrize("imply", ["GPU", "tvm", None])
def test_imply_type_validation(imply):
    reg = register_op("Relu")
    with pytest.raises(ValueError, match="imply type"):
        reg.imply_type(imply)
    assert reg.imply == ImplyType.TVM


@pytest.mark.parametrize("imply", list(ImplyType.ALL))
def test_imply_type_accepts_every_known_type(imply):
    assert register_op("Relu").imply_type(imply).imply == imply


def test_decorator_form():
    reg = register_op("TopK").origin_op_type("TopKV2")

    @reg
    def parse_topk(src, op):
        op.set_attr("sorted", True)

    assert parse_topk.__name__ == "parse_topk"      # the decorator returns the function
    assert reg.parse_fn is parse_topk
    op = IrOp("TopK", "n", [], Graph())
    reg.parse_fn(None, op)
    assert op.attrs == {"sorted": True}


def test_decorator_form_in_a_plugin_file(tmp_path):
    (tmp_path / "decorated.py").write_text(textwrap.dedent('''
        from tf2ir.plugins import hookimpl, register_op

        TOPK = register_op("Sigmoid").origin_op_type("DecoratedOp").with_priority(2)

        @TOPK
        def parse(src, op):
            op.set_attr("decorated", True)

        @hookimpl
        def tf2ir_op_mappings():
            return [TOPK]
    '''))
    manager = PluginManager(plugin_dirs=[str(tmp_path)], use_env=False)
    op = IrOp("Sigmoid", "n", [], Graph())
    manager.lookup("DecoratedOp").parse_fn(None, op)
    assert op.attrs == {"decorated": True}


# -- auto mapping ------------------------------------------------------------------------------
class FakeTfNode:
    """The two things auto_mapping reads from a TF node: decoded attrs and their TF kinds."""

    def __init__(self, **attrs):
        self.attrs = {name: value for name, (kind, value) in attrs.items()}
        self._kinds = {name: kind for name, (kind, value) in attrs.items()}

    def attr(self, name, default=None):
        return self.attrs.get(name, default)

    def attr_type(self, name):
        return self._kinds.get(name)


def ir_op(op_type, *descs):
    g = Graph()
    inputs = [g.add_input(f"in{i}", d) for i, d in enumerate(descs)]
    return IrOp(op_type, "node", inputs, g)


def test_auto_mapping_rules():
    src = FakeTfNode(
        T=("type", "float32"),
        _output_shapes=("list_shape", [(1, 4, 4, 3)]),
        _class=("list_string", ["loc:@w"]),
        strides=("list_int", (1, 2, 2, 1)),
        padding=("string", "SAME"),
        data_format=("string", "NHWC"),
        dilations=("list_int", [1, 1, 1, 1]),
        use_cudnn_on_gpu=("bool", True),
        Tlist=("list_type", ["float32", "int32"]),
        extra_shape=("shape", (None, 3)),
    )
    op = ir_op("Conv2D")
    auto_mapping(src, op)
    assert op.attrs == {"strides": [1, 2, 2, 1], "padding": "SAME", "data_format": "NHWC",
                        "dilations": [1, 1, 1, 1], "use_cudnn_on_gpu": True,
                        "extra_shape": (None, 3)}
    assert isinstance(op.attrs["strides"], list)       # converted to the declared ints


def test_auto_mapping_keeps_declared_dtype_attrs():
    src = FakeTfNode(dtype=("type", "int64"), T=("type", "float32"))
    op = ir_op("Shape")
    auto_mapping(src, op)
    assert op.attrs == {"dtype": "int64"}


def test_auto_mapping_converts_declared_types():
    op = ir_op("LeakyRelu")
    auto_mapping(FakeTfNode(alpha=("int", 1)), op)
    assert op.attrs == {"alpha": 1.0} and type(op.attrs["alpha"]) is float
    op = ir_op("Softmax")
    auto_mapping(FakeTfNode(axis=("int", np.int64(-1))), op)
    assert op.attrs == {"axis": -1} and type(op.attrs["axis"]) is int


def test_auto_mapping_rejects_a_declared_attr_of_the_wrong_type():
    with pytest.raises(ConversionError) as info:
        auto_mapping(FakeTfNode(padding=("list_int", [1, 2])), ir_op("Conv2D"))
    assert "padding" in str(info.value) and "str" in str(info.value)


def test_auto_mapping_for_an_op_without_prototype_appends_everything_but_types():
    src = FakeTfNode(k=("int", 4), sorted=("bool", True), T=("type", "float32"),
                     _hidden=("int", 1), table=("tensor", np.arange(3)))
    op = ir_op("NoPrototypeOp")
    auto_mapping(src, op)
    assert set(op.attrs) == {"k", "sorted", "table"}
    np.testing.assert_array_equal(op.attrs["table"], np.arange(3))


def test_auto_mapping_is_the_default_parse_fn():
    reg = register_op("Conv2D").origin_op_type("Conv2D")
    op = ir_op("Conv2D")
    reg.parse_fn(FakeTfNode(T=("type", "float32"), padding=("string", "VALID")), op)
    assert op.attrs == {"padding": "VALID"}


# -- IrOp helpers used by plugins ----------------------------------------------------------
def test_irop_formats_and_const_inputs():
    op = ir_op("Conv2D", TensorDesc("float32", (1, 4, 4, 3)), TensorDesc("float32", (3, 3, 3, 8)))
    op.set_input_format(0, "NHWC")
    op.set_input_format(1, "HWCN")
    op.set_output_format(0, "NCHW", "NHWC")
    assert (op.inputs[0].desc.format, op.inputs[0].desc.origin_format) == ("NHWC", "NHWC")
    assert op.inputs[1].desc.format == "HWCN"
    assert op.output_formats == {0: ("NCHW", "NHWC")}
    with pytest.raises(ValueError, match="unknown format"):
        op.set_input_format(0, "CHWN")
    value = op.add_const_input(np.array([1, 2], np.int32), "axes")
    assert op.inputs[-1] is value and value.const_value.tolist() == [1, 2]
    assert value.name == "node/axes"
    assert op.prototype is not None and op.prototype.op_type == "Conv2D"
    assert ir_op("NoPrototypeOp").prototype is None
