"""Conformance of the basic neural-network ops (convolution, pooling, bias, softmax and
activations) against TensorFlow."""

import pytest

from tests.conformance.harness import check_op, rand

tf = pytest.importorskip("tensorflow")

TESTED_DTYPES = {
    "Conv2D": ("float16", "float32", "float64"),
    "DepthwiseConv2dNative": ("float32", "float64"),
    "MaxPool": ("float16", "float32", "float64"),
    "AvgPool": ("float32", "float64"),
    "BiasAdd": ("float32", "float64", "int32", "int64"),
    "Relu": ("float16", "float32", "float64", "int32", "int64"),
    "Relu6": ("float32", "float64", "int32"),
    "Elu": ("float16", "float32", "float64"),
    "Selu": ("float32", "float64"),
    "LeakyRelu": ("float32", "float64"),
    "Softplus": ("float32", "float64"),
    "Softsign": ("float32", "float64"),
    "Sigmoid": ("float16", "float32", "float64"),
    "Tanh": ("float16", "float32", "float64"),
    "Softmax": ("float16", "float32", "float64"),
    "LogSoftmax": ("float32", "float64"),
}

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


# -- pooling ------------------------------------------------------------------------------------
POOL_CASES = {
    "same_2x2_s2": ((2, 7, 7, 3), (2, 2), (2, 2), "SAME"),
    "same_3x3_s1": ((1, 5, 6, 2), (3, 3), (1, 1), "SAME"),
    "same_3x2_s2x1": ((1, 6, 5, 2), (3, 2), (2, 1), "SAME"),
    "valid_3x3_s2": ((1, 8, 9, 2), (3, 3), (2, 2), "VALID"),
    "valid_2x3_s1x3": ((2, 5, 9, 1), (2, 3), (1, 3), "VALID"),
}


@pytest.mark.parametrize("op", ["MaxPool", "AvgPool"])
@pytest.mark.parametrize("case", sorted(POOL_CASES))
def test_pool(op, case):
    shape, ksize, strides, padding = POOL_CASES[case]
    pool = tf.nn.max_pool2d if op == "MaxPool" else tf.nn.avg_pool2d
    check_op(lambda x: pool(x, ksize, strides, padding), [rand(*shape)])


@pytest.mark.parametrize("op,dtype", [("MaxPool", "float16"), ("MaxPool", "float64"),
                                      ("AvgPool", "float64")])
def test_pool_dtypes(op, dtype):
    pool = tf.nn.max_pool2d if op == "MaxPool" else tf.nn.avg_pool2d
    check_op(lambda x: pool(x, 3, 2, "SAME"), [rand(1, 7, 7, 2, dtype=dtype)],
             atol=1e-6 if dtype == "float64" else None, rtol=1e-6 if dtype == "float64" else None)


@pytest.mark.parametrize("op", ["MaxPool", "AvgPool"])
def test_pool_symbolic_dims(op):
    pool = tf.nn.max_pool2d if op == "MaxPool" else tf.nn.avg_pool2d
    check_op(lambda x: pool(x, 3, 2, "SAME"), [rand(1, 7, 6, 2)], specs=[_spec((None, None, None, 2))],
             extra_inputs=[[rand(2, 4, 9, 2)]])


# -- BiasAdd ------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_bias_add(dtype):
    check_op(tf.nn.bias_add, [rand(2, 3, 4, 5, dtype=dtype), rand(5, dtype=dtype)])


def test_bias_add_ranks_and_v1():
    check_op(tf.nn.bias_add, [rand(3, 4), rand(4)])
    check_op(tf.nn.bias_add, [rand(2, 3, 4), rand(4)], specs=[_spec((None, None, 4)), _spec((4,), name="x1")],
             extra_inputs=[[rand(1, 5, 4), rand(4)]])
    check_op(lambda x, b: tf.raw_ops.BiasAddV1(value=x, bias=b), [rand(2, 3), rand(3)])


# -- activations --------------------------------------------------------------------------------
ACTIVATIONS = {
    "Relu": tf.nn.relu, "Relu6": tf.nn.relu6, "Elu": tf.nn.elu, "Selu": tf.nn.selu,
    "Softplus": tf.nn.softplus, "Softsign": tf.nn.softsign, "Sigmoid": tf.math.sigmoid,
    "Tanh": tf.math.tanh, "LeakyRelu": tf.nn.leaky_relu,
}


@pytest.mark.parametrize("op", sorted(ACTIVATIONS))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_activation(op, dtype):
    x = rand(3, 4, 5, dtype=dtype, low=-8, high=8)
    x.flat[:4] = [0, -0.5, 6, 7.5]  # the kinks of Relu/Relu6
    check_op(ACTIVATIONS[op], [x])


@pytest.mark.parametrize("op", ["Relu", "Elu", "Sigmoid", "Tanh"])
def test_activation_float16(op):
    check_op(ACTIVATIONS[op], [rand(4, 5, dtype="float16", low=-4, high=4)])


@pytest.mark.parametrize("op,dtype", [("Relu", "int32"), ("Relu", "int64"), ("Relu6", "int32")])
def test_activation_integers(op, dtype):
    check_op(ACTIVATIONS[op], [rand(3, 5, dtype=dtype, low=-5, high=7)])


@pytest.mark.parametrize("alpha", [0.01, 0.2, 1.5])
def test_leaky_relu_alpha(alpha):
    check_op(lambda x: tf.nn.leaky_relu(x, alpha=alpha), [rand(3, 4)])


def test_activation_symbolic_dims():
    check_op(tf.nn.selu, [rand(2, 3)], specs=[_spec((None, None))], extra_inputs=[[rand(4, 1)]])


# -- Softmax / LogSoftmax ----------------------------------------------------------------------------
@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("shape", [(3, 5), (2, 3, 4, 5)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_softmax(op, shape, dtype):
    fn = tf.nn.softmax if op == "Softmax" else tf.nn.log_softmax
    check_op(fn, [rand(*shape, dtype=dtype, low=-5, high=5)])


def test_softmax_float16_and_symbolic_dims():
    check_op(tf.nn.softmax, [rand(3, 6, dtype="float16")])
    check_op(tf.nn.log_softmax, [rand(2, 5)], specs=[_spec((None, None))], extra_inputs=[[rand(4, 3)]])
