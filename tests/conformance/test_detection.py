"""Conformance of the detection-model ops (opp/detection.py) against TensorFlow: CropAndResize
(bilinear and nearest, boxes at run time), ResizeArea, MaxPoolWithArgmax (TF's flat argmax)
and CTCGreedyDecoder."""

import numpy as np
import pytest

from tests.conformance.harness import check_op, rand, spec

tf = pytest.importorskip("tensorflow")
raw = tf.raw_ops

IMAGE_TYPES = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
               "uint16")
POOL_TYPES = ("float16", "float32", "float64", "int8", "int16", "int32", "uint8", "uint16",
              "uint32")
TESTED_DTYPES = {"CropAndResize": IMAGE_TYPES, "ResizeArea": IMAGE_TYPES,
                 "MaxPoolWithArgmax": POOL_TYPES, "CTCGreedyDecoder": ("float32", "float64")}

BOXES = np.array([[0, 0, 1, 1], [0.1, 0.2, 0.7, 0.9], [-0.2, -0.1, 1.3, 1.2],
                  [0.8, 0.7, 0.1, 0.2], [0.5, 0.5, 0.5, 0.5], [0.25, 0.2, 0.75, 0.6],
                  [1.5, -2, 2, -1]], np.float32)
BOX_IND = np.array([0, 1, 1, 0, 1, 0, 1], np.int32)


def image(*shape, dtype="float32"):
    low, high = -2.0, 2.0
    if dtype in ("int8", "uint8"):
        low, high = (0, 100) if dtype == "uint8" else (-100, 100)
    elif "int" in dtype:
        low, high = (0, 3000) if dtype.startswith("uint") else (-3000, 3000)
    return rand(*shape, dtype=dtype, low=low, high=high)


def crop(method, size=(3, 4), extrapolation=0.0):
    return lambda x, b, i: raw.CropAndResize(image=x, boxes=b, box_ind=i, crop_size=list(size),  # noqa
                                             method=method, extrapolation_value=extrapolation)


@pytest.mark.parametrize("dtype", IMAGE_TYPES)
@pytest.mark.parametrize("method", ["bilinear", "nearest"])
def test_crop_and_resize(dtype, method):
    check_op(crop(method, extrapolation=-1.5), [image(2, 5, 6, 3, dtype=dtype), BOXES, BOX_IND])


@pytest.mark.parametrize("method", ["bilinear", "nearest"])
@pytest.mark.parametrize("size", [(1, 1), (1, 5), (4, 1), (7, 9)])
def test_crop_and_resize_sizes(method, size):
    check_op(crop(method, size), [image(2, 4, 7, 2), BOXES, BOX_IND])


def test_crop_and_resize_nearest_halves():
    """Sample points at exactly .5 round away from zero, as std::round does."""
    boxes = np.array([[0, 0, 1, 1], [0.125, 0.125, 0.875, 0.875]], np.float32)
    check_op(crop("nearest", (5, 5)), [image(1, 5, 5, 1), boxes, np.zeros(2, np.int32)])


def test_crop_and_resize_at_run_time():
    """Unknown batch, box count and crop size; no boxes at all."""
    specs = [spec((None, None, None, 3)), spec((None, 4), name="x1"), spec((None,), "int32", "x2"),
             spec((2,), "int32", "x3")]
    fn = lambda x, b, i, s: raw.CropAndResize(image=x, boxes=b, box_ind=i, crop_size=s)  # noqa
    check_op(fn, [image(2, 5, 6, 3), BOXES, BOX_IND, np.array([3, 2], np.int32)], specs=specs,
             extra_inputs=[[image(1, 3, 3, 3), np.zeros((0, 4), np.float32),
                            np.zeros(0, np.int32), np.array([2, 2], np.int32)],
                           [image(3, 8, 2, 3), BOXES[:2], np.array([2, 1], np.int32),
                            np.array([1, 5], np.int32)]])


@pytest.mark.parametrize("dtype", IMAGE_TYPES)
@pytest.mark.parametrize("align", [False, True])
def test_resize_area(dtype, align):
    fn = lambda x: [raw.ResizeArea(images=x, size=s, align_corners=align)  # noqa: E731
                    for s in ([2, 3], [7, 9], [5, 6], [1, 1], [3, 4], [4, 10])]
    x = image(2, 5, 6, 3, dtype=dtype)
    # sums of float32 terms as large as the pixels, in another order than TF's
    check_op(fn, [x], atol=max(1e-5, 1e-6 * float(np.abs(x.astype(np.float64)).max())))


def test_resize_area_unknown_batch():
    fn = lambda x: raw.ResizeArea(images=x, size=[3, 2])  # noqa: E731
    check_op(fn, [image(2, 7, 5, 2)], specs=[spec((None, 7, 5, 2))],
             extra_inputs=[[image(0, 7, 5, 2)], [image(3, 7, 5, 2)]])


