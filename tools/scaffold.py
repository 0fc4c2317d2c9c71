"""`tf2ir new-plugin`: writes an installable plugin package for one origin TF op type.

The package maps the origin op to an IR op: an existing one (`--ir-op`), or a new IR op
it declares itself, whose lowering emits a node of a custom ONNX domain and whose numpy
kernel tf2ir's runtime entry registers with onnxruntime. The author writes the kernel (or
replaces the lowering with standard ONNX ops); the package's test runs the op against TF.
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

The IR op is declared here with its shape inference, ONNX lowering and reference kernel.
The lowering emits a node of the custom ONNX domain {domain!r}; the kernel (numpy) is its
compute: tf2ir folds constants with it, and `tf2ir.InferenceSession` / `tf2ir run` /
`tf2ir verify` register it with onnxruntime, so the converted model runs unchanged.
Write {origin}'s semantics in `kernel`, or replace the lowering with standard ONNX ops.
"""

import numpy as np

from tf2ir.ir import op_prototype
from tf2ir.opp.shapes import same_as_input
from tf2ir.plugins import ImplyType, auto_mapping, hookimpl, register_op

DOMAIN = {domain!r}

prototype = op_prototype({ir_op!r}, "TensorFlow {origin}, mapped by {package}") \\
    .dynamic_input("x").output("y")
prototype.infer(same_as_input)   # the output looks like the first input; adjust if not


@prototype.lower
def lower_to_onnx(ctx, node):
    inputs = [ctx.input(i) for i in range(len(node.inputs))]
    attrs = {{k: v for k, v in node.attrs.items() if isinstance(v, (int, float, str))}}
    getattr(ctx.op, {ir_op!r})(*inputs, out=ctx.output(0), domain=DOMAIN, **attrs)


@prototype.kernel
def kernel(*inputs, **attrs):
    """{origin} on numpy arrays: the inputs in order, the node's attributes by name;
    returns an array (a tuple for several outputs)."""
    raise NotImplementedError("write {origin}'s compute in {package}/plugin.py: kernel")


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
"""Converts a one-node GraphDef with {origin} through this plugin, runs it in onnxruntime
through tf2ir's runtime entry and compares with TensorFlow (where TensorFlow is installed)."""

import os

import numpy as np
import pytest
from tensorboard.compat.proto import graph_pb2

import tf2ir
from tf2ir.ir.onnx.compile import compile_to_model
from tf2ir.parser import convert_graph_def
from tf2ir.plugins import PluginManager

PLUGIN_FILE = os.path.join(os.path.dirname(__file__), "..", {package!r}, "plugin.py")
INPUT = np.linspace(0.25, 4.0, 8, dtype=np.float32)   # choose values {origin} accepts


def manager():
    found = PluginManager()
    if found.lookup({origin!r}) is not None and found.lookup({origin!r}).plugin == {package!r}:
        return found                          # installed: found through the entry point
    return PluginManager(plugin_dirs=[PLUGIN_FILE])


def one_node_graph():
    graph_def = graph_pb2.GraphDef()
    x = graph_def.node.add(name="x", op="Placeholder")
    x.attr["dtype"].type = 1                  # DT_FLOAT
    x.attr["shape"].shape.dim.add().size = INPUT.size
    node = graph_def.node.add(name="op", op={origin!r}, input=["x"])
    node.attr["T"].type = 1
    return graph_def


def test_the_plugin_maps_{test_name}():
    plugins = manager()
    graph, report = convert_graph_def(one_node_graph(), "one_node.pb", plugins)
    assert [n.op_type for n in graph.nodes] == [{ir_op!r}]
    session = tf2ir.InferenceSession(compile_to_model(graph), manager=plugins)
    (result,) = session.run(None, {{"x": INPUT}})
    tf = pytest.importorskip("tensorflow")
    tf_graph = tf.Graph()
    with tf_graph.as_default():
        tf.compat.v1.import_graph_def(
            tf.compat.v1.GraphDef.FromString(one_node_graph().SerializeToString()), name="")
    with tf.compat.v1.Session(graph=tf_graph) as tf_session:
        expected = tf_session.run("op:0", {{"x:0": INPUT}})
    np.testing.assert_allclose(result, expected, rtol=1e-5, atol=1e-6)
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
