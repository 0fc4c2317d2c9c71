"""`tf2ir new-plugin`: writes an installable plugin package for one origin TF op type.

The package maps the origin op to an existing IR op (`--ir-op`) or to a new one it declares,
whose lowering emits a node of a custom ONNX domain and whose numpy kernel (the author writes
it) tf2ir's runtime entry registers with onnxruntime; its test runs the op against TF.
With `--native` the package also carries a C++ kernel built at install (tools/scaffold_native.py).
With `--framework tflite` it maps a TFLite builtin or custom op (tools/scaffold_tflite.py).

The op's inputs, outputs and attributes come from TensorFlow's op registry where TensorFlow is
installed (imported here only, when a package is written); without it, one input is guessed.
"""

from __future__ import annotations

import keyword
import os
import re
from typing import Any, Dict, Optional

from tf2ir.ir.errors import ConversionError, ExitStatus
from tf2ir.tools import scaffold_tflite
from tf2ir.tools.scaffold_tflite import Port, Signature, guessed_signature

SETUP_CFG = """\
[metadata]
name = {name}
version = 0.1.0
description = tf2ir plugin mapping {framework_name} {origin} to IR {ir_op}

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

PLUGIN_NEW_OP = """\
\"\"\"tf2ir plugin: {framework_name} {origin} → IR {ir_op}.

The IR op is declared here with its shape inference, ONNX lowering and reference kernel.
The lowering emits a node of the custom ONNX domain {domain!r}; the kernel (numpy) is its
compute: tf2ir folds constants with it, and `tf2ir.InferenceSession` / `tf2ir run` /
`tf2ir verify` register it with onnxruntime, so the converted model runs unchanged.
Write {origin}'s semantics in `kernel`, or replace the lowering with standard ONNX ops.{native_doc}
\"\"\"
{imports}
import numpy as np

from tf2ir.ir import op_prototype
{shape_import}
from tf2ir.plugins import ImplyType, auto_mapping, hookimpl, {plugin_names}

DOMAIN = {domain!r}

# {source}
prototype = (op_prototype({ir_op!r}, "{framework_name} {origin}, mapped by {package}")
{ports})
{infer}


@prototype.lower
def lower_to_onnx(ctx, node):
    inputs = [ctx.input(i) for i in range(len(node.inputs))]
    attrs = {{k: v for k, v in node.attrs.items() if isinstance(v, (int, float, str))}}
    getattr(ctx.op, {ir_op!r})(*inputs, {outs}, domain=DOMAIN, **attrs)


@prototype.kernel
def kernel({params}, **attrs):
    \"\"\"{origin} on numpy arrays: the inputs in order, the node's attributes by name;
    returns an array (a tuple for several outputs).\"\"\"
    raise NotImplementedError("write {origin}'s compute in {package}/plugin.py: kernel")


{parse_params}


@hookimpl
def tf2ir_op_prototypes():
    return [prototype]


