"""The plugin author's side of TFLite (issue 26): mappings keyed by (framework, origin op type),
TFLITE priorities and overrides apart from TF ones, a third-party plugin directory mapping a
real .tflite's custom op and remapping a builtin, and the built-in index's TFLITE keys."""

from __future__ import annotations

import os
import textwrap

import numpy as np
import pytest

from tests.conftest import run_cli
from tf2ir.ir import ConversionError
from tf2ir.plugins import builtin_index as index_module
from tf2ir.plugins import register_op
from tf2ir.plugins.builtin import _index
from tf2ir.plugins.manager import PLUGIN_PATH_ENV, PluginManager
from tf2ir.plugins.registry import FRAMEWORKS, mapping_key, split_mapping_key


@pytest.fixture(autouse=True)
def no_plugin_path(monkeypatch):
    monkeypatch.delenv(PLUGIN_PATH_ENV, raising=False)


def write_plugin(directory, name: str, body: str) -> str:
    os.makedirs(str(directory), exist_ok=True)
    path = os.path.join(str(directory), f"{name}.py")
    with open(path, "w") as f:
        f.write("from tf2ir.plugins import hookimpl, register_op\n" + textwrap.dedent(body))
    return path


def mapping_plugin(directory, name: str, registrations: str) -> str:
    """A plugin file whose tf2ir_op_mappings returns `registrations` (a Python list)."""
    return write_plugin(directory, name, f"""
        def parse(src, op):
            pass

        @hookimpl
        def tf2ir_op_mappings():
            return {registrations}
        """)


# --- registration ---------------------------------------------------------------------

def test_framework_type_takes_tflite_and_refuses_an_unknown_framework_in_one_line(tmp_path):
    reg = register_op("Relu").framework_type("TFLITE").origin_op_type("RELU", "RELU6")
    assert reg.framework == "TFLITE" and reg.keys == ["TFLITE:RELU", "TFLITE:RELU6"]
    assert register_op("Relu").origin_op_type("Relu").keys == ["Relu"]   # TF keys as before
    assert FRAMEWORKS == ("TENSORFLOW", "TFLITE")
    with pytest.raises(ValueError) as refused:
        register_op("Relu").framework_type("ONNX")
    message = str(refused.value)
    assert "\n" not in message and "'ONNX'" in message and "TENSORFLOW or TFLITE" in message
    # A registration whose framework was set past the builder: the manager refuses the
    # plugin, naming it, in one line; the command line exits 1.
    path = write_plugin(tmp_path, "caffe", """
        @hookimpl
        def tf2ir_op_mappings():
            reg = register_op("Relu").origin_op_type("ReLU")
            reg.framework = "CAFFE"
            return [reg]
        """)
    with pytest.raises(ConversionError) as bad:
        PluginManager(plugin_dirs=[path], use_env=False).lookup("ReLU")
    assert "\n" not in str(bad.value) and "caffe.py" in str(bad.value) and "'CAFFE'" in str(bad.value)
    listed = run_cli("plugins", "--plugin-dir", path)
    assert listed.returncode == 1 and listed.stdout == ""
    assert len(listed.stderr.strip().splitlines()) == 1 and "'CAFFE'" in listed.stderr


def test_mapping_keys_round_trip():
    for framework, origin in [("TENSORFLOW", "Conv2D"), ("TFLITE", "CONV_2D"),
                              ("TFLITE", "TFLite_Detection_PostProcess"), ("TENSORFLOW", "a:b")]:
        key = mapping_key(framework, origin)
        assert split_mapping_key(key) == (framework, origin)
    assert mapping_key("TENSORFLOW", "Relu") == "Relu"
    assert split_mapping_key("Relu") == ("TENSORFLOW", "Relu")
    assert split_mapping_key("NOT_A_FRAMEWORK:X") == ("TENSORFLOW", "NOT_A_FRAMEWORK:X")


