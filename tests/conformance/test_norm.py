"""Conformance of the normalizations (fused batch normalization, LRN) against TensorFlow."""

import numpy as np
import pytest

from tests.conformance.harness import check_op, rand

tf = pytest.importorskip("tensorflow")

TESTED_DTYPES = {
    "FusedBatchNorm": ("float32",),
    "FusedBatchNormV2": ("float32",),
    "FusedBatchNormV3": ("float16", "float32"),
    "LRN": ("float32",),
}

TOL = {"atol": 1e-4, "rtol": 1e-4}


def _spec(shape, dtype=tf.float32, name="x0"):
    return tf.TensorSpec(shape, dtype, name=name)


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
