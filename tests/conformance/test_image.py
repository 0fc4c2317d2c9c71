"""Conformance of the image and convolution ops (transposed and 3-D convolutions, 3-D pooling,
fused batch normalization, resizing, non-max suppression, LRN) against TensorFlow."""

import numpy as np
import pytest

from tests.conformance.harness import check_op, convert_function, rand

tf = pytest.importorskip("tensorflow")

TESTED_DTYPES = {
    "Conv2DBackpropInput": ("float32", "float64"),
    "Conv3D": ("float32",),
    "Conv3DBackpropInputV2": ("float32",),
    "MaxPool3D": ("float32",),
    "AvgPool3D": ("float32",),
    "MaxPoolV2": ("float32",),
    "FusedBatchNorm": ("float32",),
    "FusedBatchNormV2": ("float32",),
    "FusedBatchNormV3": ("float16", "float32"),
    "LRN": ("float32",),
    "ResizeBilinear": ("float32", "uint8", "int32"),
    "ResizeNearestNeighbor": ("float32", "uint8", "int32", "float64", "int64"),
    "ResizeBicubic": ("float32",),
    "NonMaxSuppressionV3": ("float32",),
    "NonMaxSuppressionV4": ("float32",),
    "NonMaxSuppressionV5": ("float32",),
}

TOL = {"atol": 1e-4, "rtol": 1e-4}


def _spec(shape, dtype=tf.float32, name="x0"):
    return tf.TensorSpec(shape, dtype, name=name)


def _frozen_op_types(fn, specs):
    import tempfile
    from tensorflow.core.framework import graph_pb2
    with tempfile.TemporaryDirectory() as directory:
        _, _, _, pb = convert_function(fn, specs, directory)
        graph = graph_pb2.GraphDef()
        with open(pb, "rb") as f:
            graph.ParseFromString(f.read())
    return {n.op for n in graph.node}


# -- Conv2DBackpropInput ---------------------------------------------------------------------------
TRANSPOSE_CASES = {
    # name: (input shape, filter shape (h, w, out, in), output shape, strides, padding)
    "same_s2": ((1, 4, 4, 3), (3, 3, 2, 3), (1, 8, 8, 2), (2, 2), "SAME"),
    "same_s2_odd": ((2, 4, 3, 3), (3, 3, 2, 3), (2, 7, 5, 2), (2, 2), "SAME"),
    "same_s1": ((1, 5, 4, 2), (2, 3, 3, 2), (1, 5, 4, 3), (1, 1), "SAME"),
    "valid_s2": ((1, 3, 3, 2), (3, 3, 4, 2), (1, 7, 7, 4), (2, 2), "VALID"),
    "valid_s3_extra": ((1, 3, 2, 2), (2, 2, 1, 2), (1, 8, 7, 1), (3, 3), "VALID"),
    "explicit": ((1, 4, 4, 2), (3, 3, 2, 2), (1, 8, 7, 2), (2, 2), [[0, 0], [1, 1], [2, 0], [0, 0]]),
}


@pytest.mark.parametrize("case", sorted(TRANSPOSE_CASES))
def test_conv2d_transpose(case):
    shape, fshape, out_shape, strides, padding = TRANSPOSE_CASES[case]
    w = rand(*fshape)
    fn = lambda x: tf.nn.conv2d_transpose(x, w, out_shape, strides, padding)  # noqa: E731
    check_op(fn, [rand(*shape)], **TOL)


def test_conv2d_transpose_float64_and_filter_input():
    w = rand(3, 3, 2, 3, dtype="float64")
    fn = lambda x: tf.nn.conv2d_transpose(x, w, (1, 7, 8, 2), 2, "SAME")  # noqa: E731
    check_op(fn, [rand(1, 4, 4, 3, dtype="float64")], atol=1e-5, rtol=1e-5)
    fn = lambda x, k: tf.nn.conv2d_transpose(x, k, (1, 6, 6, 2), 2, "SAME")  # noqa: E731
    check_op(fn, [rand(1, 3, 3, 3), rand(3, 3, 2, 3)], **TOL)


