"""Conformance of the special functions (opp/special.py) against TensorFlow: Lgamma, Digamma,
Polygamma, Zeta, Igamma, Igammac, Betainc, BesselI0e, BesselI1e, with poles, infinities, NaN
and the domain edges. float64 is held to the module's stated tolerances (1e-13 for
Lgamma/Digamma/Bessel, 1e-12 relative for Zeta/Polygamma, 1e-12 absolute + 1e-10 relative for
Igamma/Igammac/Betainc); the narrower dtypes to the harness's per-dtype tolerances. TF's own
float32 kernels lose digits for large a (Igamma, Betainc) and negative x (Polygamma): there the
converted float32 model is compared with TF's float64 result rounded to float32."""

import os
import tempfile

import numpy as np
import pytest

from tests.conformance.harness import assert_close, check_op, convert_function, rand, spec

tf = pytest.importorskip("tensorflow")

# TF's CPU kernels: half, float and double for the unary ones, float and double for the rest
# (bfloat16 converts too, computed in float64, but TF has no CPU kernel to compare with)
HALF_TOO = ("float16", "float32", "float64")
TESTED_DTYPES = {
    "Lgamma": HALF_TOO, "Digamma": HALF_TOO, "BesselI0e": HALF_TOO, "BesselI1e": HALF_TOO,
    "Igamma": ("float32", "float64"), "Igammac": ("float32", "float64"),
    "Polygamma": ("float32", "float64"), "Zeta": ("float32", "float64"),
    "Betainc": ("float32", "float64"),
}
F64 = {"atol": 1e-13, "rtol": 1e-13}
UNARY = {"Lgamma": tf.math.lgamma, "Digamma": tf.math.digamma,
         "BesselI0e": tf.math.bessel_i0e, "BesselI1e": tf.math.bessel_i1e}
SPECIAL_X = [-np.inf, -3.0, -2.5, -1e-300, -0.0, 0.0, 1e-300, 0.1, 0.5, 1, 1.4616321449683623,
             2, 3.3, 10.5, 29.9, 30.1, 1e20, 1e306, np.inf, np.nan, -7.3, -0.4, 1e3]


@pytest.mark.parametrize("op", sorted(UNARY))
@pytest.mark.parametrize("dtype", ("float32", "float64"))
def test_unary_special_values(op, dtype):
    check_op(UNARY[op], [np.array(SPECIAL_X, dtype)], **(F64 if dtype == "float64" else {}))


@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary_float16(op):
    check_op(UNARY[op], [rand(3, 5, low=-4.7, high=6.0).astype(np.float16)])


@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary_unknown_shapes_and_empty(op):
    check_op(UNARY[op], [rand(2, 3, low=-5, high=8)], specs=[spec((None, None))],
             extra_inputs=[[rand(0, 4)], [rand(1, 7, low=0.1, high=40)]])


ZETA_S = [1.0, 0.5, 2, 2, 2, 3, 2.5, 2, -1, 2, 3, 2, 3, 3, 2, 4, 2, 1.5, 5.5, 2.2, 11]
ZETA_Q = [1.0, 1, -2, -2.5, 0, -2.5, -2.5, np.inf, 2, 1e10, 1e-5, np.nan, -2, 0, -1, -3, -0.0,
          -2.5, 0.7, 33.3, 0.1]
ORDERS = [0.0, 1, 1, 2, 0.5, -1, 3, 1, 1, 1, 2, 3, 1, 4, 1, 2, 1, 10, 20, 0, 5]
POLY_X = [1.0, 1, -2.5, -2, 1, 1, 1e-3, 0, np.inf, -10.5, -2.0, 0, -1, -3, -7.3, -7.3, 0.3, 2.0,
          3.0, -4.4, 12.5]


def test_zeta_and_polygamma_special_values_float64():
    check_op(lambda s, q, n, x: [tf.math.zeta(s, q), tf.math.polygamma(n, x)],
             [np.array(v, np.float64) for v in (ZETA_S, ZETA_Q, ORDERS, POLY_X)], atol=0, rtol=1e-12)


