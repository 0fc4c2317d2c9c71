"""`tf2ir new-plugin --framework tflite`: what a package mapping a TFLite op differs in.

The mapping registers `framework_type("TFLITE")` with the TFLite op's name: a builtin operator
by its schema name (CONV_2D, SQUARED_DIFFERENCE) or a custom op by its custom code (TF's
TFLiteConverter with `allow_custom_ops` keeps a TF op TFLite has no builtin for as a custom op
named after it, e.g. Asinh). The package's test builds a .tflite holding the op from a small TF
function, converts it through the plugin and compares with the LiteRT interpreter
(tools/tflite_reference.py run_tflite), or, for a custom op the interpreter has no kernel for,
with TensorFlow running the same function.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from tf2ir.ir.errors import ConversionError, ExitStatus

FRAMEWORKS = ("tensorflow", "tflite")

# TFLite builtins the scaffold knows a TF function for: name → (inputs, TF expression).
BUILTIN_MODELS = {
    "ABS": (1, "tf.math.abs(x)"), "CEIL": (1, "tf.math.ceil(x)"), "COS": (1, "tf.math.cos(x)"),
    "ELU": (1, "tf.nn.elu(x)"), "EXP": (1, "tf.math.exp(x)"), "FLOOR": (1, "tf.math.floor(x)"),
    "LEAKY_RELU": (1, "tf.nn.leaky_relu(x, alpha=0.2)"), "LOG": (1, "tf.math.log(x)"),
    "LOGISTIC": (1, "tf.math.sigmoid(x)"), "NEG": (1, "tf.math.negative(x)"),
    "RELU": (1, "tf.nn.relu(x)"), "RELU6": (1, "tf.nn.relu6(x)"), "RSQRT": (1, "tf.math.rsqrt(x)"),
    "SIN": (1, "tf.math.sin(x)"), "SQRT": (1, "tf.math.sqrt(x)"), "SQUARE": (1, "tf.math.square(x)"),
    "TANH": (1, "tf.math.tanh(x)"),
    "ADD": (2, "x + y"), "SUB": (2, "x - y"), "MUL": (2, "x * y"), "DIV": (2, "x / y"),
    "MAXIMUM": (2, "tf.math.maximum(x, y)"), "MINIMUM": (2, "tf.math.minimum(x, y)"),
    "POW": (2, "tf.math.pow(x, y)"), "SQUARED_DIFFERENCE": (2, "tf.math.squared_difference(x, y)"),
}

PARSE = {
    "TENSORFLOW": '''def parse_params(src, op):
    """Fill the IR op from the TF node: same-named attributes map automatically."""
    auto_mapping(src, op)''',
    "TFLITE": '''def parse_params(src, op):
    """Fill the IR op from the TFLite operator. `src.attrs` are its options, snake_case, enums
    by their schema names (CONV_2D: padding, stride_h, fused_activation_function, ...; a custom
    op: custom_options, the bytes); set the IR op's attributes from them with
    op.set_attr(name, value). Its tensors are src.input_tensors and src.output_tensors. A fused
    activation needs a subgraph: tf2ir.plugins.tflite's tflite_subgraph and activation."""''',
}

TEST = '''\
"""Builds a .tflite holding TFLite's {origin} (TF's TFLiteConverter, from `model` below),
converts it through this plugin, runs it in onnxruntime through tf2ir's runtime entry and
compares with {reference}.

{source}."""

import os

import numpy as np
import pytest

import tf2ir
from tf2ir.ir.onnx.compile import compile_to_model
from tf2ir.parser.pipeline import Pipeline
from tf2ir.parser.tflite_model import read_tflite
from tf2ir.plugins import PluginManager

tf = pytest.importorskip("tensorflow")

PLUGIN_FILE = os.path.join(os.path.dirname(__file__), "..", {package!r}, "plugin.py")
ORIGIN = {origin!r}
CUSTOM = {custom!r}   # a custom op: TFLiteConverter keeps TF's op as custom op ORIGIN (allow_custom_ops)
INPUTS = {{   # the model's inputs, by name: choose values {origin} accepts
{inputs}
}}


def model({params}):
    """The TF function TFLiteConverter turns into a model holding {origin}."""
{model_body}


def manager():
    found = PluginManager()
    mapping = found.lookup(ORIGIN, "TFLITE")
    if mapping is not None and mapping.plugin == {package!r}:
        return found                          # installed: found through the entry point
    return PluginManager(plugin_dirs=[PLUGIN_FILE])


def to_tflite(path):
    specs = [tf.TensorSpec(value.shape, tf.as_dtype(value.dtype), name=name)
             for name, value in INPUTS.items()]
    function = tf.function(model, input_signature=specs)
    converter = tf.lite.TFLiteConverter.from_concrete_functions(
        [function.get_concrete_function()], function)
    converter.allow_custom_ops = CUSTOM
    with open(path, "wb") as f:
        f.write(converter.convert())


def test_the_plugin_maps_{test_name}(tmp_path):
    path = str(tmp_path / "model.tflite")
    to_tflite(path)
    ops = [op.op_type for op in read_tflite(path).subgraphs[0].operators]
    assert ORIGIN in ops, f"the model holds {{ops}}: make `model` give TFLite's {origin}"
    plugins = manager()
    graph, report = Pipeline(plugins).convert_file(path)
    session = tf2ir.InferenceSession(compile_to_model(graph), manager=plugins)
    names = [output.name for output in session.get_outputs()]
    results = session.run(names, INPUTS)
    if CUSTOM:   # no LiteRT kernel for a custom op: TensorFlow's own function is the reference
        expected = [np.asarray(t) for t in tf.nest.flatten(
            model(**{{name: tf.constant(value) for name, value in INPUTS.items()}}))]
    else:        # the LiteRT interpreter, by output tensor name
        from tf2ir.tools.tflite_reference import run_tflite
        by_name = run_tflite(path, INPUTS)
        expected = [by_name[name] for name in names]
    assert len(results) == len(expected)
    for result, want in zip(results, expected):
        np.testing.assert_allclose(result, want, rtol=1e-5, atol=1e-6)
'''


