"""tf2ir's own native library (opp/native, built by setup.py at install): where a C++ compiler
exists it was built, and every op plugins/builtin/native.py declares (SERVED) has a kernel in
it: a one-node model of the op runs natively (native_ops == 1, python_ops == 0)."""

import shutil
import sysconfig

import numpy as np
import pytest
from onnx import helper

import tf2ir
from tf2ir.ir.onnx.runtime import KernelError
from tf2ir.ir.onnx.writer import ONNX_DTYPES
from tf2ir.opp import (bitwise, strings, tftext_fastwordpiece, tftext_normalize, tftext_tokenize,
                       tftext_wordpiece)
from tf2ir.plugins.builtin import native

COMPILER = (sysconfig.get_config_var("CXX") or "c++").split()[0]
HAS_COMPILER = shutil.which(COMPILER) is not None
OPSETS = {strings.DOMAIN: strings.OPS, bitwise.DOMAIN: bitwise.OPS,
          tftext_normalize.DOMAIN: [*tftext_normalize.OPS, *tftext_wordpiece.OPS, *tftext_tokenize.OPS,
                                    *tftext_fastwordpiece.OPS]}
PREFERRED = ("string", "float32", "int64", "int32", "float64", "int16", "int8", "uint8")
LIBRARIES = {lib.domain: lib for lib in native.tf2ir_native_libraries()}
SERVED = [(domain, op) for domain, ops in native.SERVED.items() for op in ops]


@pytest.mark.skipif(not HAS_COMPILER, reason=f"no C++ compiler ({COMPILER})")
def test_the_library_was_built():
    assert set(LIBRARIES) == {d for d, ops in native.SERVED.items() if ops}
    for library in LIBRARIES.values():
        assert library.path is not None, library.why_not_built
        assert library.path.endswith(tuple(sysconfig.get_config_var("EXT_SUFFIX").split()))


def _dtype(port, library, op, first):
    allowed = [t for t in port.dtypes if not first or op not in library.types
               or t in library.types[op]]
    return next((t for t in PREFERRED if t in allowed), allowed[0])


def _one_node_model(domain, op, library):
    prototype = next(p for p in OPSETS[domain] if p.op_type == op)
    inputs = []
    for k, port in enumerate(prototype.inputs):
        if port.kind == "optional":
            continue
        inputs.append((port.name, _dtype(port, library, op, k == 0)))
    attrs = {}
    for name, spec in prototype.attrs.items():
        default = spec.default if isinstance(spec.default, (bool, int, float, str)) else None
        if spec.type == "dtype":
            attrs[name] = int(ONNX_DTYPES[default or inputs[0][1]])
        elif default is not None:
            attrs[name] = int(default) if isinstance(default, bool) else default
        elif spec.type == "int":
            attrs[name] = 1
    chosen = [v for k, v in attrs.items() if prototype.attrs[k].type == "dtype"]
    outputs = [port.name for port in prototype.outputs]
    types = [chosen[0] if chosen and len(port.dtypes) > 1 else ONNX_DTYPES[port.dtypes[0]]
             for port in prototype.outputs]   # a dtype attribute says which type comes out
    node = helper.make_node(op, [n for n, _ in inputs], outputs, domain=domain, **attrs)
    graph = helper.make_graph(
        [node], op, [helper.make_tensor_value_info(n, ONNX_DTYPES[t], None) for n, t in inputs],
        [helper.make_tensor_value_info(n, t, None) for n, t in zip(outputs, types)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18),
                                                    helper.make_opsetid(domain, 1)])
    feed = {n: np.array(["1"], object) if t == "string" else np.ones([1], t) for n, t in inputs}
    return model, feed


@pytest.mark.skipif(not HAS_COMPILER, reason=f"no C++ compiler ({COMPILER})")
@pytest.mark.parametrize("domain,op", SERVED, ids=[op for _, op in SERVED])
def test_every_served_op_runs_natively(domain, op):
    library = LIBRARIES[domain]
    model, feed = _one_node_model(domain, op, library)
    session = tf2ir.InferenceSession(model)
    assert (session.native_ops, session.python_ops) == (1, 0)
    assert session.native_libraries == [library.path]
    try:
        session.run(None, feed)
    except KernelError as exc:   # the native kernel ran, and refused these values
        assert "native kernel" in str(exc)