def test_zeta_and_polygamma_float32_broadcast_and_unknown_shapes():
    s, q = rand(4, 1, low=1.5, high=6), rand(1, 5, low=0.05, high=9)
    check_op(lambda s, q: [tf.math.zeta(s, q), tf.math.polygamma(tf.round(s), q)], [s, q],
             specs=[spec((None, 1)), spec((1, None), name="x1")], rtol=1e-4,
             extra_inputs=[[s[:0], q]])


INC_A = [0.0, 0, 1, 1, -1, 1, np.inf, 1, 0.5, 100, 1e4, 1e4, 3.3, 0.01, 20, 5, 1e-3, 2.0]
INC_X = [0.0, 1, 0, -1, 1, np.inf, 1, np.nan, 1e-3, 90, 1e4, 1.01e4, 0.2, 30, 18, 50, 1e-3, 0.5]
BETA_A = [1.0, 0, 1, 0.5, 2, 1, -1, 1e3, 0.3, 5, 20, 0.01, 2, 3]
BETA_B = [1.0, 1, 0, 0.5, 3, 1, 1, 1e3, 7, 0.2, 30, 0.02, 2, 4]
BETA_X = [0.5, 0.5, 0.5, 0, 1, 1.5, 0.5, 0.51, 0.1, 0.99, 0.4, 0.5, np.nan, 1e-9]


def test_incomplete_gamma_and_beta_float64():
    check_op(lambda a, x, p, q, y: [tf.math.igamma(a, x), tf.math.igammac(a, x),
                                    tf.math.betainc(p, q, y)],
             [np.array(v, np.float64) for v in (INC_A, INC_X, BETA_A, BETA_B, BETA_X)],
             atol=1e-12, rtol=1e-10)


def test_incomplete_gamma_float32_broadcast():
    a, x = rand(2, 6, low=0.2, high=8), rand(1, 6, low=0.0, high=12)
    check_op(lambda a, x: [tf.math.igamma(a, x), tf.math.igammac(a, x)], [a, x], rtol=1e-4)


def test_betainc_float32_unknown_shapes():
    a, b, x = rand(3, 4, low=0.2, high=9), rand(3, 4, low=0.2, high=9), rand(3, 4, low=0, high=1)
    check_op(tf.math.betainc, [a, b, x], specs=[spec((None, 4), name=f"x{i}") for i in range(3)],
             rtol=1e-4, extra_inputs=[[a[:0], b[:0], x[:0]]])


def test_float32_against_tf_float64_where_tf_float32_loses_digits():
    """Large a (Igamma/Igammac/Betainc) and negative x (Polygamma): the converted float32 model
    matches the float64 truth rounded to float32 (TF's float32 kernels are off there)."""
    a = np.float32([100, 1e4, 1e4, 1e3])
    x = np.float32([90, 1e4, 1.01e4, 0.51])
    n, y = np.float32([1, 2, 1]), np.float32([-10.5, -7.3, -7.3])

    def fn(a, x, n, y):
        return [tf.math.igamma(a, x), tf.math.igammac(a, x), tf.math.betainc(a[3:], a[3:], x[3:] * 0 + 0.51),
                tf.math.polygamma(n, y)]
    import onnxruntime as ort
    specs = [spec(v.shape, name=f"x{i}") for i, v in enumerate((a, x, n, y))]
    with tempfile.TemporaryDirectory() as directory:
        path, _, _, _ = convert_function(fn, specs, directory)
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        got = session.run(None, dict(zip(["x0", "x1", "x2", "x3"], (a, x, n, y))))
        assert os.path.exists(path)
    want = fn(*[tf.constant(v.astype(np.float64)) for v in (a, x, n, y)])
    for k, (w, g) in enumerate(zip(want, got)):
        assert_close(np.asarray(w).astype(np.float32), g, atol=1e-6, rtol=1e-5, what=f"output {k}")
