"""Conformance of the basic neural-network ops (bias, softmax and activations) against
TensorFlow."""

import pytest

from tests.conformance.harness import check_op, rand

tf = pytest.importorskip("tensorflow")

TESTED_DTYPES = {
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
