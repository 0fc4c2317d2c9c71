"""Lowerings' forms by target opset (issue 23), chosen by `@proto.lower(opsets=...)`: at opset 13
the 8- and 16-bit integer arithmetic computes in int32 (ONNX Add/Sub/Mul/Div take them from
14), integer Relu is Max(x, 0) and float64 Elu/LeakyRelu/Softplus/Softsign their formulas
except at opset 18 (ONNX Relu takes integers from 14; onnxruntime has no kernels for these and
runs the ops' function bodies at 18 only; the default lowers for 20, so writes the formulas
too); the other default forms are unchanged."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from tf2ir.ir.onnx.compile import compile_to_model
from tf2ir.parser.pipeline import convert_file
from tf2ir.tools.models import freeze_function
from tests.conformance.harness import _manager

tf = pytest.importorskip("tensorflow")


def _case(tmp_path, fn, *arrays):
    specs = [tf.TensorSpec(a.shape, tf.as_dtype(a.dtype), name=f"x{i}") for i, a in enumerate(arrays)]
    pb = str(tmp_path / "m.pb")
    freeze_function(fn, specs, pb)
    want = np.asarray(fn(*[tf.constant(a) for a in arrays]))
    return pb, {f"x{i}": a for i, a in enumerate(arrays)}, want


def _at(pb, feeds, opset):
    """(op types, output) of `pb` compiled at `opset` (None: the default)."""
    graph, _ = convert_file(pb, _manager())
    model = compile_to_model(graph, pb, opset=opset)
    onnx.checker.check_model(model, full_check=True)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return [n.op_type for n in model.graph.node], session.run(None, feeds)[0]


def test_small_integer_arithmetic_computes_in_int32_at_13(tmp_path):
    rng = np.random.default_rng(5)
    a = rng.integers(-100, 100, (3, 4)).astype(np.int8)
    b = rng.integers(1, 100, (3, 4)).astype(np.int8)
    pb, feeds, want = _case(tmp_path, lambda x, y: tf.math.floordiv(x * y + x - y, y), a, b)
    types = {}
    for opset in (13, 14, None):
        types[opset], got = _at(pb, feeds, opset)
        np.testing.assert_array_equal(got, want)      # int8 wraps alike
    assert types[14] == types[None]                   # from 14 as by default: in int8
    assert types[13].count("Cast") >= types[14].count("Cast") + 4, types


def test_integer_relu_is_max_except_at_18(tmp_path):
    x = np.arange(-6, 6, dtype=np.int64).reshape(3, 4)
    pb, feeds, want = _case(tmp_path, tf.nn.relu, x)
    for opset, op in ((13, "Max"), (17, "Max"), (18, "Relu"), (19, "Max"),
                      (onnx.defs.onnx_opset_version(), "Max"), (None, "Max")):
        types, got = _at(pb, feeds, opset)
        assert types == [op], (opset, types)
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", ["elu", "leaky_relu", "softplus", "softsign"])
def test_float64_activations_are_their_formulas_except_at_18(tmp_path, name):
    fn = {"elu": tf.nn.elu, "leaky_relu": lambda x: tf.nn.leaky_relu(x, 0.3),
          "softplus": tf.nn.softplus, "softsign": tf.nn.softsign}[name]
    onnx_op = {"elu": "Elu", "leaky_relu": "LeakyRelu", "softplus": "Softplus",
               "softsign": "Softsign"}[name]
    x = np.concatenate([np.linspace(-40, 40, 17), [-1e-3, 0.0, 1e-3]]).astype(np.float64)
    pb, feeds, want = _case(tmp_path, fn, x)
    for opset, one_node in ((13, False), (17, False), (18, True), (20, False),
                            (onnx.defs.onnx_opset_version(), False), (None, False)):
        types, got = _at(pb, feeds, opset)
        assert (types == [onnx_op]) == one_node, (opset, types)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_float32_activations_keep_their_one_node_at_every_opset(tmp_path):
    x = np.linspace(-4, 4, 9).astype(np.float32)
    pb, feeds, want = _case(tmp_path, tf.nn.softplus, x)
    for opset in (13, 17, 18):
        types, got = _at(pb, feeds, opset)
        assert types == ["Softplus"], (opset, types)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