@hookimpl
def tf2ir_op_mappings():
    return [register_op({ir_op!r}).framework_type({framework!r}).origin_op_type({origin!r})
            .parse_params_fn(parse_params).imply_type(ImplyType.CUSTOM){priority}]
{native_hook}"""

PLUGIN_EXISTING_OP = '''\
"""tf2ir plugin: {framework_name} {origin} → the existing IR op {ir_op}."""

from tf2ir.plugins import ImplyType, auto_mapping, hookimpl, register_op


{parse_params}


@hookimpl
def tf2ir_op_mappings():
    return [register_op({ir_op!r}).framework_type({framework!r}).origin_op_type({origin!r})
            .parse_params_fn(parse_params).imply_type(ImplyType.CUSTOM).with_priority(1)]
'''

TEST = '''\
\"\"\"Converts a one-node GraphDef with {origin} through this plugin, runs it in onnxruntime
through tf2ir's runtime entry and compares with TensorFlow (where TensorFlow is installed).

{source}.\"\"\"

import os
import warnings

import numpy as np
import pytest
from google.protobuf import text_format
from tensorboard.compat.proto import graph_pb2, types_pb2

import tf2ir
from tf2ir.ir.onnx.compile import compile_to_model
from tf2ir.parser import convert_graph_def
from tf2ir.plugins import PluginManager

PLUGIN_FILE = os.path.join(os.path.dirname(__file__), "..", {package!r}, "plugin.py")
DOMAIN = {domain!r}
INPUTS = {{   # the placeholders feeding {origin}: choose values it accepts
{inputs}
}}
{chosen}NODE = \"\"\"name: "op" op: "{origin}" {node_inputs}
{node_attrs}
\"\"\"
OUTPUTS = {outputs!r}   # {output_names}
TF_TYPES = {{"float16": "DT_HALF", "float32": "DT_FLOAT", "float64": "DT_DOUBLE", "int8": "DT_INT8",
            "int16": "DT_INT16", "int32": "DT_INT32", "int64": "DT_INT64", "uint8": "DT_UINT8",
            "uint16": "DT_UINT16", "bool": "DT_BOOL", "object": "DT_STRING"}}


def manager():
    found = PluginManager()
    if found.lookup({origin!r}) is not None and found.lookup({origin!r}).plugin == {package!r}:
        return found                          # installed: found through the entry point
    return PluginManager(plugin_dirs=[PLUGIN_FILE])


def one_node_graph():
    graph_def = graph_pb2.GraphDef()
    for name, value in INPUTS.items():
        placeholder = graph_def.node.add(name=name, op="Placeholder")
        placeholder.attr["dtype"].type = types_pb2.DataType.Value(TF_TYPES[value.dtype.name])
        placeholder.attr["shape"].shape.SetInParent()
        for size in value.shape:
            placeholder.attr["shape"].shape.dim.add().size = size
    text_format.Merge(NODE, graph_def.node.add())
    return graph_def


def comparable(array):
    \"\"\"TensorFlow gives strings as bytes, onnxruntime as str.\"\"\"
    array = np.asarray(array)
    if array.dtype != object:
        return array
    return np.vectorize(lambda s: s.encode() if isinstance(s, str) else s, otypes=[object])(array)


def test_the_plugin_maps_{test_name}():
    plugins = manager()
    graph, report = convert_graph_def(one_node_graph(), "one_node.pb", plugins)
    assert [n.op_type for n in graph.nodes] == [{ir_op!r}]
    session = tf2ir.InferenceSession(compile_to_model(graph), manager=plugins)
    results = session.run(None, INPUTS)
{native_check}    tf = pytest.importorskip("tensorflow")
    tf_graph = tf.Graph()
    with tf_graph.as_default():
        tf.compat.v1.import_graph_def(
            tf.compat.v1.GraphDef.FromString(one_node_graph().SerializeToString()), name="")
    with tf.compat.v1.Session(graph=tf_graph) as tf_session:
        expected = tf_session.run(OUTPUTS, {{name + ":0": value for name, value in INPUTS.items()}})
    assert len(results) == len(expected)
    for result, want in zip(results, expected):
        if comparable(want).dtype == object:
            np.testing.assert_array_equal(comparable(result), comparable(want))
        else:
            np.testing.assert_allclose(result, want, rtol=1e-5, atol=1e-6)
'''


def package_name(name: str) -> str:
    package = re.sub(r"[^A-Za-z0-9_]", "_", name).lower()
    if not package or package[0].isdigit() or keyword.iskeyword(package):
        package = "tf2ir_" + package
    return package


def write_plugin_package(name: str, origin: str, out_dir: str = ".",
                         ir_op: Optional[str] = None, native: bool = False,
                         framework: str = "tensorflow") -> str:
    """Write the package into OUT_DIR/NAME; return its path. Refuses to overwrite. `native`:
    with a C++ kernel built at install (an op the package declares only). `framework`:
    "tensorflow", or "tflite" for a TFLITE mapping of a TFLite builtin or custom op."""
    from tf2ir.plugins.manager import PluginManager
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_.\-]*", name):
        raise ConversionError(f"plugin name {name!r} must start with a letter and use letters, "
                              "digits, '_', '-' or '.'", exit_code=ExitStatus.USAGE)
    lite = scaffold_tflite.check_origin(framework, origin, native)
    root = os.path.join(out_dir, name)
    if os.path.exists(root):
        raise ConversionError(f"{root} exists already; choose another name or directory",
                              exit_code=ExitStatus.USAGE)
    package = package_name(name)
    installed = PluginManager(use_env=False)
    declared = installed.prototypes
    existing = ir_op is not None and ir_op in declared
    ir_op = ir_op or (scaffold_tflite.ir_name(origin) if lite else origin)
    if not existing and ir_op in declared:
        raise ConversionError(f"IR op {ir_op} exists already; pass --ir-op {ir_op} to map to it, "
                              "or another --ir-op name to declare a new one", exit_code=ExitStatus.USAGE)
    if existing and native:
        raise ConversionError(f"--native writes a kernel for an IR op the package declares; {ir_op} "
                              "is tf2ir's (leave out --ir-op, or --native)", exit_code=ExitStatus.USAGE)
    signature = (scaffold_tflite.tflite_signature(origin) if lite else None) or op_signature(origin)
    values = dict(name=name, package=package, origin=origin, ir_op=ir_op,
                  domain=f"ai.tf2ir.{package}", test_name=re.sub(r"\W", "_", origin).lower(),
                  **scaffold_tflite.framework_values(lite))
    values.update(test_values(origin, signature), native_check="", native_doc="", native_hook="",
                  imports="", plugin_names="register_op",   # over a built-in mapping of origin:
                  priority=".with_priority(1)" if installed.lookup(
                      origin, values["framework"]) is not None else "",
                  **(scaffold_tflite.tflite_values(origin, signature) if lite else {}))
    files: Dict[str, str] = {}
    if native:
        from tf2ir.tools.scaffold_native import native_files
        files.update(native_files(values, signature))   # fills values' native_* entries
    values.update(plugin_values(signature))
    files.update({
        "setup.cfg": SETUP_CFG.format(**values),
        "pyproject.toml": PYPROJECT,
        os.path.join(package, "__init__.py"): f'"""tf2ir plugin package {name}."""\n',
        os.path.join(package, "plugin.py"): (PLUGIN_EXISTING_OP if existing else PLUGIN_NEW_OP).format(**values),
        os.path.join("tests", f"test_{package}.py"): (scaffold_tflite.TEST if lite else TEST).format(**values),
    })
    files.setdefault("README.md", f"# {name}\n\ntf2ir plugin: {values['framework_name']} `{origin}` → IR "
                                  f"`{ir_op}`.\n\n```sh\npip install .\ntf2ir plugins | grep {origin}\n"
                                  "python -m pytest tests\n```\n")
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
    return root


def plugin_values(signature: "Signature") -> Dict[str, str]:
    """The prototype's ports and attributes, the kernel's parameters, the lowering's outputs."""
    lines = []
    if signature.variadic:   # a list input (N × T): one dynamic group, the node's inputs
        lines.append('.dynamic_input("inputs")')
    else:
        lines += [f'.input({p.name!r}{", [%r]" % p.dtype if p.fixed else ""})' for p in signature.inputs]
    lines += [f'.output({p.name!r}{", [%r]" % p.dtype if p.fixed else ""})' for p in signature.outputs]
    for attr, kind, default in signature.attrs:
        lines.append(f".attr({attr!r}, {kind!r}" + (f", {default!r})" if default is not None else ")"))
    count = len(signature.outputs)
    first = signature.inputs[0] if signature.inputs else None
    if first is not None and count == 1 and not signature.outputs[0].fixed \
            and signature.outputs[0].attr == first.attr:
        infer = "prototype.infer(same_as_input)   # the output looks like the first input; adjust if not"
        shape_import = "from tf2ir.opp.shapes import same_as_input"
    else:
        shape_import = "from tf2ir.ir.tensor import TensorDesc"
        descs = []
        for port in signature.outputs:
            source = next((i for i, p in enumerate(signature.inputs) if port.attr and p.attr == port.attr), None)
            descs.append(repr(port.dtype) if source is None and port.fixed or first is None else
                         f"node.inputs[{source or 0}].desc.dtype")
        shape = "node.inputs[0].desc.shape" if first is not None else "None"
        infer = ("\n\n@prototype.infer\ndef infer(node):\n"
                 '    """The outputs\' descs, each shaped like the first input: adjust to the op\'s."""\n'
                 "    return [" + (",\n            ".join(f"TensorDesc({d}, {shape})" for d in descs)) + "]")
    return dict(infer=infer, shape_import=shape_import, ports="\n".join(" " * 13 + line for line in lines),
                params="*inputs" if signature.variadic else ", ".join(p.name for p in signature.inputs),
                outs="out=ctx.output(0)" if count == 1 else
                f"outputs=[ctx.output(i) for i in range({count})]")


