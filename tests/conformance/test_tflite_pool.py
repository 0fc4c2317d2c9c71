"""TFLite 2-D pooling against the LiteRT interpreter: MAX_POOL_2D and AVERAGE_POOL_2D (SAME
and VALID, strides other than the window, rectangular windows, a fused activation), and
L2_POOL_2D, which TF's converter never writes: a MAX_POOL_2D model's operator code is patched
to it (the same Pool2DOptions), the interpreter running the patched model as the reference."""

import pytest

from tests.conformance.tflite_harness import check_tflite, spec
from tests.conformance.test_tflite_nn import OP, check_patched, with_opcode

tf = pytest.importorskip("tensorflow")

TFLITE_TESTED = {
    "MAX_POOL_2D": ("float", "dynamic", "int8"),
    "AVERAGE_POOL_2D": ("float", "dynamic", "int8"),
    "L2_POOL_2D": ("float",),
}

MODES = ["float", "dynamic", "int8"]


@tf.function
def max_pool_valid(x):
    return tf.nn.max_pool2d(x, 2, 2, "VALID")


@tf.function
def max_pool_same_rect(x):
    return tf.nn.max_pool2d(x, [3, 2], [2, 1], "SAME")


@tf.function
def avg_pool_same(x):
    return tf.nn.avg_pool2d(x, 3, 2, "SAME")


@tf.function
def avg_pool_valid_rect(x):
    return tf.nn.avg_pool2d(x, [2, 3], [1, 2], "VALID")


@tf.function
def avg_pool_relu6(x):
    return tf.nn.relu6(tf.nn.avg_pool2d(x, 2, 1, "SAME") * 4.0)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fn", [max_pool_valid, max_pool_same_rect], ids=lambda f: f.__name__)
def test_max_pool(tmp_path, fn, mode):
    check_tflite(tmp_path, fn, [spec([None, 7, 6, 3])], mode=mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fn", [avg_pool_same, avg_pool_valid_rect], ids=lambda f: f.__name__)
def test_average_pool(tmp_path, fn, mode):
    check_tflite(tmp_path, fn, [spec([None, 7, 6, 3])], mode=mode)


def test_average_pool_fused_activation(tmp_path):
    check_tflite(tmp_path, avg_pool_relu6, [spec([None, 5, 5, 2])])


@pytest.mark.parametrize("fn", [max_pool_valid, max_pool_same_rect], ids=lambda f: f.__name__)
def test_l2_pool(tmp_path, fn):
    check_patched(tmp_path, fn, [spec([None, 7, 6, 3])],
                  lambda data: with_opcode(data, OP.MAX_POOL_2D, OP.L2_POOL_2D), f"l2_{fn.__name__}")