# What tools/scaffold.py writes a package from (kept here: scaffold imports this module).
@dataclass
class Port:
    name: str     # an identifier in Python and C++ (TF's argument name, made safe)
    dtype: str    # the IR dtype of the test graph's tensor
    fixed: bool   # the op fixes the dtype (else a type attribute chooses it)
    attr: str = ""   # the type attribute that chooses it
    arg: str = ""    # TF's name of the argument (tf.raw_ops' keyword)


@dataclass
class Signature:
    """What the package's files need of the origin op: ports, attributes, and whence."""
    inputs: List[Port]
    outputs: List[Port]
    node_attrs: List[str]                  # text-format `attr { ... }` of the test graph's node
    attrs: List[Tuple[str, str, Any]] = field(default_factory=list)   # (name, kind, default)
    source: str = ""                       # one line: where the ports came from
    chosen: List[str] = field(default_factory=list)   # attributes given a made-up value
    variadic: bool = False                 # an input is a list (N × T): the kernel takes *inputs


def guessed_signature(why: str) -> Signature:
    return Signature([Port("x", "float32", False)], [Port("y", "float32", False)],
                     ['attr { key: "T" value { type: DT_FLOAT } }'],
                     source=f"{why}: one float32 input x and one output y are a guess; "
                            "make INPUTS, NODE and the prototype's ports the op's")


def check_origin(framework: str, origin: str, native: bool) -> bool:
    """Whether the package maps a TFLite op; a usage error for a framework, origin op name or
    --native it cannot write."""
    lite = framework.lower() == "tflite"
    if framework.lower() not in FRAMEWORKS:
        raise ConversionError(f"--framework {framework!r:.40} is not supported; use "
                              f"{' or '.join(FRAMEWORKS)}", exit_code=ExitStatus.USAGE)
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", origin):
        kind = "a TFLite builtin or custom op name" if lite else "a TF op type name"
        raise ConversionError(f"--origin-op {origin!r} is not {kind}", exit_code=ExitStatus.USAGE)
    if lite and native:
        raise ConversionError("--native writes a kernel for TENSORFLOW mappings; leave it out "
                              "with --framework tflite (the package's Python kernel runs the op)",
                              exit_code=ExitStatus.USAGE)
    return lite


def is_builtin(origin: str) -> bool:
    """A builtin operator's schema name (upper case: CONV_2D); else a custom op's code."""
    return origin.upper() == origin


def ir_name(origin: str) -> str:
    """The IR op a package declares for `origin` by default: a builtin's name in the IR's
    style (SQUARED_DIFFERENCE → SquaredDifference), a custom op's as it is."""
    if not is_builtin(origin):
        return origin
    return "".join(part[:1] + part[1:].lower() for part in origin.split("_") if part)


def framework_values(lite: bool) -> Dict[str, str]:
    framework = "TFLITE" if lite else "TENSORFLOW"
    return dict(framework=framework, framework_name="TFLite" if lite else "TensorFlow",
                parse_params=PARSE[framework])


def tflite_signature(origin: str) -> Optional[Signature]:
    """The ports of TFLite op `origin`: a known builtin's (float inputs x, y), a guess for
    another builtin; None for a custom op, whose ports are TF's op's (the converter names it
    after TF's op): scaffold.op_signature, from TensorFlow's op registry."""
    if origin in BUILTIN_MODELS:
        names = ["x", "y"][:BUILTIN_MODELS[origin][0]]
        return Signature([Port(n, "float32", False, "T", n) for n in names],
                         [Port("output", "float32", False, "T")], [],
                         source=f"{origin}'s inputs ({', '.join(names)}) as `model` gives them")
    if is_builtin(origin):
        return guessed_signature(f"tf2ir's scaffold knows no TF function for builtin {origin}")
    return None


def tflite_values(origin: str, signature) -> Dict[str, str]:
    """The TFLITE test's model function and reference (over test_values' INPUTS)."""
    builtin = is_builtin(origin)
    params = ", ".join(p.name for p in signature.inputs)
    if origin in BUILTIN_MODELS:
        body = f"    return {BUILTIN_MODELS[origin][1]}"
    elif builtin:
        body = (f"    raise NotImplementedError(\"write a TF function TFLiteConverter turns into "
                f"{origin}: `model` in this test\")")
    else:
        body = f"    return tf.raw_ops.{origin}(" + ", ".join(
            f"{p.arg or p.name}={p.name}" for p in signature.inputs) + ")"
    return dict(custom=not builtin, params=params, model_body=body,
                reference="the LiteRT interpreter" if builtin else
                "TensorFlow running the same function (the LiteRT interpreter has no kernel for "
                "a custom op)")
