"""Plugins are blamed, never silent (issue 21, findings 11 and 14): whatever a plugin's code
does at conversion time (its lowering raises, its kernel returns a string, a wrong shape or
calls sys.exit while folding constants, its registration has a bad argument), `tf2ir
convert` ends with one line naming the plugin file, the node and its op, exit status 1, and
no output file. Each plugin below is a file in a --plugin-dir; the models are small .pbtxt
GraphDefs (no TensorFlow needed)."""

from __future__ import annotations

import textwrap

import pytest

from tests.conftest import run_cli
from tf2ir.ir import ConversionError
from tf2ir.plugins import register_op
from tf2ir.plugins.manager import PLUGIN_PATH_ENV, PluginManager

# x (2x3) -> t = Twice(x) -> y = Relu(t): Twice runs only at run time, lowered here.
LIVE = """node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }
       attr { key: "shape" value { shape { dim { size: 2 } dim { size: 3 } } } } }
node { name: "t" op: "Twice" input: "x" attr { key: "T" value { type: DT_FLOAT } } }
node { name: "y" op: "Relu" input: "t" attr { key: "T" value { type: DT_FLOAT } } }
"""
# c (a 2x3 constant) -> t = Twice(c) -> y = Add(x, t): constant folding runs Twice's kernel.
FOLDED = """node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }
       attr { key: "shape" value { shape { dim { size: 2 } dim { size: 3 } } } } }
node { name: "c" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
       attr { key: "value" value { tensor { dtype: DT_FLOAT
           tensor_shape { dim { size: 2 } dim { size: 3 } } float_val: 1.5 } } } }
node { name: "t" op: "Twice" input: "c" attr { key: "T" value { type: DT_FLOAT } } }
node { name: "y" op: "Add" input: "x" input: "t" attr { key: "T" value { type: DT_FLOAT } } }
"""
MODELS = {"live": LIVE, "folded": FOLDED}

# The plugin: IR op Twice (a prototype with inference, lowering and kernel) for TF op Twice.
# Each case replaces one of the PARSE, INFER, LOWER and KERNEL lines with what goes wrong.
PLUGIN = """\
import sys

import numpy as np

from tf2ir.ir import op_prototype
from tf2ir.opp.shapes import same_as_input
from tf2ir.plugins import auto_mapping, hookimpl, register_op

twice = op_prototype("Twice", "2 x").input("x", ["float32"]).output("y")


@twice.infer
def infer(node):
    pass  # INFER
    return same_as_input(node)


@twice.lower
def lower(ctx, node):
    pass  # LOWER
    ctx.emit("Twice", [ctx.input(0)], [ctx.output(0)], domain="ai.tf2ir.twice")


@twice.kernel
def kernel(x):
    pass  # KERNEL
    return x * 2


def parse(src, op):
    pass  # PARSE
    auto_mapping(src, op)


@hookimpl
def tf2ir_op_prototypes():
    return [twice]


@hookimpl
def tf2ir_op_mappings():
    return [register_op("Twice").origin_op_type(ORIGIN).parse_params_fn(parse)]
"""


def plugin_source(origin: str = '"Twice"', **steps: str) -> str:
    text = PLUGIN.replace("ORIGIN", origin)
    for place, code in steps.items():
        text = text.replace(f"pass  # {place}", code)
    return text


def convert(tmp_path, model: str, source: str):
    """Convert `model` with the plugin `source`; (result, plugin file, output path)."""
    folder = tmp_path / "plugins"
    folder.mkdir()
    plugin = folder / "twice_plugin.py"
    plugin.write_text(source)
    (tmp_path / "m.pbtxt").write_text(model)
    out = tmp_path / "m.onnx"
    result = run_cli("convert", str(tmp_path / "m.pbtxt"), "-o", str(out),
                     "--plugin-dir", str(folder))
    return result, str(plugin), out


def one_error_line(result, out, *needles: str) -> str:
    """The run failed with exit 1, one stderr line holding every needle, no output file."""
    assert result.returncode == 1, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    line = lines[0]
    assert line.startswith("tf2ir: error: ") and "internal error" not in line, line
    for needle in needles:
        assert needle in line, line
    assert not out.exists() and not list(out.parent.glob("*.tmp"))
    return line


def test_the_plugin_converts_when_nothing_goes_wrong(tmp_path):
    """The fixture is sound: the same plugin, unbroken, converts both models."""
    for name, model in MODELS.items():
        folder = tmp_path / name
        folder.mkdir()
        result, _, out = convert(folder, model, plugin_source())
        assert result.returncode == 0 and out.exists(), result.stderr


# -- 11a: a lowering that raises ---------------------------------------------------------------
def test_a_lowering_that_raises_names_plugin_op_and_node(tmp_path):
    result, plugin, out = convert(tmp_path, LIVE, plugin_source(
        LOWER="raise RuntimeError('no lowering today')"))
    line = one_error_line(result, out, f"plugin {plugin}", "node 't'", "op Twice",
                          "its ONNX lowering failed: RuntimeError: no lowering today")
    assert "node 'y'" not in line


# -- 11b: a kernel that returns a string while folding -------------------------------------------
def test_a_kernel_returning_a_string_while_folding_is_its_error(tmp_path):
    result, plugin, out = convert(tmp_path, FOLDED, plugin_source(KERNEL="return 'oops'"))
    one_error_line(result, out, f"plugin {plugin}", "node 't'", "op Twice",
                   "its kernel returned str 'oops' for output 0",
                   "expected a float32 array of shape [2,3]")


