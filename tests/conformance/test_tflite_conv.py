"""TFLite convolutions against the LiteRT interpreter: CONV_2D (strides, dilations, VALID, no
bias, fused activations), DEPTHWISE_CONV_2D (multiplier 1 and > 1), TRANSPOSE_CONV, CONV_3D.
Filters are asymmetric random tensors, so a wrong layout (OHWI read as HWIO, a depthwise
filter's channel and multiplier swapped, a transposed filter not flipped) changes the result."""

import numpy as np
import pytest

from tests.conformance.tflite_harness import check_tflite, spec

tf = pytest.importorskip("tensorflow")

TFLITE_TESTED = {
    "CONV_2D": ("float", "dynamic", "int8"),
    "DEPTHWISE_CONV_2D": ("float", "dynamic", "int8"),
    "TRANSPOSE_CONV": ("float", "dynamic", "int8"),
    "CONV_3D": ("float",),
    "MEAN": ("float",),
}

RNG = np.random.default_rng(3)
W = RNG.standard_normal((3, 3, 3, 4)).astype(np.float32)
W_RECT = RNG.standard_normal((2, 3, 3, 5)).astype(np.float32)      # kh != kw, in != out
B = RNG.standard_normal(4).astype(np.float32)
DW1 = RNG.standard_normal((3, 3, 3, 1)).astype(np.float32)
DW2 = RNG.standard_normal((3, 2, 3, 2)).astype(np.float32)          # multiplier 2
# Dynamic-range quantization leaves weights under 1,024 elements float: these have more.
W_BIG = RNG.standard_normal((3, 3, 8, 16)).astype(np.float32)
B_BIG = RNG.standard_normal(16).astype(np.float32)
DW_BIG = RNG.standard_normal((3, 3, 128, 1)).astype(np.float32)
DW2_BIG = RNG.standard_normal((3, 2, 96, 2)).astype(np.float32)
TW_BIG = RNG.standard_normal((3, 3, 16, 8)).astype(np.float32)
TW = RNG.standard_normal((3, 3, 5, 3)).astype(np.float32)           # HW out in
W3 = RNG.standard_normal((2, 3, 2, 3, 4)).astype(np.float32)
QUANTIZED = ["float", "dynamic", "int8"]
# TFLite's hybrid (dynamic-range) kernels quantize the input to int8 per batch at run time;
# tf2ir's HybridConv2D does the same for CONV_2D and DEPTHWISE_CONV_2D (test_tflite_hybrid.py):
# the same integers, the rescale within a few float32 ulps. TRANSPOSE_CONV still computes in
# float with the dequantized weights: the input's quantization error (at most 0.125 on
# outputs of about +-10). A wrong layout is off by whole units.
HYBRID = {"atol": 5e-5, "rtol": 1e-5}
TRANSPOSE_HYBRID = {"atol": 0.25, "rtol": 0.02}


def tolerance(mode):
    return HYBRID if mode == "dynamic" else {}


@tf.function
def conv_relu6_mean(x):
    y = tf.nn.conv2d(x, W, 1, "SAME") + 0.5
    return tf.reduce_mean(tf.nn.relu6(y), axis=[1, 2])


@tf.function
def conv_bias_relu(x):
    return tf.nn.relu(tf.nn.conv2d(x, W_BIG, 1, "SAME") + B_BIG)


@tf.function
def conv_relu_n1_to_1(x):
    return tf.clip_by_value(tf.nn.conv2d(x, W, 1, "SAME"), -1.0, 1.0)


@tf.function
def conv_valid_strided(x):
    return tf.nn.conv2d(x, W_RECT, [1, 2, 1, 1], "VALID")


@tf.function
def conv_dilated(x):
    return tf.nn.conv2d(x, W, 1, "SAME", dilations=2) + B


@tf.function
def conv_same_stride2(x):
    return tf.nn.conv2d(x, W_RECT, 2, "SAME")


@tf.function
def depthwise_m1(x):
    return tf.nn.relu6(tf.nn.depthwise_conv2d(x, DW_BIG, [1, 1, 1, 1], "SAME") + 0.25)


@tf.function
def depthwise_m2_strided(x):
    return tf.nn.depthwise_conv2d(x, DW2_BIG, [1, 2, 2, 1], "VALID")


@tf.function
def depthwise_dilated(x):
    return tf.nn.depthwise_conv2d(x, DW1, [1, 1, 1, 1], "SAME", dilations=[2, 2])


@tf.function
def transpose_conv_same(x):
    size = tf.stack([tf.shape(x)[0], 10, 10, 5])
    return tf.nn.conv2d_transpose(x, TW, size, 2, "SAME")


@tf.function
def transpose_conv_valid_bias(x):
    size = tf.stack([tf.shape(x)[0], 7, 7, 5])
    return tf.nn.relu(tf.nn.conv2d_transpose(x, TW, size, 1, "VALID") + np.arange(5, dtype=np.float32))


@tf.function
def transpose_conv_big(x):
    size = tf.stack([tf.shape(x)[0], 9, 9, 16])
    return tf.nn.conv2d_transpose(x, TW_BIG, size, 2, "SAME") + B_BIG


@tf.function
def conv_3d(x):
    return tf.nn.conv3d(x, W3, [1, 1, 2, 1, 1], "SAME") + 1.0


@pytest.mark.parametrize("mode", QUANTIZED)
def test_conv_2d(tmp_path, mode):
    check_tflite(tmp_path, conv_relu6_mean, [spec([None, 8, 8, 3])], mode=mode)


@pytest.mark.parametrize("mode", QUANTIZED)
def test_conv_2d_bias_relu(tmp_path, mode):
    check_tflite(tmp_path, conv_bias_relu, [spec([None, 6, 5, 8])], mode=mode, **tolerance(mode))


@pytest.mark.parametrize("fn", [conv_valid_strided, conv_dilated, conv_same_stride2,
                                conv_relu_n1_to_1],
                         ids=lambda f: f.__name__)
def test_conv_2d_geometry(tmp_path, fn):
    check_tflite(tmp_path, fn, [spec([None, 9, 8, 3])])


@pytest.mark.parametrize("mode", QUANTIZED)
def test_depthwise(tmp_path, mode):
    check_tflite(tmp_path, depthwise_m1, [spec([None, 5, 4, 128])], mode=mode, **tolerance(mode))


@pytest.mark.parametrize("mode", QUANTIZED)
def test_depthwise_multiplier(tmp_path, mode):
    check_tflite(tmp_path, depthwise_m2_strided, [spec([None, 7, 6, 96])], mode=mode, **tolerance(mode))


def test_depthwise_dilated(tmp_path):
    check_tflite(tmp_path, depthwise_dilated, [spec([None, 8, 8, 3])])


@pytest.mark.parametrize("fn", [transpose_conv_same, transpose_conv_valid_bias],
                         ids=lambda f: f.__name__)
def test_transpose_conv(tmp_path, fn):
    check_tflite(tmp_path, fn, [spec([None, 5, 5, 3])])


@pytest.mark.parametrize("mode", ["dynamic", "int8"])
def test_transpose_conv_quantized(tmp_path, mode):
    check_tflite(tmp_path, transpose_conv_big, [spec([None, 5, 5, 8])], mode=mode,
                 **(TRANSPOSE_HYBRID if mode == "dynamic" else {}))


def test_conv_3d(tmp_path):
    check_tflite(tmp_path, conv_3d, [spec([None, 4, 5, 4, 3])])
