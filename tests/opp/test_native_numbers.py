"""tf2ir's native StringToNumber, AsString (opp/native/numbers.cc) and Bitcast
(opp/native/bitwise.cc), each run as a one-node model through tf2ir.InferenceSession (the
node's domain and attributes as the lowering writes them) and compared with its Python kernel
and with TensorFlow on tricky inputs; `native_ops == 1 and python_ops == 0` proves the
library computed the result."""

from __future__ import annotations

import itertools
import math

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import helper

import tf2ir
from tf2ir.ir.onnx.runtime import KernelError
from tf2ir.ir.onnx.writer import ONNX_DTYPES
from tf2ir.opp.bitwise import BITCAST_TYPES, bitcast_kernel
from tf2ir.opp.strings import as_string_kernel, string_to_number
from tf2ir.plugins.builtin import native

tf = pytest.importorskip("tensorflow")

if native.tf2ir_native_libraries()[0].path is None:
    pytest.skip("tf2ir's native library is not built (no C++ compiler at install)",
                allow_module_level=True)

STRINGS = "ai.tf2ir.strings"
BITWISE = "ai.tf2ir.bitwise"


def native_session(op, domain, in_type, y_type, **attrs):
    node = helper.make_node(op, ["x"], ["y"], domain=domain, name="n", **attrs)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", ONNX_DTYPES[in_type], None)],
        [helper.make_tensor_value_info("y", ONNX_DTYPES[y_type], None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18),
                                                    helper.make_opsetid(domain, 1)])
    session = tf2ir.InferenceSession(model)
    assert (session.native_ops, session.python_ops) == (1, 0)
    return session


def run(session, x):
    return session.run(None, {"x": x})[0]


# -- StringToNumber ---------------------------------------------------------------------------
TEXTS = [
    "  12", "12  ", "\t12\n", "\v12\f", "1e5", "1E+05", "-0", "+5", "+0x1A", "-0x0", "0x1A", "0X1a",
    "0x.8", "0x1.", "0x1.8p1", "0x1P-2", "0x", "0x1p", "00x1", "0xinf", "inf", "-inf", "+inf", "INF",
    "Infinity", "infinity", "infinit", "nan", "-nan", "NaN", "nan(123)", "nan(ab_c)", "nan()",
    "nan(", "1.5e400", "-1.5e400", "1e-400", "-1e-400", "", "   ", "12abc", ".5", "5.", ".", "e5",
    "1e", "1e+", "1_0", "\u00a012", "12\u00a0", "\x1c12", "\uff11\uff12", "\u0663", "0012", "1" * 40,
    "- 5", "-", "+-0", "-+0", " + 5", "2147483647", "2147483648", "-2147483648", "-2147483649",
    "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
    "3.0", "0.1", "3.4028235e38", "3.4028236e38", "3.40282356779733661637539395458142568448e38",
    "3.4028235677973366e38", "1e-45", "1e-46", "5e-324", "2.2250738585072014e-308",
    "1.0000000596046447753906250001", "0x1.000001p0", "0x1.0000010000000001p0", "12\x00",
]