def test_values(origin: str, signature: "Signature") -> Dict[str, str]:
    """The generated test's placeholders, node and fetches."""
    inputs, floats = [], 0
    for port in signature.inputs:
        numpy = NUMPY_OF[port.dtype]
        if port.dtype.startswith("float"):
            low, high = [(0.25, 4.0), (0.5, 2.0)][min(floats, 1)]
            value, floats = f"np.linspace({low}, {high}, 8, dtype=np.{numpy})", floats + 1
        elif port.dtype == "bool":
            value = "np.array([True, False] * 4)"
        elif port.dtype == "string":
            value = 'np.array(["tf2ir", "Hello", "a b", "", "x", "\\u00fcn\\u00ef", "42", "end"], dtype=object)'
        else:
            value = f"np.arange(1, 9, dtype=np.{numpy})"
        inputs.append(f"    {port.name!r}: {value},")
    chosen = "".join(f"# {a}: TF's registry gives no default; choose its value in NODE\n"
                     for a in signature.chosen)
    return dict(inputs="\n".join(inputs), chosen=chosen, source=signature.source,
                node_inputs=" ".join(f'input: "{p.name}"' for p in signature.inputs),
                node_attrs="\n".join(signature.node_attrs),
                outputs=[f"op:{i}" for i in range(len(signature.outputs))],
                output_names=", ".join(p.name for p in signature.outputs))


