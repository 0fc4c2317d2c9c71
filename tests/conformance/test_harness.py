"""The harness itself: it must fail on a wrong result, not only pass on right ones."""

import numpy as np
import pytest

from tests.conformance.harness import assert_close, check_op, rand

tf = pytest.importorskip("tensorflow")

TESTED_DTYPES = {"Relu": ("float32",)}


def test_relu_matches_with_symbolic_batch():
    spec = [tf.TensorSpec((None, 3), tf.float32, name="x0")]
    check_op(tf.nn.relu, [rand(2, 3)], specs=spec, extra_inputs=[[rand(5, 3)]])


def test_assert_close_rejects_differences():
    with pytest.raises(AssertionError):
        assert_close(np.array([1, 2], np.int32), np.array([1, 3], np.int32))
    with pytest.raises(AssertionError):
        assert_close(np.float32([1.0]), np.float32([1.001]))
    with pytest.raises(AssertionError):
        assert_close(np.float32([1.0]), np.float64([1.0]))
    assert_close(np.float32([1.0, np.nan]), np.float32([1.000001, np.nan]))