@pytest.mark.parametrize("padding,out_shape", [("SAME", (1, 7, 8, 2)), ("VALID", (1, 11, 11, 2))])
def test_conv2d_transpose_dilated_is_the_adjoint_of_conv2d(padding, out_shape):
    """TF's CPU kernel refuses dilations, so check the defining identity instead:
    <conv2d(x), y> == <x, conv2d_transpose(y)> with TF's (dilated) conv2d."""
    import tempfile
    import onnxruntime as ort
    w, y = rand(3, 2, 2, 3), rand(1, 7, 8, 3)
    fn = lambda v: tf.nn.conv2d_transpose(v, w, out_shape, 1, padding, dilations=(2, 3))  # noqa: E731
    with tempfile.TemporaryDirectory() as directory:
        path, _, _, _ = convert_function(fn, [_spec(y.shape)], directory)
        transposed = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x0": y})[0]
    assert transposed.shape == out_shape
    for _ in range(2):
        x = rand(*out_shape)
        forward = tf.nn.conv2d(x, w, 1, padding, dilations=(2, 3)).numpy()
        assert forward.shape == y.shape
        np.testing.assert_allclose(np.sum(forward * y), np.sum(x * transposed), rtol=1e-4)


def test_conv2d_transpose_symbolic_batch():
    """Keras-style: the batch entry of input_sizes comes from the input's shape."""
    w = rand(3, 3, 2, 3)

    def fn(x):
        sizes = tf.stack([tf.shape(x)[0], 8, 8, 2])
        return tf.nn.conv2d_transpose(x, w, sizes, 2, "SAME")
    check_op(fn, [rand(1, 4, 4, 3)], specs=[_spec((None, 4, 4, 3))], extra_inputs=[[rand(3, 4, 4, 3)]],
             **TOL)


# -- Conv3D and its transpose ----------------------------------------------------------------------
# TF's CPU Conv3D refuses dilations > 1, so they are not tested here.
CONV3D_CASES = {
    "same": ((1, 5, 6, 4, 2), (3, 3, 2, 2, 3), (1, 1, 1, 1, 1), "SAME"),
    "same_s2": ((2, 5, 6, 4, 2), (3, 2, 3, 2, 4), (1, 2, 2, 1, 1), "SAME"),
    "valid_s2": ((1, 7, 6, 5, 3), (3, 3, 3, 3, 2), (1, 2, 1, 2, 1), "VALID"),
}


@pytest.mark.parametrize("case", sorted(CONV3D_CASES))
def test_conv3d(case):
    shape, fshape, strides, padding = CONV3D_CASES[case]
    w = rand(*fshape)
    check_op(lambda x: tf.nn.conv3d(x, w, strides, padding), [rand(*shape)], **TOL)


def test_conv3d_symbolic_dims():
    w = rand(2, 2, 2, 2, 3)
    fn = lambda x: tf.nn.conv3d(x, w, (1, 2, 2, 2, 1), "SAME")  # noqa: E731
    check_op(fn, [rand(1, 4, 5, 6, 2)], specs=[_spec((None, None, None, None, 2))],
             extra_inputs=[[rand(2, 3, 3, 7, 2)]], **TOL)


@pytest.mark.parametrize("padding,out_shape", [("SAME", (1, 7, 8, 6, 2)), ("VALID", (1, 9, 9, 7, 2))])
def test_conv3d_transpose(padding, out_shape):
    w = rand(3, 3, 2, 2, 3)
    fn = lambda x: tf.nn.conv3d_transpose(x, w, out_shape, (1, 2, 2, 3, 1), padding)  # noqa: E731
    check_op(fn, [rand(1, 4, 4, 2, 3)], **TOL)


# -- 3-D pooling and MaxPoolV2 ---------------------------------------------------------------------
POOL3D_CASES = {
    "same_2_s2": ((1, 5, 6, 7, 2), (2, 2, 2), (2, 2, 2), "SAME"),
    "same_3_s1": ((2, 4, 5, 3, 1), (3, 3, 2), (1, 1, 1), "SAME"),
    "valid_3_s2": ((1, 7, 6, 8, 2), (3, 2, 3), (2, 1, 2), "VALID"),
}


@pytest.mark.parametrize("op", ["MaxPool3D", "AvgPool3D"])
@pytest.mark.parametrize("case", sorted(POOL3D_CASES))
def test_pool3d(op, case):
    shape, ksize, strides, padding = POOL3D_CASES[case]
    pool = tf.nn.max_pool3d if op == "MaxPool3D" else tf.nn.avg_pool3d
    check_op(lambda x: pool(x, ksize, strides, padding), [rand(*shape)])