def same_number(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind == "f" and np.isnan(a) and np.isnan(b):
        return bool(np.signbit(a) == np.signbit(b))
    return a.dtype == b.dtype and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("out_type", ["float32", "float64", "int32", "int64"])
def test_string_to_number_is_tfs(out_type):
    session = native_session("StringToNumber", STRINGS, "string", out_type, out_type=out_type)
    for text in TEXTS:
        try:
            want = tf.strings.to_number(tf.constant([text]), out_type=out_type).numpy()[0]
        except tf.errors.InvalidArgumentError:
            want = None
        x = np.array([text], object)
        if want is None:
            with pytest.raises(KernelError, match="could not correctly convert string"):
                run(session, x)
            with pytest.raises(ValueError, match="could not correctly convert string"):
                string_to_number(x, out_type=out_type)
            continue
        got, python = run(session, x)[0], string_to_number(x, out_type=out_type)[0]
        assert same_number(got, want), (text, got, want)
        assert same_number(python, want), (text, python, want)


def test_string_to_number_shapes_and_empty():
    session = native_session("StringToNumber", STRINGS, "string", "int64", out_type="int64")
    x = np.array([[" 1", "-2", "+3"], ["4", "5 ", "6"]], object)
    np.testing.assert_array_equal(run(session, x), [[1, -2, 3], [4, 5, 6]])
    assert run(session, np.zeros((0, 3), object)).shape == (0, 3)
    assert run(session, np.array("7", object)).shape == ()


def test_a_bad_string_is_a_kernel_error_naming_the_node():
    session = native_session("StringToNumber", STRINGS, "string", "int32", out_type="int32")
    with pytest.raises(KernelError) as error:
        run(session, np.array(["1", "2147483648"], object))
    message = str(error.value)
    assert "native kernel of StringToNumber node 'n'" in message
    assert "could not correctly convert string: 2147483648" in message
    with pytest.raises(KernelError, match=r"convert string: 12abc\\x0a"):    # shown, not raw
        run(session, np.array(["12abc\n"], object))
    assert run(session, np.array(["3"], object)).tolist() == [3]   # the session still runs


# -- AsString ---------------------------------------------------------------------------------
FLOATS = [0.0, -0.0, math.nan, -math.nan, math.inf, -math.inf, 1e30, -1e-30, 123.456, -1.5, 0.5,
          2.5, 3.4028234663852886e38, 1e-45, -1e-40, 1.1754943508222875e-38, 1e300, 5e-324,
          -2.2e-308, 1 / 3, 123456789.0, 9.999999e-5]
FORMATS = [dict(precision=p, scientific=int(sc), shortest=int(sh), width=w, fill=f)
           for p, (sc, sh), w, f in itertools.product(
               [-1, 0, 3, 17], [(0, 0), (1, 0), (0, 1)], [-1, 0, 1, 12], ["", " ", "+", "-", "0", "#"])]


def tf_as_string(x, precision, scientific, shortest, width, fill):
    out = tf.strings.as_string(x, precision=precision, scientific=bool(scientific),
                               shortest=bool(shortest), width=width, fill=fill)
    return [t.decode() for t in out.numpy().reshape(-1)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_as_string_of_floats_is_tfs_for_every_format(dtype):
    with np.errstate(over="ignore"):
        x = np.array(FLOATS, dtype)
    for attrs in FORMATS:
        want = tf_as_string(x, **attrs)
        assert list(run(native_session("AsString", STRINGS, dtype, "string", **attrs), x)) == want, attrs
        assert list(as_string_kernel(x, **attrs)) == want, attrs


def test_as_string_of_half_floats_enters_as_float32():
    half = np.array([0.1, 65504, -0.0, 6e-8, -np.inf, np.nan], np.float16)
    session = native_session("AsString", STRINGS, "float32", "string", precision=4, scientific=1)
    want = tf_as_string(half, 4, 1, 0, -1, "")
    assert list(run(session, half.astype(np.float32))) == want
    native = native_session("AsString", STRINGS, "float16", "string", precision=4, scientific=1)
    assert list(run(native, half)) == want


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8", "uint16",
                                   "uint32", "uint64", "bool"])
def test_as_string_of_ints_and_bools_is_tfs(dtype):
    if dtype == "bool":
        x = np.array([[True, False], [False, True]])
    else:
        info = np.iinfo(dtype)
        x = np.array([[0, 1], [info.max, info.min]], dtype)
    for width, fill in itertools.product([-1, 0, 1, 6, 25], ["", " ", "+", "-", "0", "#"]):
        attrs = dict(width=width, fill=fill)
        want = np.array(tf_as_string(x, -1, 0, 0, width, fill), object).reshape(x.shape)
        got = run(native_session("AsString", STRINGS, dtype, "string", **attrs), x)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(as_string_kernel(x, **attrs), want)


