"""The layout-reading lowerings (DESIGN decision 8): each format-sensitive op takes its layout
from its inputs' formats, not from a data_format attribute. One-op IR graphs whose inputs carry
the formats, compiled and run by onnxruntime, against TensorFlow on channels-last data."""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow")
ort = pytest.importorskip("onnxruntime")

from tf2ir.ir import ConversionError, Graph, TensorDesc  # noqa: E402
from tf2ir.ir.infer import infer_graph  # noqa: E402
from tf2ir.ir.onnx.compile import compile_to_model  # noqa: E402
from tf2ir.ir.tensor import dtype_of_numpy  # noqa: E402

RNG = np.random.default_rng(99)
FIRST = {4: (0, 3, 1, 2), 5: (0, 4, 1, 2, 3)}         # channels-last → channels-first
FILTERS = {"HWCN": (0, 1, 2, 3), "NCHW": (3, 2, 0, 1), "NHWC": (3, 0, 1, 2)}   # from HWCN


def rand(*shape, dtype=np.float32):
    return RNG.uniform(-2, 2, size=shape).astype(dtype)


def first(x):
    return np.transpose(x, FIRST[np.ndim(x)])


def run(op_type, inputs, attrs=None, num_outputs=1):
    """inputs: (array, format, fed) triples (None: an absent input). Builds, infers, compiles
    and runs one `op_type` node; returns its outputs and the IR node."""
    g = Graph("layouts")
    values, feeds = [], {}
    for i, item in enumerate(inputs):
        if item is None:
            values.append(None)
            continue
        array, fmt, fed = item
        if fed:
            values.append(g.add_input(f"in{i}", TensorDesc(dtype_of_numpy(array.dtype), array.shape,
                                                           fmt, fmt)))
            feeds[f"in{i}"] = array
        else:
            values.append(g.add_const(array, f"const{i}", fmt))
    node = g.add_node(op_type, values, attrs or {}, name="op", num_outputs=num_outputs)
    g.outputs.extend(node.outputs)
    infer_graph(g)
    session = ort.InferenceSession(compile_to_model(g).SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    results = session.run(None, feeds)
    for value, result in zip(node.outputs, results):
        assert value.desc.shape is None or tuple(value.desc.shape) == result.shape
    return results, node


# -- convolutions --------------------------------------------------------------------------------
@pytest.mark.parametrize("filter_format", sorted(FILTERS))
@pytest.mark.parametrize("fed", [False, True], ids=["const-filter", "fed-filter"])
@pytest.mark.parametrize("op_type", ["Conv2D", "DepthwiseConv2D"])
def test_conv_filter_layouts_are_honoured(op_type, filter_format, fed):
    x, w = rand(2, 7, 6, 4), rand(3, 2, 4, 2)
    if op_type == "Conv2D":
        ref = tf.nn.conv2d(x, w, [1, 2, 1, 1], "SAME").numpy()
    else:   # TF's CPU kernel wants equal strides: SAME by hand, stride 1, every other row
        padded = np.pad(x, [(0, 0), (1, 1), (0, 1), (0, 0)])   # TF's SAME pads for these sizes
        ref = tf.nn.depthwise_conv2d(padded, w, [1, 1, 1, 1], "VALID").numpy()[:, ::2]
    stored = np.ascontiguousarray(w.transpose(FILTERS[filter_format]))
    (got,), _ = run(op_type, [(first(x), "NCHW", True), (stored, filter_format, fed), None],
                    {"strides": [1, 1, 2, 1], "padding": "SAME"})
    np.testing.assert_allclose(got, first(ref), atol=1e-4, rtol=1e-4)


def test_formats_win_over_a_contradicting_data_format_attribute():
    x, w = rand(1, 6, 6, 3), rand(3, 3, 3, 2)
    ref = tf.nn.conv2d(x, w, 1, "VALID").numpy()
    (got,), node = run("Conv2D", [(first(x), "NCHW", True), (w, "HWCN", False), None],
                       {"strides": [1, 1, 1, 1], "padding": "VALID", "data_format": "NHWC"})
    assert node.outputs[0].desc.format == "NCHW"
    np.testing.assert_allclose(got, first(ref), atol=1e-4, rtol=1e-4)


def test_conv3d_ncdhw_by_format():
    x, w = rand(1, 5, 6, 4, 2), rand(3, 2, 3, 2, 3)
    ref = tf.nn.conv3d(x, w, [1, 2, 1, 2, 1], "SAME").numpy()
    (got,), _ = run("Conv3D", [(first(x), "NCDHW", True), (w, "DHWCN", False), None],
                    {"strides": [1, 1, 2, 1, 2], "padding": "SAME"})
    np.testing.assert_allclose(got, first(ref), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("filter_format", ["HWCN", "NCHW"])
def test_transposed_conv_nchw_by_format(filter_format):
    y, w = rand(1, 4, 3, 3), rand(3, 3, 2, 3)
    ref = tf.nn.conv2d_transpose(y, w, (1, 8, 6, 2), 2, "SAME").numpy()
    stored = np.ascontiguousarray(w.transpose(FILTERS[filter_format]))
    (got,), _ = run("ConvBackpropInput", [(np.array([1, 2, 8, 6], np.int32), "ND", False),
                                          (stored, filter_format, False), (first(y), "NCHW", True)],
                    {"strides": [1, 1, 2, 2], "padding": "SAME"})
    np.testing.assert_allclose(got, first(ref), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("data_format, filter_format, fragment", [
    ("NCHW", "NDHWC", "a 4-D filter must be HWCN, NCHW or NHWC"),
    ("HWCN", "HWCN", "data must be NHWC, NCHW, NDHWC or NCDHW"),
    ("NDHWC", "HWCN", "has format NDHWC but rank 4"),
])
def test_unreadable_layouts_are_refused_naming_the_node(data_format, filter_format, fragment):
    with pytest.raises(ConversionError) as info:
        run("Conv2D", [(rand(1, 3, 5, 5), data_format, True), (rand(3, 3, 3, 2), filter_format, False),
                       None], {"strides": [1, 1, 1, 1], "padding": "SAME"})
    assert "node 'op'" in str(info.value) and fragment in str(info.value), str(info.value)


def test_channels_first_attribute_without_a_format_is_refused():
    with pytest.raises(ConversionError, match=r"set_input_format\(0, 'NCHW'\)") as info:
        run("MaxPool", [(rand(1, 3, 5, 5), "ND", True)],
            {"ksize": [1, 1, 2, 2], "strides": [1, 1, 2, 2], "padding": "VALID", "data_format": "NCHW"})
    assert "node 'op'" in str(info.value)


# -- pooling, bias, normalization ------------------------------------------------------------------
@pytest.mark.parametrize("op_type", ["MaxPool", "AvgPool"])
def test_pool3d_ncdhw_by_format(op_type):
    x = rand(2, 5, 4, 6, 3)
    pool = tf.nn.max_pool3d if op_type == "MaxPool" else tf.nn.avg_pool3d
    ref = pool(x, [2, 3, 2], [2, 1, 2], "SAME").numpy()
    (got,), _ = run(op_type, [(first(x), "NCDHW", True)],
                    {"ksize": [1, 1, 2, 3, 2], "strides": [1, 1, 2, 1, 2], "padding": "SAME"})
    np.testing.assert_allclose(got, first(ref), atol=1e-5, rtol=1e-5)


def test_bias_add_ncdhw_by_format():
    x, b = rand(2, 3, 4, 2, 5), rand(5)
    (got,), _ = run("BiasAdd", [(first(x), "NCDHW", True), (b, "ND", False)])
    np.testing.assert_allclose(got, first(tf.nn.bias_add(x, b).numpy()), atol=1e-6)


@pytest.mark.parametrize("training", [False, True])
def test_batch_norm_nchw_by_format(training):
    x = rand(2, 4, 5, 3)
    scale, offset, mean, var = rand(3), rand(3), rand(3), rand(3) ** 2 + 0.1
    if training:
        mean, var = np.zeros(0, np.float32), np.zeros(0, np.float32)
    ref = tf.raw_ops.FusedBatchNormV3(x=x, scale=scale, offset=offset, mean=mean, variance=var,
                                      epsilon=1e-3, is_training=training)
    outs, _ = run("FusedBatchNormV3", [(first(x), "NCHW", True)] + [(v, "ND", False) for v in
                                                                   (scale, offset, mean, var)],
                  {"epsilon": 1e-3, "is_training": training}, num_outputs=6)
    np.testing.assert_allclose(outs[0], first(ref[0].numpy()), atol=1e-4, rtol=1e-4)
    np.testing.assert_allclose(outs[1], ref[1].numpy(), atol=1e-4, rtol=1e-4)


def test_lrn_nchw_by_format():
    x = rand(2, 3, 4, 7)
    ref = tf.nn.local_response_normalization(x, 2, 1.5, 0.1, 0.75).numpy()
    (got,), _ = run("LRN", [(first(x), "NCHW", True)],
                    {"depth_radius": 2, "bias": 1.5, "alpha": 0.1, "beta": 0.75})
    np.testing.assert_allclose(got, first(ref), atol=1e-4, rtol=1e-4)


# -- resizing --------------------------------------------------------------------------------------
@pytest.mark.parametrize("op_type, dtype, shape", [
    ("ResizeBilinear", np.float32, (2, 4, 5, 3)),
    ("ResizeBicubic", np.float32, (2, 6, 5, 3)),
    ("ResizeBicubic", np.float32, (1, 6, 5, 1)),          # the single-plane path
    ("ResizeNearestNeighbor", np.float32, (2, 4, 5, 3)),
    ("ResizeNearestNeighbor", np.int64, (2, 4, 5, 3)),     # the gather path
])
def test_resize_nchw_by_format(op_type, dtype, shape):
    x = rand(*shape) if dtype == np.float32 else (rand(*shape) * 10).astype(dtype)
    size = np.array([3, 7], np.int32)
    ref = getattr(tf.raw_ops, op_type)(images=x, size=size, half_pixel_centers=True).numpy()
    (got,), node = run(op_type, [(first(x), "NCHW", True), (size, "ND", False)],
                       {"half_pixel_centers": True})
    assert node.outputs[0].desc.format == "NCHW"
    np.testing.assert_allclose(got, first(ref), atol=2e-3, rtol=2e-3)
