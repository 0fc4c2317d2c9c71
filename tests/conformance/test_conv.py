"""Conformance of the convolutions (Conv2D, depthwise, Conv3D and the transposed 2-D and 3-D
convolutions) against TensorFlow."""

import numpy as np
import pytest

from tests.conformance.harness import check_op, convert_function, rand

tf = pytest.importorskip("tensorflow")

TESTED_DTYPES = {
    "Conv2D": ("float16", "float32", "float64"),
    "DepthwiseConv2dNative": ("float32", "float64"),
    "Conv2DBackpropInput": ("float32", "float64"),
    "Conv3D": ("float32",),
    "Conv3DBackpropInputV2": ("float32",),
}

TOL = {"atol": 1e-4, "rtol": 1e-4}

_TF_DTYPE = {"float16": tf.float16, "float32": tf.float32, "float64": tf.float64,
             "int32": tf.int32, "int64": tf.int64}


def _spec(shape, dtype="float32", name="x0"):
    return tf.TensorSpec(shape, _TF_DTYPE[dtype], name=name)


# -- Conv2D -----------------------------------------------------------------------------------
CONV_CASES = {
    # name: (input shape, filter shape, strides, padding, dilations)
    "same": ((2, 7, 7, 3), (3, 3, 3, 4), (1, 1), "SAME", (1, 1)),
    "same_stride2": ((1, 8, 7, 3), (3, 2, 3, 5), (2, 2), "SAME", (1, 1)),
    "valid_strides": ((1, 9, 8, 2), (3, 3, 2, 4), (2, 3), "VALID", (1, 1)),
    "explicit": ((1, 6, 5, 2), (3, 3, 2, 3), (1, 2), [[0, 0], [1, 2], [0, 1], [0, 0]], (1, 1)),
    "same_dilated": ((1, 9, 8, 2), (3, 3, 2, 3), (1, 1), "SAME", (2, 3)),
    "valid_dilated": ((1, 9, 9, 2), (2, 3, 2, 3), (1, 1), "VALID", (2, 2)),
    "pointwise": ((2, 4, 4, 6), (1, 1, 6, 3), (1, 1), "VALID", (1, 1)),
}


