"""Op prototypes through the plugin system (`tf2ir_op_prototypes`): provenance, priorities
and conflicts as for op mappings, plugin files of one basename kept apart, and the
built-in op families registered the same way."""

from __future__ import annotations

import os
import textwrap

import numpy as np
import pytest
from tensorboard.compat.proto import graph_pb2

from tests.conftest import run_cli, run_onnx
from tf2ir.ir import ConversionError
from tf2ir.ir.prototype import default_prototypes
from tf2ir.plugins import PluginManager


def write_plugin(directory, tf_op, ir_op, onnx_op, priority=None):
    """directory/plugin.py (every scaffold's name) mapping `tf_op` to a new IR op `ir_op`
    that lowers to ONNX `onnx_op`."""
    os.makedirs(directory, exist_ok=True)
    priority_call = f".with_priority({priority})" if priority is not None else ""
    path = os.path.join(str(directory), "plugin.py")
    with open(path, "w") as f:
        f.write(textwrap.dedent(f'''
            from tf2ir.ir import op_prototype
            from tf2ir.opp.shapes import same_as_input
            from tf2ir.plugins import auto_mapping, hookimpl, register_op

            proto = op_prototype({ir_op!r}).input("x").output("y"){priority_call}
            proto.infer(same_as_input)

            @proto.lower
            def lower(ctx, node):
                ctx.emit({onnx_op!r}, [ctx.input(0)], [ctx.output(0)])

            @hookimpl
            def tf2ir_op_prototypes():
                return [proto]

            @hookimpl
            def tf2ir_op_mappings():
                return [register_op({ir_op!r}).origin_op_type({tf_op!r})
                        .parse_params_fn(auto_mapping).with_priority(1)]
        '''))
    return os.path.abspath(path)


def sin_cos_graph(path):
    g = graph_pb2.GraphDef()
    x = g.node.add(name="x", op="Placeholder")
    x.attr["dtype"].type = 1
    x.attr["shape"].shape.dim.add().size = 5
    for name, op in (("s", "Sin"), ("c", "Cos")):
        node = g.node.add(name=name, op=op, input=["x"])
        node.attr["T"].type = 1
    with open(path, "wb") as f:
        f.write(g.SerializeToString())
    return path


def test_two_plugin_files_of_one_basename_keep_their_own_ops(tmp_path):
    a = write_plugin(tmp_path / "a", "Sin", "PluginSin", "Sin")
    b = write_plugin(tmp_path / "b", "Cos", "PluginCos", "Cos")
    manager = PluginManager(plugin_dirs=[a, b], use_env=False)
    assert manager.prototypes["PluginSin"].plugin == a
    assert manager.prototypes["PluginCos"].plugin == b
    model = sin_cos_graph(str(tmp_path / "m.pb"))
    out = str(tmp_path / "m.onnx")
    result = run_cli("convert", model, "-o", out, "--plugin-dir", a, "--plugin-dir", b)
    assert result.returncode == 0, result.stderr
    x = np.linspace(-2, 2, 5).astype(np.float32)
    s, c = run_onnx(out, {"x": x})
    np.testing.assert_allclose(s, np.sin(x), rtol=1e-6)
    np.testing.assert_allclose(c, np.cos(x), rtol=1e-6)


def test_one_ir_op_declared_twice_at_one_priority_is_an_error(tmp_path):
    a = write_plugin(tmp_path / "a", "Sin", "PluginOp", "Sin")
    b = write_plugin(tmp_path / "b", "Cos", "PluginOp", "Cos")
    with pytest.raises(ConversionError) as info:
        PluginManager(plugin_dirs=[a, b], use_env=False)
    message = str(info.value)
    assert "IR op type PluginOp is declared by" in message and a in message and b in message


def test_a_higher_priority_prototype_overrides_and_is_reported(tmp_path):
    path = write_plugin(tmp_path / "a", "Sin", "Relu", "Sin", priority=5)
    manager = PluginManager(plugin_dirs=[path], use_env=False)
    assert manager.prototypes["Relu"].plugin == path
    [override] = manager.prototype_overrides
    assert "prototype Relu" in str(override) and "builtin_" in str(override)
    listing = run_cli("plugins", "--plugin-dir", path)
    assert listing.returncode == 0 and "override: prototype Relu" in listing.stdout


def test_builtin_families_declare_their_prototypes_through_the_hook():
    manager = PluginManager(entry_points=False, use_env=False)
    families = {proto.plugin for proto in manager.prototypes.values()}
    assert families and all(name.startswith("builtin_") for name in families)
    assert manager.prototypes["Conv2D"].plugin == "builtin_conv"
    assert manager.prototype_table.get("Conv2D") is manager.prototypes["Conv2D"]
    assert default_prototypes().get("Conv2D") is not manager.prototypes["Conv2D"]   # its own
