"""Conformance of the image ops (resizing, non-max suppression) against TensorFlow."""

import numpy as np
import pytest

from tests.conformance.harness import check_op, convert_function, rand

tf = pytest.importorskip("tensorflow")

TESTED_DTYPES = {
    "ResizeBilinear": ("float32", "uint8", "int32"),
    "ResizeNearestNeighbor": ("float32", "uint8", "int32", "float64", "int64"),
    "ResizeBicubic": ("float32",),
    "NonMaxSuppressionV3": ("float32",),
    "NonMaxSuppressionV4": ("float32",),
    "NonMaxSuppressionV5": ("float32",),
}


def _spec(shape, dtype=tf.float32, name="x0"):
    return tf.TensorSpec(shape, dtype, name=name)


# -- resizing --------------------------------------------------------------------------------------
RESIZE_FLAGS = [(False, False), (True, False), (False, True)]
# (input shape, size): up, down, mixed, and to a single pixel
RESIZE_SIZES = [((1, 4, 5, 2), (7, 9)), ((2, 8, 6, 1), (3, 4)), ((1, 3, 3, 2), (6, 3)),
                ((1, 5, 4, 1), (1, 1))]


@pytest.mark.parametrize("op", ["ResizeBilinear", "ResizeNearestNeighbor", "ResizeBicubic"])
@pytest.mark.parametrize("align,half", RESIZE_FLAGS)
def test_resize(op, align, half):
    raw = getattr(tf.raw_ops, op)
    for shape, size in RESIZE_SIZES:
        if align and size == (1, 1):
            continue
        fn = lambda x: raw(images=x, size=size, align_corners=align, half_pixel_centers=half)  # noqa: E731
        check_op(fn, [rand(*shape)], atol=2e-3 if op == "ResizeBicubic" else 1e-5,
                 rtol=2e-3 if op == "ResizeBicubic" else 1e-5)


@pytest.mark.parametrize("op,dtype", [("ResizeBilinear", "uint8"), ("ResizeBilinear", "int32"),
                                      ("ResizeNearestNeighbor", "uint8"), ("ResizeNearestNeighbor", "int32"),
                                      ("ResizeNearestNeighbor", "float64"),
                                      ("ResizeNearestNeighbor", "int64")])
def test_resize_dtypes(op, dtype):
    raw = getattr(tf.raw_ops, op)
    for half in (False, True):
        fn = lambda x: raw(images=x, size=(7, 5), half_pixel_centers=half)  # noqa: E731
        check_op(fn, [rand(2, 4, 3, 2, dtype=dtype, low=0, high=50)])


@pytest.mark.parametrize("op", ["ResizeBilinear", "ResizeNearestNeighbor"])
def test_resize_symbolic_dims_and_dynamic_size(op):
    raw = getattr(tf.raw_ops, op)
    fn = lambda x: raw(images=x, size=tf.shape(x)[1:3] * 2, half_pixel_centers=True)  # noqa: E731
    check_op(fn, [rand(1, 3, 4, 2)], specs=[_spec((None, None, None, 2))],
             extra_inputs=[[rand(2, 5, 2, 2)]])


# -- non-max suppression ---------------------------------------------------------------------------
def _boxes(count, seed):
    rng = np.random.default_rng(seed)
    corners = rng.uniform(0, 10, (count, 2))
    sizes = rng.uniform(1, 4, (count, 2))
    boxes = np.concatenate([corners, corners + sizes], axis=1).astype(np.float32)
    flip = rng.random(count) < 0.3           # some boxes with their corners swapped
    boxes[flip] = boxes[flip][:, [2, 3, 0, 1]]
    scores = rng.permutation(count).astype(np.float32) / count   # distinct scores
    return boxes, scores


@pytest.mark.parametrize("max_out,iou,score", [(5, 0.5, float("-inf")), (20, 0.3, 0.4), (0, 0.5, 0.0),
                                               (10, 0.7, 0.2)])
def test_nms_v3(max_out, iou, score):
    boxes, scores = _boxes(16, max_out)
    fn = lambda b, s: tf.image.non_max_suppression(b, s, max_out, iou, score)  # noqa: E731
    check_op(fn, [boxes, scores], specs=[_spec((None, 4)), _spec((None,), name="x1")],
             extra_inputs=[list(_boxes(9, 7))])


@pytest.mark.parametrize("pad", [False, True])
def test_nms_v4_padded(pad):
    boxes, scores = _boxes(12, 3)
    fn = lambda b, s: tf.raw_ops.NonMaxSuppressionV4(  # noqa: E731
        boxes=b, scores=s, max_output_size=8, iou_threshold=0.4, score_threshold=0.3,
        pad_to_max_output_size=pad)
    check_op(fn, [boxes, scores], specs=[_spec((None, 4)), _spec((None,), name="x1")],
             extra_inputs=[list(_boxes(5, 2))])


@pytest.mark.parametrize("pad", [False, True])
def test_nms_v5_scores(pad):
    boxes, scores = _boxes(14, 5)
    fn = lambda b, s: tf.raw_ops.NonMaxSuppressionV5(  # noqa: E731
        boxes=b, scores=s, max_output_size=9, iou_threshold=0.5, score_threshold=0.1,
        soft_nms_sigma=0.0, pad_to_max_output_size=pad)
    check_op(fn, [boxes, scores], specs=[_spec((None, 4)), _spec((None,), name="x1")],
             extra_inputs=[list(_boxes(20, 6))])


def test_nms_v5_soft_nms_is_refused():
    from tf2ir.ir import ConversionError
    import tempfile
    fn = lambda b, s: tf.raw_ops.NonMaxSuppressionV5(  # noqa: E731
        boxes=b, scores=s, max_output_size=4, iou_threshold=0.5, score_threshold=0.0, soft_nms_sigma=0.5)[0]
    with tempfile.TemporaryDirectory() as directory, pytest.raises(ConversionError, match="soft_nms_sigma"):
        convert_function(fn, [_spec((6, 4)), _spec((6,), name="x1")], directory)
