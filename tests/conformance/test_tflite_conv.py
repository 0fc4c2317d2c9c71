"""TFLite convolutions against the LiteRT interpreter."""

import numpy as np
import pytest

from tests.conformance.tflite_harness import check_tflite, spec

tf = pytest.importorskip("tensorflow")

TFLITE_TESTED = {"CONV_2D": ("float",), "MEAN": ("float",)}

W = np.random.default_rng(3).standard_normal((3, 3, 3, 4)).astype(np.float32)


@tf.function
def conv_relu6_mean(x):
    y = tf.nn.conv2d(x, W, 1, "SAME") + 0.5
    return tf.reduce_mean(tf.nn.relu6(y), axis=[1, 2])


@pytest.mark.parametrize("mode", ["float"])
def test_conv_2d(tmp_path, mode):
    check_tflite(tmp_path, conv_relu6_mean, [spec([None, 8, 8, 3])], mode=mode)