@pytest.mark.parametrize("align", [False, True])
def test_resize_area_of_run_time_sizes(align):
    """Image height and width and the target size known only at run time (issue 20): the two
    weight matrices are computed there, cells past the edge clamped to it as TF does."""
    fn = lambda x, s: raw.ResizeArea(images=x, size=s, align_corners=align)  # noqa: E731
    specs = [spec((None, None, None, 2)), spec((2,), "int32", name="x1")]
    check_op(fn, [image(2, 5, 6, 2), np.int32([3, 4])], specs=specs, atol=1e-4,
             extra_inputs=[[image(1, 7, 3, 2), np.int32([7, 9])],
                           [image(1, 4, 4, 2), np.int32([1, 1])],
                           [image(3, 2, 9, 2), np.int32([5, 2])]])


def argmax_pool(ksize, strides, padding, include_batch=False, index="int64"):
    return lambda x: raw.MaxPoolWithArgmax(  # noqa: E731
        input=x, ksize=[1, *ksize, 1], strides=[1, *strides, 1], padding=padding,
        include_batch_in_index=include_batch, Targmax=tf.as_dtype(index))


def distinct(*shape, dtype="float32"):
    """Values without ties (which the maximum's index would depend on), in the dtype's range."""
    count = int(np.prod(shape))
    values = np.random.default_rng(7).permutation(count) - count // 2
    if dtype.startswith("uint"):
        values = values + count // 2
    scale = 0.5 if dtype in ("float16",) else 1.0
    return (values * scale).reshape(shape).astype(dtype)


@pytest.mark.parametrize("dtype", POOL_TYPES)
@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("include_batch", [False, True])
def test_max_pool_with_argmax(dtype, padding, include_batch):
    x = distinct(3, 5, 7, 4, dtype=dtype) if dtype not in ("int8", "uint8") else \
        distinct(2, 4, 5, 3, dtype=dtype)
    check_op(argmax_pool((2, 3), (2, 2), padding, include_batch), [x])


@pytest.mark.parametrize("ksize,strides", [((1, 1), (1, 1)), ((3, 3), (1, 1)), ((2, 2), (3, 1)),
                                           ((4, 2), (2, 3))])
@pytest.mark.parametrize("index", ["int64", "int32"])
def test_max_pool_with_argmax_windows(ksize, strides, index):
    check_op(argmax_pool(ksize, strides, "SAME", True, index), [distinct(2, 6, 5, 3)])
    check_op(argmax_pool(ksize, strides, "VALID", False, index), [distinct(2, 6, 5, 3)])


def test_max_pool_with_argmax_ties_take_the_first():
    x = np.zeros((1, 4, 4, 2), np.float32)
    x[0, 1:3, 1:3, 1] = 5.0
    check_op(argmax_pool((2, 2), (1, 1), "SAME", True), [x])


def test_max_pool_with_argmax_unknown_batch():
    fn = argmax_pool((2, 2), (2, 2), "SAME", True)
    check_op(fn, [distinct(2, 5, 5, 3)], specs=[spec((None, None, None, 3))],
             extra_inputs=[[distinct(1, 3, 4, 3)]])     # TF refuses an empty input


def logits(steps, batch, classes, dtype="float32", repeats=False):
    """Logits whose best class is often the blank (last) and, with `repeats`, often the same
    as the step before."""
    x = rand(steps, batch, classes, dtype=dtype)
    x[::3, :, -1] += 3
    if repeats:
        x[1::2] = x[0:2 * (steps // 2):2]
    return x


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("merge", [False, True])
def test_ctc_greedy_decoder(dtype, merge):
    fn = lambda x, n: raw.CTCGreedyDecoder(inputs=x, sequence_length=n,  # noqa: E731
                                           merge_repeated=merge)
    check_op(fn, [logits(8, 4, 5, dtype, repeats=True), np.array([8, 3, 0, 5], np.int32)])


@pytest.mark.parametrize("blank", [0, 2, -1, -3])
def test_ctc_greedy_decoder_blank_index(blank):
    fn = lambda x, n: raw.CTCGreedyDecoder(inputs=x, sequence_length=n,  # noqa: E731
                                           merge_repeated=True, blank_index=blank)
    check_op(fn, [logits(7, 3, 4, repeats=True), np.array([7, 6, 2], np.int32)])


def test_ctc_greedy_decoder_at_run_time():
    """Unknown time, batch and classes; all sequences empty (TF refuses empty inputs)."""
    specs = [spec((None, None, None)), spec((None,), "int32", "x1")]
    fn = lambda x, n: raw.CTCGreedyDecoder(inputs=x, sequence_length=n,  # noqa: E731
                                           merge_repeated=True)
    check_op(fn, [logits(6, 2, 3, repeats=True), np.array([6, 4], np.int32)], specs=specs,
             extra_inputs=[[logits(3, 2, 6), np.zeros(2, np.int32)],
                           [logits(1, 1, 2), np.ones(1, np.int32)]])
