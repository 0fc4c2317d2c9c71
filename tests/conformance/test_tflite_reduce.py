"""TFLite's reductions and scans (MEAN, SUM, REDUCE_MAX/MIN/PROD/ANY/ALL, ARG_MAX/ARG_MIN,
CUMSUM, TOPK_V2) against the LiteRT interpreter (run_case: the op under test is in the model,
on int8 in int8 mode). Indices and bools must match exactly."""

import numpy as np
import pytest

from tests.conformance.tflite_harness import spec
from tests.conformance.test_tflite_arithmetic import run_case

tf = pytest.importorskip("tensorflow")

QUANTIZED = ("float", "dynamic", "int8")
TFLITE_TESTED = {
    "MEAN": QUANTIZED, "SUM": QUANTIZED, "REDUCE_MAX": QUANTIZED, "REDUCE_MIN": QUANTIZED,
    "REDUCE_PROD": QUANTIZED, "REDUCE_ANY": ("float",), "REDUCE_ALL": ("float",),
    "ARG_MAX": QUANTIZED, "ARG_MIN": QUANTIZED, "CUMSUM": ("float",), "TOPK_V2": QUANTIZED,
}

X = [spec([None, 2, 4])]

# op → fn of one (batch, 2, 4) float input: axes of several kinds, keep_dims both ways
CASES = {
    "MEAN": lambda x: (tf.reduce_mean(x, [1, 2]), tf.reduce_mean(x, -1, keepdims=True)),
    "SUM": lambda x: (tf.reduce_sum(x, 1), tf.reduce_sum(x, [-1], keepdims=True)),
    "REDUCE_MAX": lambda x: (tf.reduce_max(x, 2), tf.reduce_max(x, [1, 2], keepdims=True)),
    "REDUCE_MIN": lambda x: (tf.reduce_min(x, 1, keepdims=True), tf.reduce_min(x, [0, 2])),
    "REDUCE_PROD": lambda x: (tf.reduce_prod(x, 2), tf.reduce_prod(x, 1, keepdims=True)),
    "ARG_MAX": lambda x: (tf.argmax(x, 2), tf.argmax(x, 1, output_type=tf.int32)),
    "ARG_MIN": lambda x: (tf.argmin(x, -1, output_type=tf.int32), tf.argmin(x, 1)),
    "TOPK_V2": lambda x: tuple(tf.math.top_k(x, 3)),
}


@pytest.mark.parametrize("mode", QUANTIZED)
@pytest.mark.parametrize("op", sorted(CASES))
def test_reduction(tmp_path, op, mode):
    operators = run_case(tmp_path, op.lower(), CASES[op], X, [op], mode)
    if op in ("ARG_MAX", "ARG_MIN"):   # both output types, from the options
        assert {o.options["output_type"] for o in operators if o.op_type == op} == {"int32", "int64"}


def test_bool_reductions(tmp_path):
    """REDUCE_ANY and REDUCE_ALL over one and two axes, keep_dims both ways: exact bools."""
    fn = lambda b: (tf.reduce_any(b, 1), tf.reduce_all(b, [1, 2], keepdims=True),  # noqa: E731
                    tf.reduce_any(b, [-1], keepdims=True), tf.reduce_all(b, 2))
    run_case(tmp_path, "bool_reductions", fn, [spec([None, 2, 3], "bool")],
             ["REDUCE_ANY", "REDUCE_ALL"])


def test_argmax_ties(tmp_path):
    """Ties: the first index of the largest (smallest) entry, as the interpreter."""
    x = np.array([[[1, 3, 3, 0], [2, 2, 2, 2]], [[0, 0, 5, 5], [-1, 4, -1, 4]]], np.float32)
    fn = lambda x: (tf.argmax(x, 2), tf.argmin(x, 2))   # noqa: E731
    run_case(tmp_path, "arg_ties", fn, X, ["ARG_MAX", "ARG_MIN"], feeds=[[x[:1]], [x]])


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_cumsum(tmp_path, dtype):
    """CUMSUM with each exclusive/reverse combination (the options), float and int32."""
    fn = lambda x: tuple(tf.cumsum(x, axis, exclusive=e, reverse=r)  # noqa: E731
                         for axis, e, r in ((2, False, False), (2, True, False),
                                            (1, False, True), (-1, True, True)))
    operators = run_case(tmp_path, f"cumsum_{dtype}", fn, [spec([None, 2, 4], dtype)], ["CUMSUM"])
    flags = {(o.options["exclusive"], o.options["reverse"]) for o in operators}
    assert flags == {(False, False), (True, False), (False, True), (True, True)}


def test_topk_int32(tmp_path):
    """TOPK_V2 on int32 with ties (inputs in [0, 5)): values and int32 indices exactly."""
    run_case(tmp_path, "topk_int32", lambda x: tuple(tf.math.top_k(x, 2)),
             [spec([None, 6], "int32")], ["TOPK_V2"])
