"""Conformance of square-matrix algebra and diagonal bands (opp/matrix.py) against TensorFlow:
MatrixInverse (adjoint too), MatrixDeterminant (singular and empty matrices), MatrixDiagPart and
MatrixSetDiag V1-V3 over every alignment, single diagonals and bands, wide and tall matrices,
unknown shapes."""

import numpy as np
import pytest

from tests.conformance.harness import check_op, rand, single_op_graph, spec
from tf2ir.ir import ConversionError, TensorDesc

tf = pytest.importorskip("tensorflow")
raw = tf.raw_ops

SOLVE = ("float16", "float32", "float64")
ALL = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16",
       "uint32", "uint64")
TESTED_DTYPES = {
    "MatrixInverse": SOLVE, "MatrixDeterminant": ("float32", "float64"),
    "MatrixDiagPart": ("float32",), "MatrixDiagPartV2": ("float32", "int32"),
    "MatrixDiagPartV3": ALL, "MatrixSetDiag": ("float32",),
    "MatrixSetDiagV2": ("float32", "int64"), "MatrixSetDiagV3": ALL,
}
ALIGNS = ("LEFT_LEFT", "LEFT_RIGHT", "RIGHT_LEFT", "RIGHT_RIGHT")
TOL = {"float16": {"atol": 0.05, "rtol": 0.05}, "float32": {"atol": 1e-4, "rtol": 1e-4},
       "float64": {"atol": 1e-10, "rtol": 1e-10}}


def well_conditioned(*shape, dtype="float32"):
    a = rand(*shape, dtype="float64") + 3 * np.eye(shape[-1])
    return a.astype(dtype)


@pytest.mark.parametrize("dtype", SOLVE)
def test_inverse_and_determinant(dtype):
    a = well_conditioned(2, 3, 4, 4, dtype=dtype)
    det = [] if dtype == "float16" else [tf.linalg.det]      # TF: no float16 determinant kernel
    check_op(lambda x: [tf.linalg.inv(x), raw.MatrixInverse(input=x, adjoint=True)]
             + [f(x) for f in det], [a], **TOL[dtype])


def test_pivoting_singular_and_one_by_one():
    needs_pivot = np.float64([[0, 2, 1], [1, 1, 0], [3, 0, 1]])
    check_op(lambda x: [tf.linalg.inv(x), tf.linalg.det(x)], [needs_pivot], **TOL["float64"])
    check_op(tf.linalg.det, [np.float32([[[1, 2], [2, 4]], [[0, 0], [0, 0]]])])
    check_op(lambda x: [tf.linalg.inv(x), tf.linalg.det(x)], [np.float32([[[4.0]], [[-0.5]]])])


def test_inverse_unknown_shapes_and_empty():
    check_op(lambda x: [tf.linalg.inv(x), tf.linalg.det(x)], [well_conditioned(2, 3, 3)],
             specs=[spec((None, None, None))], extra_inputs=[[well_conditioned(0, 5, 5)],
                                                             [np.zeros((2, 0, 0), np.float32)],
                                                             [well_conditioned(1, 6, 6)]],
             **TOL["float32"])


def test_non_square_is_refused():
    with pytest.raises(ConversionError, match="not square"):
        single_op_graph("MatrixInverse", [TensorDesc("float32", (2, 3))])


BANDS = [0, 1, -2, (-1, 2), (-2, 0), (1, 2), (-2, -1)]


@pytest.mark.parametrize("align", ALIGNS)
@pytest.mark.parametrize("shape", [(2, 3, 5), (4, 3)])
def test_diag_part_and_set_diag_v3(align, shape):
    x = rand(*shape)
    for k in BANDS:
        check_op(lambda x: tf.linalg.diag_part(x, k=k, padding_value=9, align=align), [x])
        d = tf.linalg.diag_part(x, k=k, align=align).shape
        check_op(lambda x, dg: tf.linalg.set_diag(x, dg, k=k, align=align), [x, rand(*d)])


@pytest.mark.parametrize("dtype", ALL)
def test_v3_dtypes(dtype):
    x = rand(2, 4, 4, dtype=dtype)
    d = rand(2, 3, 4, dtype=dtype)
    pad = np.ones((), dtype)
    check_op(lambda x, d, p: [tf.linalg.diag_part(x, k=(-1, 1), padding_value=p),
                              tf.linalg.set_diag(x, d, k=(-1, 1))], [x, d, pad])


def test_v1_and_v2():
    x = rand(2, 3, 5)
    check_op(lambda x: [raw.MatrixDiagPart(input=x),
                        raw.MatrixDiagPartV2(input=x, k=[-1, 1], padding_value=0.0),
                        raw.MatrixDiagPartV2(input=tf.cast(x * 3, tf.int32), k=1, padding_value=7)],
             [x])
    check_op(lambda x, d, b: [raw.MatrixSetDiag(input=x, diagonal=d),
                              raw.MatrixSetDiagV2(input=x, diagonal=b, k=[-1, 1]),
                              raw.MatrixSetDiagV2(input=tf.cast(x, tf.int64),
                                                  diagonal=tf.cast(b * 5, tf.int64), k=[-1, 1])],
             [x, rand(2, 3), rand(2, 3, 3)])


def test_unknown_shapes_and_empty():
    check_op(lambda x: [tf.linalg.diag_part(x, k=(-1, 1)), tf.linalg.diag_part(x)],
             [rand(2, 3, 5)], specs=[spec((None, None, None))],
             extra_inputs=[[rand(1, 6, 2)], [rand(0, 3, 3)]])
    check_op(lambda x, d: tf.linalg.set_diag(x, d), [rand(2, 3, 3), rand(2, 3)],
             specs=[spec((None, None, None)), spec((None, None), name="x1")],
             extra_inputs=[[rand(1, 2, 4), rand(1, 2)], [rand(0, 2, 2), rand(0, 2)]])


def test_k_at_run_time_of_three_values_is_refused():
    # k at run time converts (tests/e2e/test_real_graphs_ops.py); a k of 3 values never runs
    with pytest.raises(ConversionError, match=r"k must be a scalar or a pair, not of shape \[3\]"):
        check_op(lambda x, k: raw.MatrixDiagPartV3(input=x, k=k, padding_value=0.0),
                 [rand(3, 3), np.array([0, 1, 2], np.int32)])