def test_a_tf_relu_and_a_tflite_relu_are_two_keys(tmp_path):
    """TF's "Relu" (built-in) and a TFLITE "RELU" (this plugin) coexist; neither name means
    anything in the other framework."""
    mapping_plugin(tmp_path, "lite_relu", """[register_op("Relu").framework_type("TFLITE")
                                             .origin_op_type("RELU").with_priority(5)]""")
    manager = PluginManager(plugin_dirs=[str(tmp_path)], use_env=False)
    assert manager.lookup("Relu").plugin == "builtin_nn"
    assert manager.lookup("Relu").framework == "TENSORFLOW"
    mine = manager.lookup("RELU", "TFLITE")
    assert mine.plugin.endswith("lite_relu.py") and mine.framework == "TFLITE"
    assert manager.lookup("RELU") is None                 # no TF op type RELU
    assert manager.lookup("Relu", "TFLITE") is None       # no TFLite op Relu
    assert manager.registry["TFLITE:RELU"] is mine and manager.registry["Relu"].plugin == "builtin_nn"


def test_two_tflite_plugins_for_one_op_priority_decides_apart_from_a_tf_op_of_that_name(tmp_path):
    """CUSTOM_OP as a TF op type (priority 0) and as a TFLite custom op (two plugins): the
    TFLite claims override each other by priority, reported with the framework; the TF
    mapping is neither overridden nor in conflict, though its priority equals one of them."""
    mapping_plugin(tmp_path, "tf_custom", """[register_op("Relu").origin_op_type("CUSTOM_OP")
                                              .parse_params_fn(parse)]""")
    mapping_plugin(tmp_path, "lite_low", """[register_op("Relu").framework_type("TFLITE")
                                             .origin_op_type("CUSTOM_OP").parse_params_fn(parse)]""")
    mapping_plugin(tmp_path, "lite_high", """[register_op("Neg").framework_type("TFLITE")
                                              .origin_op_type("CUSTOM_OP").with_priority(2)]""")
    manager = PluginManager(plugin_dirs=[str(tmp_path)], use_env=False)
    tf_reg, lite_reg = manager.lookup("CUSTOM_OP"), manager.lookup("CUSTOM_OP", "TFLITE")
    assert tf_reg.plugin.endswith("tf_custom.py") and tf_reg.ir_type == "Relu"
    assert lite_reg.plugin.endswith("lite_high.py") and lite_reg.ir_type == "Neg"
    assert manager.overrides_for(["CUSTOM_OP"]) == []     # the TF op: nothing overridden
    (override,) = manager.overrides_for(["CUSTOM_OP"], "TFLITE")
    assert override.origin_type == "TFLITE:CUSTOM_OP" and override.winner is lite_reg
    assert [r.plugin for r in override.losers] == [str(tmp_path / "lite_low.py")]
    text = str(override)
    assert text.startswith("TFLITE:CUSTOM_OP: ") and "lite_high.py (priority 2) overrides" in text
    assert "lite_low.py (priority 0)" in text and "tf_custom" not in text
    assert [o.origin_type for o in manager.overrides if "CUSTOM_OP" in o.origin_type] == \
        ["TFLITE:CUSTOM_OP"]


def test_two_tflite_plugins_with_equal_priority_are_an_error_naming_both(tmp_path):
    mapping_plugin(tmp_path, "lite_a", """[register_op("Relu").framework_type("TFLITE")
                                           .origin_op_type("CUSTOM_OP")]""")
    mapping_plugin(tmp_path, "lite_b", """[register_op("Neg").framework_type("TFLITE")
                                           .origin_op_type("CUSTOM_OP")]""")
    with pytest.raises(ConversionError) as conflict:
        PluginManager(plugin_dirs=[str(tmp_path)], use_env=False).lookup("CUSTOM_OP", "TFLITE")
    message = str(conflict.value)
    assert "\n" not in message and "TFLITE:CUSTOM_OP" in message and "equal priority 0" in message
    assert "lite_a.py" in message and "lite_b.py" in message


# --- a third party's plugin directory on real .tflite models ------------------------------