# -- 11c: a folded result unlike the node's output: the plugin's node, not Add downstream --------
@pytest.mark.parametrize("result, needle", [
    ("np.zeros((7,), np.float32)", "its kernel returned shape [7] for output 0"),
    ("np.zeros((3, 2), np.float32)", "its kernel returned shape [3, 2] for output 0"),
    ("(x * 2).astype(np.float64)", "its kernel returned a float64 array for output 0"),
    ("(x, x)", "its kernel returned 2 results for 1 outputs"),
])
def test_a_folded_result_unlike_the_declared_output_blames_the_plugins_node(
        tmp_path, result, needle):
    run, plugin, out = convert(tmp_path, FOLDED, plugin_source(KERNEL=f"return {result}"))
    line = one_error_line(run, out, f"plugin {plugin}", "node 't'", "op Twice", needle)
    assert "node 'y'" not in line and "op Add" not in line


# -- 11d: sys.exit (or any exception) in plugin code names the plugin ------------------------------
@pytest.mark.parametrize("place, model, what", [
    ("KERNEL", "folded", "its kernel"),          # while folding
    ("INFER", "live", "shape inference"),
    ("LOWER", "live", "its ONNX lowering"),      # (these two named the plugin already)
    ("PARSE", "live", "its parse function"),
])
def test_sys_exit_in_plugin_code_names_the_plugin_and_node(tmp_path, place, model, what):
    result, plugin, out = convert(tmp_path, MODELS[model], plugin_source(**{place: "sys.exit(3)"}))
    line = one_error_line(result, out, f"plugin {plugin}", "node 't'", "op Twice",
                          f"{what} called sys.exit(3)")
    assert "(a plugin?)" not in line


@pytest.mark.parametrize("place, model, what", [
    ("KERNEL", "folded", "its kernel"),
    ("INFER", "live", "shape inference"),
])
def test_any_exception_in_plugin_code_names_the_plugin_and_node(tmp_path, place, model, what):
    result, plugin, out = convert(tmp_path, MODELS[model], plugin_source(
        **{place: "raise RuntimeError('broken')"}))
    one_error_line(result, out, f"plugin {plugin}", "node 't'", "op Twice",
                   f"{what} failed: RuntimeError: broken")


# -- 14: a registration's bad argument names the plugin and the value ----------------------------
@pytest.mark.parametrize("origin, needle", [
    ("5", "an op type must be a string, not int 5"),
    ('""', "'' is not an op type"),
])
def test_a_bad_origin_op_type_names_the_plugin_and_the_value(tmp_path, origin, needle):
    result, plugin, out = convert(tmp_path, LIVE, plugin_source(origin=origin))
    one_error_line(result, out, f"plugin {plugin}", "origin_op_type", needle)


@pytest.mark.parametrize("build, needle", [
    ("register_op('Relu').origin_op_type('Relu', None)", "must be a string, not NoneType"),
    ("register_op('Relu').origin_op_type('two words')", "'two words' is not an op type"),
    ("register_op('Relu').origin_op_type('a\\nb')", "is not an op type"),
    ("register_op('Relu').origin_op_type()", "give at least one op type"),
    ("register_op(7).origin_op_type('Relu')", "not int 7"),
    ("register_op('').origin_op_type('Relu')", "'' is not an op type"),
    ("register_op('Relu').origin_op_type('Relu').with_priority('high')", "with_priority"),
    ("register_op('Relu').origin_op_type('Relu').with_priority(1.5)", "not float 1.5"),
    ("register_op('Relu').origin_op_type('Relu').with_priority(True)", "not bool True"),
    ("register_op('Relu').origin_op_type('Relu').parse_params_fn(42)", "expected a function"),
    ("register_op('Relu').origin_op_type('Relu').imply_type(3)", "imply type 3"),
    ("register_op('Relu').origin_op_type('Relu').framework_type(None)", "TENSORFLOW"),
    ("register_op('Relu')", "maps no TF op type"),
])
def test_every_bad_builder_argument_is_a_plugin_load_failure(tmp_path, monkeypatch, build, needle):
    monkeypatch.delenv(PLUGIN_PATH_ENV, raising=False)
    plugin = tmp_path / "bad_plugin.py"
    plugin.write_text(textwrap.dedent(f"""
        from tf2ir.plugins import hookimpl, register_op

        @hookimpl
        def tf2ir_op_mappings():
            return [{build}]
    """))
    with pytest.raises(ConversionError) as info:
        PluginManager(plugin_dirs=[str(tmp_path)], use_env=False, entry_points=False)
    line = str(info.value)
    assert "\n" not in line and info.value.exit_code == 1
    assert info.value.plugin == str(plugin) and needle in line, line


def test_good_builder_arguments_still_pass():
    reg = (register_op("TopK").origin_op_type(["TopKV2"], "TopK").with_priority("3")
           .imply_type("AI_CPU"))
    reg.validate()
    assert reg.origin_types == ["TopKV2", "TopK"] and reg.priority == 3


def test_the_command_lines_last_resort_names_a_plugin_file_in_the_traceback():
    """Plugin code reached outside the wrapped places still names its file, not "(a plugin?)"."""
    from tf2ir.tools.cli import _plugin_of
    code = compile("def hook():\n    raise SystemExit(3)\n", "/plugins/exits.py", "exec")
    namespace = {"__name__": "tf2ir_plugin_exits_0123456789"}
    exec(code, namespace)
    with pytest.raises(SystemExit) as info:
        namespace["hook"]()
    assert _plugin_of(info.value) == "/plugins/exits.py"
    assert _plugin_of(RuntimeError("not from a plugin")) is None
