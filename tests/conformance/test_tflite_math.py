"""TFLite's elementwise math, comparisons, logic, selection, CAST and ZEROS_LIKE against the
LiteRT interpreter (run_case: the op under test is in the converted model, on int8 in int8
mode). Comparison and logical outputs (bool) and integer outputs must match exactly."""

import numpy as np
import pytest

from tests.conformance.tflite_harness import spec
from tests.conformance.test_tflite_arithmetic import run_case

tf = pytest.importorskip("tensorflow")

Q = ("float", "int8")      # the ops TFLite's full-integer conversion keeps on int8
TFLITE_TESTED = {
    "ABS": Q, "NEG": ("float",), "EXP": Q, "LOG": Q, "SQRT": Q, "RSQRT": Q, "SQUARE": ("float",),
    "SIN": ("float",), "COS": ("float",), "CEIL": ("float",), "FLOOR": ("float",),
    "ROUND": ("float",), "SIGN": ("float",),
    "EQUAL": Q, "NOT_EQUAL": ("float",),   # TF keeps NOT_EQUAL on float
    "LESS": Q, "LESS_EQUAL": Q, "GREATER": Q, "GREATER_EQUAL": Q,
    "LOGICAL_AND": ("float",), "LOGICAL_OR": ("float",), "LOGICAL_NOT": ("float",),
    "SELECT": Q, "SELECT_V2": Q, "CAST": ("float",), "ZEROS_LIKE": ("float",),
}

# op → (fn, low, high): the inputs are drawn from [low, high)
UNARY = {
    "ABS": (tf.abs, -2, 2), "NEG": (tf.negative, -2, 2), "EXP": (tf.exp, -2, 2),
    "LOG": (tf.math.log, 0.1, 4), "SQRT": (tf.sqrt, 0.1, 4), "RSQRT": (tf.math.rsqrt, 0.25, 4),
    "SQUARE": (tf.square, -2, 2), "SIN": (tf.sin, -3, 3), "COS": (tf.cos, -3, 3),
    "CEIL": (tf.math.ceil, -3, 3), "FLOOR": (tf.floor, -3, 3), "SIGN": (tf.sign, -2, 2),
}


@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary(tmp_path, op):
    fn, low, high = UNARY[op]
    run_case(tmp_path, op.lower(), fn, [spec([None, 2, 3])], [op], low=low, high=high)


@pytest.mark.parametrize("op", sorted(k for k, modes in TFLITE_TESTED.items()
                                      if k in UNARY and "int8" in modes))
def test_unary_int8(tmp_path, op):
    """On int8 TFLite computes these by lookup tables (EXP, LOG) or fixed point (RSQRT, SQRT):
    within one quantization step of tf2ir's float op between Q/DQ."""
    fn, low, high = UNARY[op]
    run_case(tmp_path, op.lower(), fn, [spec([None, 2, 3])], [op], "int8", low=low, high=high)


def test_round_half_to_even(tmp_path):
    """ROUND on halves of both signs: half to even (2.5 → 2, -0.5 → -0), as the interpreter."""
    halves = np.array([[-2.5, -1.5, -0.5, 0.5, 1.5, 2.5], [0.49, 0.51, -0.51, 3.7, -3.2, 0.0]],
                      np.float32)
    run_case(tmp_path, "round", tf.round, [spec([None, 6])], ["ROUND"],
             feeds=[[halves[:1]], [halves]])


def _comparisons(a, b):
    return a == b, a != b, a < b, a <= b, a > b, a >= b


COMPARISONS = ["EQUAL", "NOT_EQUAL", "LESS", "LESS_EQUAL", "GREATER", "GREATER_EQUAL"]


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_comparisons(tmp_path, dtype):
    """All six comparisons with a row broadcast; int32 inputs in [0, 5) make ties frequent,
    so EQUAL/LESS_EQUAL are exercised on equal operands."""
    run_case(tmp_path, f"comparisons_{dtype}", _comparisons,
             [spec([None, 2, 3], dtype), spec([3], dtype)], COMPARISONS)


COMPARE_FNS = {"EQUAL": tf.equal, "NOT_EQUAL": tf.not_equal, "LESS": tf.less,
               "LESS_EQUAL": tf.less_equal, "GREATER": tf.greater, "GREATER_EQUAL": tf.greater_equal}


@pytest.mark.parametrize("op", [op for op in COMPARISONS if "int8" in TFLITE_TESTED[op]])
def test_comparisons_int8(tmp_path, op):
    """On int8, against a constant that lies on the quantization grid of neither input, so
    TFLite's rescaled integer comparison and the QDQ float comparison must agree (one op a
    model: with several comparisons of one input the converter leaves them on float)."""
    c = np.array([0.3, -0.7, 1.1], np.float32)
    run_case(tmp_path, op.lower(), lambda a: COMPARE_FNS[op](a, c), [spec([None, 2, 3])], [op],
             "int8")


def test_logical(tmp_path):
    fn = lambda a, b: (tf.logical_and(a, b), tf.logical_or(a, b), tf.logical_not(a))  # noqa: E731
    run_case(tmp_path, "logical", fn, [spec([None, 3], "bool"), spec([None, 3], "bool")],
             ["LOGICAL_AND", "LOGICAL_OR", "LOGICAL_NOT"])


def _select(a, b):
    v2 = tf.where(a > 0.25, a, b)                                          # SELECT_V2
    v1 = tf.raw_ops.Select(condition=a < b, x=a * 0.5, y=b)                # SELECT
    return v1, v2


@pytest.mark.parametrize("mode", Q)
def test_select(tmp_path, mode):
    run_case(tmp_path, "select", _select, [spec([None, 3]), spec([None, 3])],
             ["SELECT", "SELECT_V2"], mode)


def test_select_v2_broadcast(tmp_path):
    """SELECT_V2 broadcasts its condition (a row) against the two (batch, 2, 3) operands."""
    cond = np.array([True, False, True])
    run_case(tmp_path, "select_v2_broadcast", lambda a, b: tf.where(cond, a, b),
             [spec([None, 2, 3]), spec([None, 2, 3])], ["SELECT_V2"])


def test_select_v1_rows(tmp_path):
    """SELECT (v1) with a vector condition choosing whole rows of rank-2 operands."""
    fn = lambda c, a, b: tf.raw_ops.Select(condition=c, x=a, y=b)   # noqa: E731
    run_case(tmp_path, "select_rows", fn, [spec([None], "bool"), spec([None, 3]), spec([None, 3])],
             ["SELECT"])


def _casts(a, n, f):
    return (tf.cast(a, tf.int32), tf.cast(a, tf.int8), tf.cast(a, tf.bool), tf.cast(n, tf.float32),
            tf.cast(f, tf.float32), tf.cast(n, tf.int64), tf.zeros_like(a), tf.zeros_like(n))


def test_cast_and_zeros_like(tmp_path):
    """CAST float → int32/int8 (truncating toward zero), float → bool, int32 → float/int64,
    bool → float; ZEROS_LIKE of float and int32: the output types and values exactly."""
    operators = run_case(tmp_path, "casts", _casts,
                         [spec([None, 3]), spec([None, 3], "int32"), spec([None, 3], "bool")],
                         ["CAST", "ZEROS_LIKE"], low=-4, high=4)
    assert sum(op.op_type == "CAST" for op in operators) == 6