LITE_OPS = """
import numpy as np

from tf2ir.plugins import hookimpl, register_op


def parse_asinh(src, op):
    pass   # the custom op's options (its TF attribute T, a flexbuffer) say nothing more


def mean_as_sum(src, graph):
    \"\"\"MEAN remapped: ReduceSum over the axes, times 1/count (static spatial axes).\"\"\"
    x, axes = graph.data(0), graph.data(1)
    shape = src.input_tensors[0].shape
    count = int(np.prod([shape[a] for a in np.atleast_1d(src.input_tensors[1].data)]))
    total = graph.add_op("ReduceSum", [x, axes], {"keep_dims": bool(src.attr("keep_dims"))},
                         name="sum").outputs[0]
    scale = graph.const(np.array(1.0 / count, np.float32), "scale")
    graph.set_outputs([graph.add_op("Mul", [total, scale], name="mean").outputs[0]])


@hookimpl
def tf2ir_op_mappings():
    return [register_op("Asinh").framework_type("TFLITE").origin_op_type("Asinh")
            .parse_params_fn(parse_asinh),
            register_op("PartitionedCall").framework_type("TFLITE").origin_op_type("MEAN")
            .parse_op_to_graph_fn(mean_as_sum).with_priority(10)]
"""


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """asinh.tflite: TF's Asinh, which TFLite has no builtin for, as the custom op "Asinh"
    (TFLiteConverter, allow_custom_ops); conv_mean.tflite: CONV_2D (fused RELU6) and MEAN."""
    tf = pytest.importorskip("tensorflow")
    folder = tmp_path_factory.mktemp("tflite_models")
    w = np.random.default_rng(3).standard_normal((3, 3, 3, 4)).astype(np.float32)

    def convert(fn, shape, name, custom=False):
        function = tf.function(fn, input_signature=[tf.TensorSpec(shape, tf.float32, name="x")])
        converter = tf.lite.TFLiteConverter.from_concrete_functions(
            [function.get_concrete_function()], function)
        converter.allow_custom_ops = custom
        path = folder / name
        path.write_bytes(converter.convert())
        return str(path)

    return {"asinh": convert(lambda x: tf.math.asinh(x), [2, 3], "asinh.tflite", custom=True),
            "conv_mean": convert(lambda x: tf.reduce_mean(tf.nn.relu6(tf.nn.conv2d(x, w, 1, "SAME")),
                                                          axis=[1, 2]),
                                 [1, 8, 8, 3], "conv_mean.tflite")}


def onnx_run(path, feeds):
    import onnxruntime as ort
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def test_a_plugin_directory_maps_a_tflite_custom_op(models, tmp_path):
    from tf2ir.parser.tflite_model import read_tflite
    (op,) = read_tflite(models["asinh"]).subgraphs[0].operators
    assert (op.op_type, op.builtin) == ("Asinh", False)    # a custom op, by its custom code
    plugins = tmp_path / "plugins"
    write_plugin(plugins, "lite_ops", LITE_OPS)
    out = str(tmp_path / "asinh.onnx")
    without = run_cli("convert", models["asinh"], "-o", out)
    assert without.returncode == 3 and not os.path.exists(out)
    assert "1 unsupported TFLite op type: Asinh" in without.stderr   # the framework named
    result = run_cli("convert", models["asinh"], "-o", out, "--plugin-dir", str(plugins))
    assert result.returncode == 0, result.stderr
    x = np.linspace(-3, 3, 6, dtype=np.float32).reshape(2, 3)
    (got,) = onnx_run(out, {"x": x})       # plain onnxruntime: the IR's Asinh lowered to ONNX
    np.testing.assert_allclose(got, np.arcsinh(x), rtol=1e-6, atol=1e-6)
    # The LiteRT interpreter has no kernel for the custom op: TF's own asinh is the reference.
    from tf2ir.tools.tflite_reference import run_tflite
    with pytest.raises(Exception, match="(?i)custom|Asinh|resolve"):
        run_tflite(models["asinh"], {"x": x})


def test_a_plugin_on_tf2ir_plugin_path_remaps_a_builtin_and_matches_the_interpreter(models, tmp_path):
    import onnx
    from tf2ir.tools.tflite_reference import run_tflite
    plugins = tmp_path / "plugins"
    write_plugin(plugins, "lite_ops", LITE_OPS)
    manager = PluginManager(plugin_dirs=[str(plugins)], use_env=False)
    (override,) = manager.overrides_for(["MEAN"], "TFLITE")
    assert override.winner.plugin.endswith("lite_ops.py")
    assert [r.plugin for r in override.losers] == ["builtin_tflite_reduce"]
    out = str(tmp_path / "conv_mean.onnx")
    env = {**os.environ, PLUGIN_PATH_ENV: str(plugins)}
    result = run_cli("convert", models["conv_mean"], "-o", out, env=env)
    assert result.returncode == 0, result.stderr
    assert "TFLITE:MEAN: " in result.stderr + result.stdout    # the override is reported
    ops = [n.op_type for n in onnx.load(out).graph.node]
    assert "ReduceSum" in ops and not {"ReduceMean", "GlobalAveragePool"} & set(ops)  # the plugin's MEAN
    x = np.random.default_rng(0).uniform(-2, 2, (1, 8, 8, 3)).astype(np.float32)
    expected = run_tflite(models["conv_mean"], {"x": x})
    (got,) = onnx_run(out, {"x": x})
    (want,) = expected.values()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    builtin = str(tmp_path / "builtin.onnx")
    assert run_cli("convert", models["conv_mean"], "-o", builtin).returncode == 0
    assert "ReduceSum" not in [n.op_type for n in onnx.load(builtin).graph.node]


