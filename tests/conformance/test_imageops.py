"""Conformance of the image adjustments and patches (opp/imageops.py) against TensorFlow:
AdjustContrastv2, AdjustSaturation, AdjustHue (TF's RGB<->HSV), ExtractImagePatches,
NonMaxSuppressionV2, and SampleDistortedBoundingBox(V2) refused (exit 3)."""

import tempfile

import numpy as np
import pytest

from tests.conformance.harness import check_op, convert_function, rand, spec

tf = pytest.importorskip("tensorflow")
raw = tf.raw_ops

TESTED_DTYPES = {
    "AdjustContrastv2": ("float32",), "AdjustSaturation": ("float32",), "AdjustHue": ("float32",), "ExtractImagePatches": ("float16", "float32"),
    "NonMaxSuppressionV2": ("float16", "float32"),
}


def images(*shape, dtype="float32"):
    """RGB-like values in [0, 1], with grey pixels and pure colours (hue edge cases)."""
    x = rand(*shape, low=0.0, high=1.0)
    flat = x.reshape(-1, shape[-1])
    if shape[-1] == 3 and len(flat) >= 8:
        flat[:8] = [[0.5, 0.5, 0.5], [1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 0, 0], [1, 1, 0],
                    [0.2, 0.9, 0.9], [1, 0, 1]]
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", ["float32"])   # TF's CPU kernels take float32 only
def test_adjust_contrast(dtype):
    fn = lambda x: [tf.image.adjust_contrast(x, 1.7), tf.image.adjust_contrast(x, -0.4)]  # noqa
    check_op(fn, [images(2, 4, 5, 3, dtype=dtype)])
    check_op(lambda x: tf.image.adjust_contrast(x, 0.3), [images(4, 4, 1, dtype=dtype)])


def test_adjust_contrast_factor_at_run_time_unknown_shape():
    specs = [spec((None, None, None, 2)), spec((), "float32", "x1")]
    fn = lambda x, f: raw.AdjustContrastv2(images=x, contrast_factor=f)  # noqa: E731
    check_op(fn, [images(1, 3, 4, 2), np.float32(2.5)], specs=specs,
             extra_inputs=[[images(2, 1, 1, 2), np.float32(0.5)]])


@pytest.mark.parametrize("dtype", ["float32"])
@pytest.mark.parametrize("scale", [0.0, 0.5, 1.0, 2.5])
def test_adjust_saturation(dtype, scale):
    check_op(lambda x: tf.image.adjust_saturation(x, scale), [images(2, 3, 4, 3, dtype=dtype)])


@pytest.mark.parametrize("dtype", ["float32"])
@pytest.mark.parametrize("delta", [0.0, 0.2, -0.45, 0.999, -1.0])
def test_adjust_hue(dtype, delta):
    check_op(lambda x: tf.image.adjust_hue(x, delta), [images(3, 5, 3, dtype=dtype)])


def test_hsv_adjustments_unknown_shape():
    specs = [spec((None, None, 3)), spec((), "float32", "x1")]
    fn = lambda x, d: [raw.AdjustHue(images=x, delta=d),  # noqa: E731
                       raw.AdjustSaturation(images=x, scale=d * 4)]
    check_op(fn, [images(4, 4, 3), np.float32(0.3)], specs=specs,
             extra_inputs=[[images(0, 2, 3), np.float32(0.1)], [images(1, 9, 3), np.float32(-0.7)]])


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("sizes,strides,rates", [
    ([1, 2, 2, 1], [1, 1, 1, 1], [1, 1, 1, 1]), ([1, 3, 2, 1], [1, 2, 3, 1], [1, 1, 1, 1]),
    ([1, 2, 3, 1], [1, 1, 2, 1], [1, 2, 2, 1]), ([1, 1, 1, 1], [1, 2, 2, 1], [1, 1, 1, 1])])
def test_extract_image_patches(dtype, padding, sizes, strides, rates):
    fn = lambda x: tf.image.extract_patches(x, sizes, strides, rates, padding)  # noqa: E731
    check_op(fn, [rand(2, 7, 6, 3, dtype=dtype)])


def test_extract_image_patches_unknown_batch():
    fn = lambda x: tf.image.extract_patches(x, [1, 3, 3, 1], [1, 2, 2, 1], [1, 1, 1, 1], "SAME")  # noqa
    check_op(fn, [rand(1, 5, 5, 2)], specs=[spec((None, 5, 5, 2))],
             extra_inputs=[[rand(3, 5, 5, 2)], [rand(0, 5, 5, 2)]])


BOXES = np.array([[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, -0.1, 1, 0.9], [0, 10, 1, 11],
                  [0, 10.1, 1, 11.1], [0, 100, 1, 101], [1, 1, 0, 0]], np.float32)
SCORES = np.array([0.9, 0.75, 0.6, 0.95, 0.5, 0.3, 0.8], np.float32)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("limit,iou", [(3, 0.5), (10, 0.5), (10, 0.0), (0, 0.5), (2, 1.0)])
def test_non_max_suppression_v2(dtype, limit, iou):
    fn = lambda b, s: raw.NonMaxSuppressionV2(  # noqa: E731
        boxes=b, scores=s, max_output_size=limit, iou_threshold=tf.constant(iou, dtype))
    check_op(fn, [BOXES.astype(dtype), SCORES.astype(dtype)])


def test_non_max_suppression_v2_at_run_time():
    specs = [spec((None, 4)), spec((None,), name="x1"), spec((), "int32", "x2")]
    fn = lambda b, s, n: raw.NonMaxSuppressionV2(boxes=b, scores=s, max_output_size=n,  # noqa
                                                 iou_threshold=0.4)
    check_op(fn, [BOXES, SCORES, np.int32(4)], specs=specs,
             extra_inputs=[[np.zeros((0, 4), np.float32), np.zeros(0, np.float32), np.int32(3)]])


@pytest.mark.parametrize("version", [1, 2])
def test_sample_distorted_bounding_box_is_refused(version):
    from tf2ir.ir import ConversionError
    box = tf.constant([[[0.1, 0.1, 0.9, 0.9]]])

    def fn(x):
        if version == 1:
            begin, size, _ = raw.SampleDistortedBoundingBox(image_size=tf.shape(x),
                                                            bounding_boxes=box, seed=3)
        else:
            begin, size, _ = raw.SampleDistortedBoundingBoxV2(
                image_size=tf.shape(x), bounding_boxes=box, min_object_covered=0.1, seed=3)
        return tf.slice(x, begin, size)
    with tempfile.TemporaryDirectory() as directory:
        with pytest.raises(ConversionError, match="random generator") as info:
            convert_function(fn, [spec((8, 8, 3))], directory)
    assert info.value.exit_code == 3