# --- the op's signature: TensorFlow's op registry, or a guess -------------------------------

NUMPY_OF = {"float16": "float16", "float32": "float32", "float64": "float64", "int8": "int8",
            "int16": "int16", "int32": "int32", "int64": "int64", "uint8": "uint8",
            "uint16": "uint16", "bool": "bool_", "string": "object_"}   # the test graph's dtypes
PREFERRED = ("float32", "float64", "int32", "int64", "string", "bool", "float16", "int8",
             "int16", "uint8", "uint16")
ATTR_KINDS = {"int": "int", "float": "float", "bool": "bool", "string": "str",
              "list(int)": "ints", "list(float)": "floats", "list(bool)": "bools",
              "list(string)": "strs"}   # TF attribute type → the prototype's attribute type
RESERVED = set(keyword.kwlist) | {
    "auto", "bool", "case", "char", "class", "const", "default", "delete", "double", "float",
    "info", "inline", "int", "long", "namespace", "new", "operator", "ops", "out", "register",
    "short", "signed", "static", "struct", "switch", "template", "this", "typename", "union",
    "unsigned", "void"}   # not a port's name in Python or C++


def op_signature(origin: str) -> Signature:
    """The ports and attributes of TF op type `origin` from TensorFlow's op registry (TF is
    imported here only), with a dtype chosen for each type attribute; a guess without TF."""
    try:
        from tf2ir.parser.frozen import import_tensorflow
        import_tensorflow()
        from google.protobuf import text_format
        from tensorflow.core.framework import types_pb2
        from tensorflow.python.framework import dtypes, op_def_registry
    except ImportError:
        return guessed_signature("TensorFlow is not installed")
    op_def = op_def_registry.get(origin)
    if op_def is None:
        return guessed_signature(f"TensorFlow's op registry has no {origin}")

    def ir_name(enum: int) -> str:
        try:
            return dtypes.as_dtype(enum).name
        except TypeError:
            return "?"

    counted = {arg.number_attr for arg in op_def.input_arg if arg.number_attr}
    types: Dict[str, str] = {}   # type attribute → the dtype chosen for it
    counts: Dict[str, int] = {}  # number attribute → the count chosen
    signature = Signature([], [], [], source=f"{origin}'s inputs, outputs and attributes from "
                                             "TensorFlow's op registry")
    for attr in op_def.attr:
        has_default = attr.HasField("default_value")
        if attr.type in ("type", "list(type)"):
            allowed = [ir_name(t) for t in attr.allowed_values.list.type]
            default = [ir_name(attr.default_value.type)] if attr.type == "type" and has_default else []
            types[attr.name] = pick = next((t for t in default + list(PREFERRED)
                                            if not allowed or t in allowed), "float32")
            enum = types_pb2.DataType.Name(dtypes.as_dtype(pick).as_datatype_enum)
            value = f"type: {enum}" if attr.type == "type" else f"list {{ type: {enum} }}"
        elif has_default:
            value = text_format.MessageToString(attr.default_value, as_one_line=True)
            if attr.name in counted:
                counts[attr.name] = attr.default_value.i
        elif attr.type == "int":
            value = f"i: {max(attr.minimum if attr.has_minimum else 1, 2)}"
            if attr.name in counted:
                counts[attr.name] = int(value[3:])
            else:
                signature.chosen.append(attr.name)
        else:
            value = {"float": "f: 1.0", "bool": "b: false", "string": 's: ""'}.get(attr.type, "list { }")
            signature.chosen.append(attr.name)
        signature.node_attrs.append(f'attr {{ key: "{attr.name}" value {{ {value} }} }}')
        kind = ATTR_KINDS.get(attr.type)
        if kind and attr.name not in counted:
            signature.attrs.append((attr.name, kind, attr_default(attr) if has_default else None))

    names: set = set()
    for args, ports in ((op_def.input_arg, signature.inputs), (op_def.output_arg, signature.outputs)):
        for arg in args:
            dtype = ir_name(arg.type) if arg.type else types.get(arg.type_attr or arg.type_list_attr, "?")
            dtype = dtype if dtype in NUMPY_OF else "float32"
            many = arg.number_attr or arg.type_list_attr
            signature.variadic |= bool(many) and ports is signature.inputs
            for i in range(counts.get(arg.number_attr, 1)):
                name = safe_name(arg.name + (f"_{i}" if arg.number_attr else ""), names)
                ports.append(Port(name, dtype, bool(arg.type), arg.type_attr or arg.type_list_attr,
                                  arg.name))
    return signature


def attr_default(attr) -> Any:
    """A registry attribute's default as the prototype declares it."""
    value = attr.default_value
    which = value.WhichOneof("value")
    if which == "list":
        field_name = {"list(int)": "i", "list(float)": "f", "list(bool)": "b", "list(string)": "s"}[attr.type]
        items = list(getattr(value.list, field_name))
    else:
        items = [getattr(value, which)]
    items = [v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in items]
    return items if which == "list" else items[0]


def safe_name(name: str, taken: set) -> str:
    name = re.sub(r"\W", "_", name) or "port"
    if name[0].isdigit() or name in RESERVED:
        name += "_"
    while name in taken:
        name += "_"
    taken.add(name)
    return name