def test_as_string_empty_and_scalar():
    session = native_session("AsString", STRINGS, "float64", "string", precision=2)
    assert run(session, np.zeros((0, 4))).shape == (0, 4)
    assert run(session, np.array(2.0)).tolist() == "2.00"


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(st.lists(st.floats(width=32) | st.floats(), min_size=1, max_size=8),
       st.sampled_from(FORMATS[::7]), st.booleans())
def test_as_string_native_is_the_python_kernel(values, attrs, double):
    with np.errstate(over="ignore"):
        x = np.array(values, np.float64 if double else np.float32)
    session = native_session("AsString", STRINGS, str(x.dtype), "string", **attrs)
    assert list(run(session, x)) == list(as_string_kernel(x, **attrs))


# -- Bitcast ----------------------------------------------------------------------------------
KERNEL_TYPES = [t for t in BITCAST_TYPES if t not in ("float16", "bfloat16", "complex64",
                                                        "complex128")]


def width_of(dtype):
    return np.dtype(dtype).itemsize


@pytest.mark.parametrize("src", KERNEL_TYPES)
def test_bitcast_every_pair_is_tfs(src):
    rng = np.random.default_rng(7)
    for dst in KERNEL_TYPES:
        if dst == src:
            continue      # the lowering writes Identity
        a, b = width_of(src), width_of(dst)
        session = native_session("Bitcast", BITWISE, src, dst, type=int(ONNX_DTYPES[dst]))
        shapes = [(2, 3), (0, 3), ()] if a >= b else [(3, b // a), (0, b // a), (b // a,)]
        for shape in shapes:
            x = rng.integers(0, 256, size=(*shape, a), dtype=np.uint8).view(src).reshape(shape)
            want = tf.bitcast(x, getattr(tf, dst)).numpy()
            got, python = run(session, x), bitcast_kernel(x, type=int(ONNX_DTYPES[dst]))
            assert got.dtype == want.dtype == python.dtype and got.shape == want.shape \
                == python.shape, (src, dst, shape)
            assert got.tobytes() == want.tobytes() == python.tobytes(), (src, dst, shape)
        if a < b:          # a last dim other than the width ratio: TF refuses, and so do both
            x = np.zeros((2, b // a + 1), src)
            with pytest.raises(tf.errors.InvalidArgumentError):
                tf.bitcast(x, getattr(tf, dst))
            with pytest.raises(KernelError, match=f"Bitcast node 'n'.*Cannot bitcast from {src} "
                                                  f"to {dst}: shape \\(2, {b // a + 1}\\)"):
                run(session, x)
            with pytest.raises(ValueError, match="Cannot bitcast"):
                bitcast_kernel(x, type=int(ONNX_DTYPES[dst]))
            with pytest.raises(KernelError, match="needs a last dim"):
                run(session, np.zeros((), src))


def test_bitcast_of_half_floats_natively():
    x = np.array([[1.5, -0.0], [np.inf, 65504]], np.float16)
    got = run(native_session("Bitcast", BITWISE, "float16", "uint8", type=2), x)
    np.testing.assert_array_equal(got, tf.bitcast(x, tf.uint8).numpy())
    back = run(native_session("Bitcast", BITWISE, "uint16", "float16", type=10), x.view(np.uint16))
    assert back.tobytes() == x.tobytes()


def test_bitcast_output_declared_otherwise_is_refused():
    node = helper.make_node("Bitcast", ["x"], ["y"], domain=BITWISE, name="n", type=6)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.UINT32, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18),
                                                    helper.make_opsetid(BITWISE, 1)])
    session = tf2ir.InferenceSession(model)
    assert session.native_ops == 1
    with pytest.raises(KernelError, match="declared uint32"):
        session.run(None, {"x": np.ones(2, np.float32)})