# --- the built-in index -----------------------------------------------------------------

@pytest.fixture
def fresh_index(monkeypatch):
    """The index as `python -m tf2ir.tools.plugin_index` would write it now (the checked-in
    one goes stale while built-in modules change), installed for this test."""
    from tf2ir.tools import plugin_index
    namespace: dict = {}
    exec(compile(plugin_index.render(), "_index.py", "exec"), namespace)
    for name in ("FINGERPRINT", "SOURCES", "HOOKS", "ORIGIN_TYPES", "IR_TYPES", "FUSION_PASSES"):
        monkeypatch.setattr(_index, name, namespace[name], raising=False)
    index_module.builtin_index.cache_clear()
    yield namespace
    index_module.builtin_index.cache_clear()


def test_the_index_keys_tflite_claims_by_framework(fresh_index):
    origin_types = fresh_index["ORIGIN_TYPES"]
    assert "TFLITE:CONV_2D" in origin_types["tflite_conv"]
    assert "TFLITE:MEAN" in origin_types["tflite_reduce"]
    assert "Conv2D" in origin_types["conv"] and "CONV_2D" not in origin_types["conv"]
    index = index_module.builtin_index()
    assert index is not None and index.origin_types["TFLITE:CONV_2D"] == ("tflite_conv",)
    for module, keys in origin_types.items():
        for key in keys:
            framework, origin = split_mapping_key(key)
            assert module.startswith("tflite") or framework == "TENSORFLOW", (module, key)


def test_a_tflite_conversion_imports_only_the_tflite_modules_it_needs(fresh_index, models, tmp_path):
    from tf2ir.parser.pipeline import Pipeline
    manager = PluginManager(use_env=False)
    assert manager._index is not None
    lite_modules = [s for s in fresh_index["HOOKS"]["tf2ir_op_mappings"] if s.startswith("tflite")]
    assert len(lite_modules) >= 2

    def imported(short):
        return manager.pm.get_plugin(f"builtin_{short}").module is not None

    assert not any(imported(s) for s in lite_modules)
    graph, report = Pipeline(manager).convert_file(models["conv_mean"])
    assert {"CONV_2D", "MEAN"} <= set(report.op_types)
    assert sorted(s for s in lite_modules if imported(s)) == ["tflite_conv", "tflite_reduce"]


def test_a_plugins_tflite_claim_loads_the_builtin_it_overrides(fresh_index, tmp_path, monkeypatch):
    """A lazy manager decides "TFLITE:CONV_2D" as one that imports everything: the built-in
    claimer is loaded and reported as overridden."""
    from tf2ir.plugins import manager as manager_module
    mapping_plugin(tmp_path, "my_conv", """[register_op("PartitionedCall").framework_type("TFLITE")
                                            .origin_op_type("CONV_2D").with_priority(3)]""")
    lazy = PluginManager(plugin_dirs=[str(tmp_path)], use_env=False)
    with monkeypatch.context() as patch:
        patch.setattr(manager_module, "builtin_index", lambda: None)
        eager = PluginManager(plugin_dirs=[str(tmp_path)], use_env=False)
    for manager in (lazy, eager):
        (override,) = manager.overrides_for(["CONV_2D"], "TFLITE")
        assert override.winner.plugin.endswith("my_conv.py")
        assert [r.plugin for r in override.losers] == ["builtin_tflite_conv"]
    assert [str(o) for o in lazy.overrides_for(["CONV_2D"], "TFLITE")] == \
        [str(o) for o in eager.overrides_for(["CONV_2D"], "TFLITE")]
