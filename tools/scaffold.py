"""`tf2ir new-plugin`: writes an installable plugin package for one origin TF op type.

The package maps the origin op to an IR op: an existing one (`--ir-op`), or a new IR op
it declares itself, whose lowering emits a node of a custom ONNX domain. That lowering is
the author's starting point: replace it with standard ONNX ops, or give onnxruntime a
custom-op kernel for the domain.
"""

from __future__ import annotations

import keyword
import os
import re
from typing import Dict, Optional

from tf2ir.ir.errors import ConversionError, ExitStatus

SETUP_CFG = """\
[metadata]
name = {name}
version = 0.1.0
description = tf2ir plugin mapping TensorFlow {origin} to IR {ir_op}

[options]
packages = {package}
python_requires = >=3.10
install_requires =
    tf2ir

[options.entry_points]
tf2ir =
    {package} = {package}.plugin
"""

PYPROJECT = """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"
"""

PLUGIN_NEW_OP = '''\
"""tf2ir plugin: TensorFlow {origin} → IR {ir_op}.

The IR op is declared here with its shape inference and ONNX lowering. The lowering
emits a node of the custom ONNX domain {domain!r}: replace it with standard ONNX ops, or
register an onnxruntime custom-op kernel for that domain.
"""

from tf2ir.ir import op_prototype
from tf2ir.opp.common import same_as_input
from tf2ir.plugins import ImplyType, auto_mapping, hookimpl, register_op

DOMAIN = {domain!r}

prototype = op_prototype({ir_op!r}, "TensorFlow {origin}, mapped by {package}") \\
    .dynamic_input("x").output("y")
prototype.infer(same_as_input)   # the output looks like the first input; adjust if not


@prototype.lower
def lower_to_onnx(ctx, node):
    inputs = [ctx.input(i) for i in range(len(node.inputs))]
    attrs = {{k: v for k, v in node.attrs.items() if isinstance(v, (int, float, str))}}
    ctx.emit({ir_op!r}, inputs, [ctx.output(0)], domain=DOMAIN, **attrs)


def parse_params(src, op):
    """Fill the IR op from the TF node: same-named attributes map automatically."""
    auto_mapping(src, op)


@hookimpl
def tf2ir_op_prototypes():
    return [prototype]


@hookimpl
def tf2ir_op_mappings():
    return [register_op({ir_op!r}).framework_type("TENSORFLOW").origin_op_type({origin!r})
            .parse_params_fn(parse_params).imply_type(ImplyType.CUSTOM)]
'''

PLUGIN_EXISTING_OP = '''\
"""tf2ir plugin: TensorFlow {origin} → the existing IR op {ir_op}."""

from tf2ir.plugins import ImplyType, auto_mapping, hookimpl, register_op


def parse_params(src, op):
    """Fill the IR op from the TF node: same-named attributes map automatically."""
    auto_mapping(src, op)


@hookimpl
def tf2ir_op_mappings():
    return [register_op({ir_op!r}).framework_type("TENSORFLOW").origin_op_type({origin!r})
            .parse_params_fn(parse_params).imply_type(ImplyType.CUSTOM).with_priority(1)]
'''

TEST = '''\
"""Converts a one-node GraphDef with {origin} through this plugin (no TensorFlow needed)."""

import os

from tensorboard.compat.proto import graph_pb2

from tf2ir.ir.onnx.compile import compile_to_model
from tf2ir.parser import convert_graph_def
from tf2ir.plugins import PluginManager

PLUGIN_FILE = os.path.join(os.path.dirname(__file__), "..", {package!r}, "plugin.py")


def manager():
    found = PluginManager()
    if found.lookup({origin!r}) is not None and found.lookup({origin!r}).plugin == {package!r}:
        return found                          # installed: found through the entry point
    return PluginManager(plugin_dirs=[PLUGIN_FILE])


def test_the_plugin_maps_{test_name}():
    graph_def = graph_pb2.GraphDef()
    x = graph_def.node.add(name="x", op="Placeholder")
    x.attr["dtype"].type = 1                  # DT_FLOAT
    x.attr["shape"].shape.dim.add().size = 4
    node = graph_def.node.add(name="op", op={origin!r}, input=["x"])
    node.attr["T"].type = 1
    graph, report = convert_graph_def(graph_def, "one_node.pb", manager())
    assert [n.op_type for n in graph.nodes] == [{ir_op!r}]
    model = compile_to_model(graph)
    assert len(model.graph.node) >= 1
'''


def package_name(name: str) -> str:
    package = re.sub(r"[^A-Za-z0-9_]", "_", name).lower()
    if not package or package[0].isdigit() or keyword.iskeyword(package):
        package = "tf2ir_" + package
    return package


def write_plugin_package(name: str, origin: str, out_dir: str = ".",
                         ir_op: Optional[str] = None) -> str:
    """Write the package into OUT_DIR/NAME; return its path. Refuses to overwrite."""
    from tf2ir.plugins.manager import PluginManager
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_.\-]*", name):
        raise ConversionError(f"plugin name {name!r} must start with a letter and use letters, "
                              "digits, '_', '-' or '.'", exit_code=ExitStatus.USAGE)
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", origin):
        raise ConversionError(f"--origin-op {origin!r} is not a TF op type name", exit_code=ExitStatus.USAGE)
    root = os.path.join(out_dir, name)
    if os.path.exists(root):
        raise ConversionError(f"{root} exists already; choose another name or directory",
                              exit_code=ExitStatus.USAGE)
    package = package_name(name)
    declared = PluginManager(use_env=False).prototypes
    existing = ir_op is not None and ir_op in declared
    ir_op = ir_op or origin
    if not existing and ir_op in declared:
        raise ConversionError(f"IR op {ir_op} exists already; pass --ir-op {ir_op} to map to it, "
                              "or another --ir-op name to declare a new one", exit_code=ExitStatus.USAGE)
    values = dict(name=name, package=package, origin=origin, ir_op=ir_op,
                  domain=f"ai.tf2ir.{package}", test_name=re.sub(r"\W", "_", origin).lower())
    files: Dict[str, str] = {
        "setup.cfg": SETUP_CFG.format(**values),
        "pyproject.toml": PYPROJECT,
        os.path.join(package, "__init__.py"): f'"""tf2ir plugin package {name}."""\n',
        os.path.join(package, "plugin.py"): (PLUGIN_EXISTING_OP if existing else PLUGIN_NEW_OP).format(**values),
        os.path.join("tests", f"test_{package}.py"): TEST.format(**values),
        "README.md": f"# {name}\n\ntf2ir plugin: TensorFlow `{origin}` → IR `{ir_op}`.\n\n"
                     f"```sh\npip install .\ntf2ir plugins | grep {origin}\npython -m pytest tests\n```\n",
    }
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
    return root