def test_pool3d_symbolic_dims():
    check_op(lambda x: tf.nn.avg_pool3d(x, 3, 2, "SAME"), [rand(1, 5, 4, 6, 2)],
             specs=[_spec((None, None, None, None, 2))], extra_inputs=[[rand(2, 3, 7, 4, 2)]])


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
def test_max_pool_v2(padding):
    fn = lambda x: tf.raw_ops.MaxPoolV2(  # noqa: E731
        input=x, ksize=tf.constant([1, 3, 2, 1]), strides=tf.constant([1, 2, 2, 1]), padding=padding)
    assert "MaxPoolV2" in _frozen_op_types(fn, [_spec((1, 7, 6, 2))])
    check_op(fn, [rand(1, 7, 6, 2)], specs=[_spec((None, 7, 6, 2))], extra_inputs=[[rand(3, 7, 6, 2)]])


# -- fused batch normalization ---------------------------------------------------------------------
def _bn_params(channels, dtype="float32"):
    return (rand(channels, dtype=dtype), rand(channels, dtype=dtype), rand(channels, dtype=dtype),
            rand(channels, dtype=dtype, low=0.2, high=2.0))


@pytest.mark.parametrize("op", ["FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"])
def test_fused_batch_norm_inference(op):
    scale, offset, mean, var = _bn_params(3)
    raw = getattr(tf.raw_ops, op)
    fn = lambda x: raw(x=x, scale=scale, offset=offset, mean=mean, variance=var,  # noqa: E731
                       epsilon=1e-3, is_training=False)[:3]
    check_op(fn, [rand(2, 4, 5, 3)], specs=[_spec((None, None, None, 3))],
             extra_inputs=[[rand(1, 3, 2, 3)]])


def test_fused_batch_norm_v3_float16_and_params_as_inputs():
    scale, offset, mean, var = _bn_params(4)
    fn = lambda x: tf.raw_ops.FusedBatchNormV3(  # noqa: E731
        x=x, scale=scale, offset=offset, mean=mean, variance=var, is_training=False)[0]
    check_op(fn, [rand(1, 3, 3, 4, dtype="float16")])
    fn = lambda x, s, o, m, v: tf.raw_ops.FusedBatchNormV3(  # noqa: E731
        x=x, scale=s, offset=o, mean=m, variance=v, epsilon=0.01, is_training=False)[0]
    check_op(fn, [rand(2, 3, 3, 4), scale, offset, mean, var], **TOL)


@pytest.mark.parametrize("training", [False, True])
def test_fused_batch_norm_nchw(training):
    scale, offset, mean, var = _bn_params(3)
    if training:
        mean, var = np.zeros(0, np.float32), np.zeros(0, np.float32)
    fn = lambda x: tf.raw_ops.FusedBatchNormV3(  # noqa: E731
        x=x, scale=scale, offset=offset, mean=mean, variance=var, is_training=training,
        data_format="NCHW")[:3]
    check_op(fn, [rand(2, 3, 4, 5)], **TOL)


@pytest.mark.parametrize("op,factor", [("FusedBatchNormV3", 1.0), ("FusedBatchNormV3", 0.25),
                                       ("FusedBatchNorm", 1.0)])
def test_fused_batch_norm_training(op, factor):
    scale, offset, mean, var = _bn_params(3)
    if factor == 1.0:
        mean, var = np.zeros(0, np.float32), np.zeros(0, np.float32)
    raw = getattr(tf.raw_ops, op)
    extra = {"exponential_avg_factor": factor} if op == "FusedBatchNormV3" else {}
    fn = lambda x: raw(x=x, scale=scale, offset=offset, mean=mean, variance=var,  # noqa: E731
                       epsilon=1e-3, is_training=True, **extra)[:5]
    check_op(fn, [rand(2, 4, 5, 3)], specs=[_spec((None, 4, None, 3))],
             extra_inputs=[[rand(3, 4, 2, 3)]], **TOL)


# -- LRN -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("radius,bias,alpha,beta",
                         [(5, 1.0, 1.0, 0.5), (2, 2.0, 1e-2, 0.75), (1, 0.5, 0.3, 1.0)])
def test_lrn(radius, bias, alpha, beta):
    fn = lambda x: tf.nn.local_response_normalization(x, radius, bias, alpha, beta)  # noqa: E731
    check_op(fn, [rand(2, 3, 4, 7)], specs=[_spec((None, None, None, 7))],
             extra_inputs=[[rand(1, 2, 5, 7)]], **TOL)


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