@pytest.mark.parametrize("case", sorted(CONV_CASES))
def test_conv2d(case):
    shape, fshape, strides, padding, dilations = CONV_CASES[case]
    w = rand(*fshape)
    check_op(lambda x: tf.nn.conv2d(x, w, strides=strides, padding=padding, dilations=dilations),
             [rand(*shape)], atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("dtype", ["float16", "float64"])
def test_conv2d_dtypes(dtype):
    w = rand(3, 3, 2, 4, dtype=dtype)
    tol = {"float16": 2e-2, "float64": 1e-5}[dtype]
    check_op(lambda x: tf.nn.conv2d(x, w, strides=2, padding="SAME"), [rand(1, 6, 6, 2, dtype=dtype)],
             atol=tol, rtol=tol)


def test_conv2d_filter_as_input_and_symbolic_dims():
    specs = [_spec((None, None, None, 3)), _spec((3, 3, 3, 4), name="x1")]
    fn = lambda x, w: tf.nn.conv2d(x, w, strides=2, padding="SAME")  # noqa: E731
    w = rand(3, 3, 3, 4)
    check_op(fn, [rand(1, 8, 8, 3), w], specs=specs, atol=1e-4, rtol=1e-4,
             extra_inputs=[[rand(3, 5, 7, 3), w]])


def test_conv2d_same_dilated_symbolic_spatial_dims():
    """With stride 1, TF's SAME pads do not depend on the spatial size."""
    w = rand(3, 2, 2, 3)
    fn = lambda x: tf.nn.conv2d(x, w, 1, "SAME", dilations=(2, 3))  # noqa: E731
    check_op(fn, [rand(1, 7, 8, 2)], specs=[_spec((None, None, None, 2))], atol=1e-4, rtol=1e-4,
             extra_inputs=[[rand(2, 5, 4, 2)]])


def test_conv2d_symbolic_batch_explicit_padding():
    w = rand(2, 2, 3, 2)
    fn = lambda x: tf.nn.conv2d(x, w, 1, [[0, 0], [2, 0], [1, 1], [0, 0]])  # noqa: E731
    check_op(fn, [rand(1, 5, 5, 3)], specs=[_spec((None, 5, 5, 3))], atol=1e-4, rtol=1e-4,
             extra_inputs=[[rand(4, 5, 5, 3)]])


# -- DepthwiseConv2dNative --------------------------------------------------------------------
DEPTHWISE_CASES = {
    "same_m2": ((2, 6, 6, 3), (3, 3, 3, 2), (1, 1, 1, 1), "SAME", (1, 1, 1, 1)),
    "valid_stride2_m1": ((1, 9, 8, 4), (3, 3, 4, 1), (1, 2, 2, 1), "VALID", (1, 1, 1, 1)),
    "same_stride2_m3": ((1, 7, 8, 2), (2, 3, 2, 3), (1, 2, 2, 1), "SAME", (1, 1, 1, 1)),
    "explicit": ((1, 5, 6, 2), (3, 3, 2, 2), (1, 1, 1, 1), "EXPLICIT", (1, 1, 1, 1)),
}


@pytest.mark.parametrize("case", sorted(DEPTHWISE_CASES))
def test_depthwise_conv2d(case):
    shape, fshape, strides, padding, dilations = DEPTHWISE_CASES[case]
    w = rand(*fshape)
    explicit = [0, 0, 1, 2, 2, 0, 0, 0] if padding == "EXPLICIT" else []
    fn = lambda x: tf.raw_ops.DepthwiseConv2dNative(  # noqa: E731
        input=x, filter=w, strides=strides, padding=padding, explicit_paddings=explicit,
        dilations=dilations)
    check_op(fn, [rand(*shape)], atol=1e-4, rtol=1e-4)


def test_depthwise_conv2d_float64_symbolic_batch():
    w = rand(3, 3, 2, 2, dtype="float64")
    fn = lambda x: tf.nn.depthwise_conv2d(x, w, [1, 2, 2, 1], "SAME")  # noqa: E731
    check_op(fn, [rand(1, 6, 6, 2, dtype="float64")], specs=[_spec((None, 6, 6, 2), "float64")],
             atol=1e-5, rtol=1e-5, extra_inputs=[[rand(3, 6, 6, 2, dtype="float64")]])


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


# -- transposed convolutions with a run-time output shape --------------------------------------
RUNTIME_TRANSPOSE_CASES = {
    # name: (input shape, filter shape (h, w, out, in), strides, padding, output shapes to feed)
    "same_s2": ((1, 4, 4, 3), (3, 3, 2, 3), (2, 2), "SAME", [(1, 8, 8, 2), (1, 7, 8, 2), (1, 7, 7, 2)]),
    "same_s1": ((2, 5, 4, 2), (2, 3, 3, 2), (1, 1), "SAME", [(2, 5, 4, 3)]),
    "same_s3_2": ((1, 3, 2, 2), (4, 2, 1, 2), (3, 2), "SAME", [(1, 9, 4, 1), (1, 7, 3, 1)]),
    "valid_s2": ((1, 3, 3, 2), (3, 3, 4, 2), (2, 2), "VALID", [(1, 7, 7, 4), (1, 8, 8, 4)]),
    "valid_s3_extra": ((1, 3, 2, 2), (2, 2, 1, 2), (3, 3), "VALID", [(1, 8, 7, 1), (1, 10, 6, 1)]),
    "explicit": ((1, 4, 4, 2), (3, 3, 2, 2), (2, 2), [[0, 0], [1, 1], [2, 0], [0, 0]],
                 [(1, 8, 7, 2), (1, 7, 8, 2)]),
}


@pytest.mark.parametrize("case", sorted(RUNTIME_TRANSPOSE_CASES))
def test_conv2d_transpose_runtime_output_shape(case):
    """input_sizes fed at run time: one model, several output sizes the input fits."""
    shape, fshape, strides, padding, out_shapes = RUNTIME_TRANSPOSE_CASES[case]
    w, x = rand(*fshape), rand(*shape)
    fn = lambda v, sizes: tf.nn.conv2d_transpose(v, w, sizes, strides, padding)  # noqa: E731
    runs = [[x, np.array(out, np.int32)] for out in out_shapes]
    check_op(fn, runs[0], specs=[_spec(shape), _spec((4,), "int32", "x1")], extra_inputs=runs[1:],
             **TOL)


def test_conv2d_transpose_runtime_output_shape_symbolic_float64():
    """Symbolic input dims, float64 data (computed in float32)."""
    w = rand(3, 2, 2, 3, dtype="float64")
    fn = lambda v, sizes: tf.nn.conv2d_transpose(v, w, sizes, (2, 3), "SAME")  # noqa: E731
    check_op(fn, [rand(1, 4, 3, 3, dtype="float64"), np.array([1, 8, 9, 2], np.int32)],
             specs=[_spec((None, None, None, 3), "float64"), _spec((4,), "int32", "x1")],
             extra_inputs=[[rand(2, 3, 2, 3, dtype="float64"), np.array([2, 5, 4, 2], np.int32)]],
             atol=1e-4, rtol=1e-4)


def test_conv_transpose_runtime_output_shape_symbolic_spatial_constant_sizes():
    """A constant output shape over an input of unknown spatial dims (Keras: the shape comes
    from the layer's config, the data from a symbolic input)."""
    w = rand(3, 3, 2, 3)
    fn = lambda v: tf.nn.conv_transpose(v, w, (1, 8, 8, 2), 2, "SAME")  # noqa: E731
    check_op(fn, [rand(1, 4, 4, 3)], specs=[_spec((1, None, None, 3))], **TOL)


@pytest.mark.parametrize("padding,out_shapes", [("SAME", [(1, 7, 8, 6, 2), (1, 8, 7, 4, 2)]),
                                                ("VALID", [(1, 9, 9, 7, 2), (1, 10, 10, 5, 2)])])
def test_conv3d_transpose_runtime_output_shape(padding, out_shapes):
    """Conv3DBackpropInputV2 with an int64 output shape fed at run time."""
    w = rand(3, 3, 2, 2, 3)
    fn = lambda x, sizes: tf.nn.conv3d_transpose(x, w, sizes, (1, 2, 2, 3, 1), padding)  # noqa: E731
    runs = [[rand(1, 4, 4, 2, 3), np.array(out, np.int64)] for out in out_shapes]
    check_op(fn, runs[0], specs=[_spec((1, 4, 4, 2, 3)), _spec((5,), "int64", "x1")],
             extra_inputs=runs[1:], **TOL)


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
