"""TFLite image and block ops against the LiteRT interpreter: RESIZE_BILINEAR and
RESIZE_NEAREST_NEIGHBOR (half-pixel centers, align_corners, legacy; up and down),
SPACE_TO_DEPTH, DEPTH_TO_SPACE, SPACE_TO_BATCH_ND, BATCH_TO_SPACE_ND."""

import pytest

from tests.conformance.tflite_harness import check_tflite, spec

tf = pytest.importorskip("tensorflow")

TFLITE_TESTED = {
    "RESIZE_BILINEAR": ("float", "dynamic", "int8"),
    "RESIZE_NEAREST_NEIGHBOR": ("float", "dynamic", "int8"),
    "SPACE_TO_DEPTH": ("float",),
    "DEPTH_TO_SPACE": ("float",),
    "SPACE_TO_BATCH_ND": ("float",),
    "BATCH_TO_SPACE_ND": ("float",),
}

MODES = ["float", "dynamic", "int8"]
v1 = tf.compat.v1.image


@tf.function
def bilinear_half_pixel(x):
    return tf.image.resize(x, [7, 3])


@tf.function
def bilinear_align_corners(x):
    return v1.resize_bilinear(x, [7, 9], align_corners=True)


@tf.function
def bilinear_legacy(x):
    return v1.resize_bilinear(x, [3, 9])


@tf.function
def nearest_half_pixel(x):
    return tf.image.resize(x, [7, 3], "nearest")


@tf.function
def nearest_align_corners(x):
    return v1.resize_nearest_neighbor(x, [7, 9], align_corners=True)


@tf.function
def nearest_legacy(x):
    return v1.resize_nearest_neighbor(x, [3, 9])


BILINEAR = [bilinear_half_pixel, bilinear_align_corners, bilinear_legacy]
NEAREST = [nearest_half_pixel, nearest_align_corners, nearest_legacy]


@pytest.mark.parametrize("fn", BILINEAR + NEAREST, ids=lambda f: f.__name__)
def test_resize(tmp_path, fn):
    check_tflite(tmp_path, fn, [spec([None, 4, 5, 2])])


@pytest.mark.parametrize("mode", ["dynamic", "int8"])
@pytest.mark.parametrize("fn", [bilinear_half_pixel, nearest_half_pixel], ids=lambda f: f.__name__)
def test_resize_quantized(tmp_path, fn, mode):
    check_tflite(tmp_path, fn, [spec([None, 4, 5, 2])], mode=mode)


@tf.function
def space_to_depth(x):
    return tf.nn.space_to_depth(x, 2)


@tf.function
def depth_to_space(x):
    return tf.nn.depth_to_space(x, 2)


@tf.function
def space_to_batch(x):
    return tf.space_to_batch(x, [2, 3], [[1, 1], [0, 2]])


@tf.function
def batch_to_space(x):
    return tf.batch_to_space(x, [2, 2], [[0, 1], [1, 0]])


def test_space_to_depth(tmp_path):
    check_tflite(tmp_path, space_to_depth, [spec([None, 4, 6, 3])])


def test_depth_to_space(tmp_path):
    check_tflite(tmp_path, depth_to_space, [spec([None, 3, 2, 8])])


def test_space_to_batch_nd(tmp_path):
    check_tflite(tmp_path, space_to_batch, [spec([None, 4, 4, 3])])


def test_batch_to_space_nd(tmp_path):
    """The batch must be a multiple of 4 (the block's size): batches 4 and 8."""
    check_tflite(tmp_path, batch_to_space, [spec([None, 3, 2, 3])], batches=(4, 8))
