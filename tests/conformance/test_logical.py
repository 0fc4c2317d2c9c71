"""Conformance of the boolean logic ops (opp/logical.py) against TensorFlow: LogicalAnd,
LogicalOr and LogicalNot."""

import pytest

from tests.conformance.harness import check_op, rand

tf = pytest.importorskip("tensorflow")

TESTED_DTYPES = {
    "LogicalAnd": ("bool",),
    "LogicalOr": ("bool",),
    "LogicalNot": ("bool",),
}


def spec(shape, dtype, i):
    return tf.TensorSpec(shape, dtype, name=f"x{i}")


def test_logical_ops():
    a, b = rand(2, 3, dtype="bool"), rand(3, dtype="bool")
    check_op(lambda p, q: [tf.math.logical_and(p, q), tf.math.logical_or(p, q), tf.math.logical_not(p)],
             [a, b], specs=[spec([None, 3], tf.bool, 0), spec([3], tf.bool, 1)],
             extra_inputs=[[rand(4, 3, dtype="bool"), b]])
